"""Is a file of a run really inside the run? (symlinks pointing out of it)

A run directory is written by the trainer, which may be buggy or hostile: a
`train_config.yaml -> /etc/passwd` or `weights/best.pt -> ~/.ssh/id_ed25519` symlink would
make a push upload a file that is not the run's. Anything pushed must resolve (every
symlink followed, `os.path.realpath`) to a path inside the run directory's own resolved
path; a symlink that stays inside the run (best.pt -> epoch_37.pt) is fine.

`outside_run` checks a path before it is opened; `fd_outside_run` checks what a descriptor
really opened (through /proc/self/fd, where there is one), so a symlink swapped in between
the check and the open is caught too.
"""

from __future__ import annotations

import os


def _inside(real: str, run_real: str) -> bool:
    return real == run_real or real.startswith(run_real.rstrip(os.sep) + os.sep)


def outside_run(run_dir: str, path: str) -> str | None:
    """None when `path` resolves to a place inside `run_dir`; else where it resolves to."""
    run_real = os.path.realpath(run_dir)
    real = os.path.realpath(path)
    return None if _inside(real, run_real) else real


def fd_outside_run(run_dir: str, fd: int) -> str | None:
    """None when the file open as `fd` lies inside `run_dir` (or when the system cannot
    tell: no /proc); else the path it really is."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    if not real.startswith(os.sep):  # "pipe:[123]", "anon_inode:...": not a path
        return real
    if real.endswith(" (deleted)") and not os.path.exists(real):
        real = real[: -len(" (deleted)")]
    return None if _inside(real, os.path.realpath(run_dir)) else real
