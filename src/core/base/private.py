"""Private folders for what rgpu-tui writes (`.rgpu/`, its `staging/` and `console/`).

`os.makedirs(path, mode=0o700)` does not make a private folder: the mode is masked by the
umask, applies to the last component only (the parents get 0777 & ~umask, i.e. 0755), and
leaves an existing folder as it is. `private_dir` creates each missing component from
`top` down to `path` with mkdir(0700) and then chmods it to exactly 0700, so what it
creates is 0700 whatever the umask; folders that already exist are left alone (they may be
the user's), except that a symlink where one of them should be is refused (a run directory
is untrusted: `.rgpu -> elsewhere` would make pushes write elsewhere). Files are created by
their writers with an explicit mode (0600).
"""

from __future__ import annotations

import errno
import os

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: str, top: str) -> str:
    """Make `path` (at or below `top`, which must exist or is made the ordinary way) with
    every folder created on the way 0700. Returns `path`; raises OSError."""
    path, top = os.path.abspath(path), os.path.abspath(top)
    rel = os.path.relpath(path, top)
    if rel == os.curdir:
        parts: list[str] = []
    elif rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise ValueError(f"{path} is not below {top}")
    else:
        parts = rel.split(os.sep)
    os.makedirs(top, exist_ok=True)
    current = top
    for part in parts:
        current = os.path.join(current, part)
        try:
            os.mkdir(current, PRIVATE_DIR_MODE)
        except FileExistsError:
            if os.path.islink(current):  # planted in a run: never write through it
                raise OSError(errno.ELOOP, "is a symlink, not a folder", current) from None
            continue
        os.chmod(current, PRIVATE_DIR_MODE)  # the umask may have taken bits off
    return path


def private_parent(path: str) -> str:
    """The folder of the file `path`, every missing component made 0700 (from the nearest
    one that exists: ~/.local/state too, as the XDG spec asks); folders that exist are left
    as they are. Returns the folder; raises OSError."""
    folder = os.path.dirname(os.path.abspath(path))
    top = folder
    while not os.path.lexists(top) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    return private_dir(folder, top)
