"""Opening files from a run directory (untrusted input) without ever blocking.

A run directory may hold a FIFO, a socket or a device where a regular file is expected:
a plain ``open()`` of a FIFO waits for a writer forever, and a read of /dev/zero never
ends. Every reader of a run file opens it through `open_regular`: the path is stat()ed
first and only a regular file is opened (so a device is never opened at all), the open is
non-blocking and never makes a terminal the controlling one, and the descriptor is checked
again with fstat() (the path may have been swapped in between).

A non-regular file raises `NotRegularFile`, an OSError whose text is "not a regular file";
a directory raises IsADirectoryError as open() would.
"""

from __future__ import annotations

import errno
import os
import stat

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class NotRegularFile(OSError):
    """The path is a FIFO, a socket or a device, not a regular file."""

    def __init__(self, path: str, kind: str = "not a regular file"):
        super().__init__(errno.EINVAL, kind, path)


def _check(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path)


def open_regular(path: str, *, follow_symlinks: bool = True) -> int:
    """A read-only descriptor of the regular file at `path`; the caller closes it.

    Raises OSError (FileNotFoundError, PermissionError, IsADirectoryError, NotRegularFile).
    With follow_symlinks=False a symlink at `path` itself is refused (NotRegularFile)."""
    st = os.stat(path, follow_symlinks=follow_symlinks)
    _check(path, st.st_mode)
    flags = _FLAGS if follow_symlinks else _FLAGS | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        _check(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes from the descriptor's current position (one more than
    `limit` tells the caller the file is larger)."""
    parts = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_regular(path: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the regular file at `path` (one more than `limit`
    tells the caller the file is larger). Raises OSError as `open_regular`."""
    fd = open_regular(path)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)
