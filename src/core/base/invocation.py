"""The command a hint names: this program the way the shell can find it.

The README runs `.venv/bin/rgpu-tui` and never puts it on PATH; a hint that says
`rgpu-tui stop RUN` there names a command the shell cannot find. `command()` is the one
function every hint that names a command of ours uses: `rgpu-tui` when that name, looked up
on PATH, is this very program; else this program's absolute path. A process not started
as the console script (`python -m`, a test runner) says `rgpu-tui`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from functools import cache

NAME = "rgpu-tui"


def command_for(argv0: str, path: str | None) -> str:
    """`command()` for a process started as `argv0` with `path` as its PATH."""
    if os.path.basename(argv0) != NAME:
        return NAME
    program = os.path.abspath(argv0)
    found = shutil.which(NAME, path=path if path is not None else os.defpath)
    if found is not None:
        try:
            if os.path.samefile(found, program):
                return NAME
        except OSError:
            pass
    return shlex.quote(program)


@cache
def command() -> str:
    """This program as a hint names it (looked up once: PATH is the process's own)."""
    return command_for(sys.argv[0] if sys.argv else "", os.environ.get("PATH"))
