"""`$VAR` and `${VAR}` in a command's arguments, filled in from the environment.

autostop_command is written once in the config and run much later (`["runpodctl", "stop",
"pod", "$RUNPOD_POD_ID"]`): each argument has its references replaced when it runs, in one
pass (a value holding `$X` is not expanded again), with no shell. A name is
`[A-Za-z_][A-Za-z0-9_]*`; `$$` is one `$`; a `$` followed by anything else (`$5`, a `$` at
the end) stays as it is. A variable that is not set (or is empty) is an error that names
it, never an empty argument: `stop instance ""` must not run. A `${` without its `}`, or
`${}` with no name in it, is refused when the settings are read (`check_template`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_REF = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\{))")


class UnsetVariable(ValueError):
    """A referenced variable is not set; str() names it (one line)."""


def check_template(argv: Sequence[str]) -> str | None:
    """Why `argv` holds a malformed reference (`${` with no name and `}`); None when fine."""
    for arg in argv:
        for m in _REF.finditer(arg):
            if m.group(3):
                return (
                    "has a '${' without a variable name and '}' in "
                    f"{arg!r} (write $$ for a literal $)"
                )
    return None


def variables(argv: Sequence[str]) -> list[str]:
    """The names referenced, in order, each once."""
    out: list[str] = []
    for arg in argv:
        for m in _REF.finditer(arg):
            name = m.group(1) or m.group(2)
            if name and name not in out:
                out.append(name)
    return out


def expand(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """Each argument with its references filled in; UnsetVariable names the variables that
    are not set (or empty)."""
    missing = [name for name in variables(argv) if not environ.get(name)]
    if missing:
        names = ", ".join(f"${name}" for name in missing)
        raise UnsetVariable(f"{names} {'is' if len(missing) == 1 else 'are'} not set")

    def one(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name:
            return environ[name]
        return "$" if m.group(0) == "$$" else m.group(0)

    return [_REF.sub(one, arg) for arg in argv]
