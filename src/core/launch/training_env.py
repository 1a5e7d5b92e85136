"""The training environment: the Python that runs `libreyolo`.

rgpu-tui is best installed apart from training (pipx, `uv tool`): then its own Python has
neither torch nor libreyolo, and a check run with it says "torch is not installed" on a
machine that trains fine. What runs torch for a check (the GPU probe) runs instead with the
Python of the `libreyolo` that a launch would start (core.launch.launch_spec.libreyolo_executable:
the one beside this Python, else the one on PATH):

- beside this Python (a venv holding both, the quick start's): this Python, as before;
- else the interpreter its `#!` line names (`#!/venv/bin/python`, `#!/usr/bin/env python3`,
  or pip's `#!/bin/sh` + `'''exec' "/long path/python" "$0" "$@"` form for long paths);
- else a `python3` or `python` beside it (its real directory first: pipx and uv put a
  symlink on PATH), else this Python.

`libreyolo doctor` needs none of this: it runs the executable itself, whose `#!` line picks
the same Python.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys

from ..base.safeio import read_regular
from .launch_spec import libreyolo_executable

HEAD_BYTES = 4096  # a script's first two lines
PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*$")
# pip/distlib's launcher for an interpreter path too long (or with spaces) for `#!`
SH_EXEC = re.compile(r"""^'''exec' (?P<python>"[^"]+"|\S+) "\$0" "\$@"$""", re.M)


def training_python(executable: str | None = None) -> str:
    """The Python that runs `executable` (default: the `libreyolo` a launch would start);
    this Python when there is none or it cannot be told."""
    exe = executable or libreyolo_executable()
    if exe is None:
        return sys.executable
    if os.path.dirname(os.path.abspath(exe)) == os.path.dirname(sys.executable):
        return sys.executable
    return shebang_python(exe) or python_beside(exe) or sys.executable


def shebang_python(script: str) -> str | None:
    """The Python interpreter `script`'s first line(s) name, if it is one that exists."""
    try:
        head = read_regular(script, HEAD_BYTES)[:HEAD_BYTES]
    except (OSError, ValueError):
        return None
    if not head.startswith(b"#!"):
        return None  # a binary launcher, or not a script
    text = head.decode("utf-8", errors="replace")
    first = text.splitlines()[0][2:]
    try:
        words = shlex.split(first)
    except ValueError:
        words = first.split()
    if not words:
        return None
    interpreter, args = words[0], words[1:]
    name = os.path.basename(interpreter)
    if name == "env":  # #!/usr/bin/env [-S] [VAR=value ...] python3
        rest = [a for a in args if not a.startswith("-") and "=" not in a]
        found = shutil.which(rest[0]) if rest else None
        return found if found and _is_python(found) else None
    if name in ("sh", "bash", "dash"):
        match = SH_EXEC.search(text)
        if match is None:
            return None
        candidate = match.group("python").strip('"')
        return candidate if _is_python(candidate) else None
    return interpreter if _is_python(interpreter) else None


def python_beside(executable: str) -> str | None:
    """A `python3` or `python` in the directory of `executable` (its real one first)."""
    here = os.path.dirname(os.path.abspath(executable))
    real = os.path.dirname(os.path.realpath(executable))
    for directory in dict.fromkeys((real, here)):
        for name in ("python3", "python"):
            candidate = os.path.join(directory, name)
            if _is_python(candidate):
                return candidate
    return None


def _is_python(path: str) -> bool:
    return (
        os.path.isabs(path)
        and PYTHON_NAME.match(os.path.basename(path)) is not None
        and os.path.isfile(path)
        and os.access(path, os.X_OK)
    )
