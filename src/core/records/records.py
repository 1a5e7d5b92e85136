"""Append-only JSON-lines records (pushes.jsonl, launches.jsonl).

A record is one complete line. It is written with O_APPEND, in a loop until
every byte is down; if the file's last byte is not a newline (an earlier writer
died or the disk filled mid-line), the new record starts on a fresh line so it
cannot be glued to the torn one; if the write fails (ENOSPC), what this call
wrote is cut off again and the error is raised. Readers skip torn lines, lines that
are not JSON objects and lines nested too deep, and never block: a FIFO or a device
where a record file should be reads as no records.
"""

from __future__ import annotations

import json
import os
import stat

from ..base.private import PRIVATE_FILE_MODE, private_dir
from ..base.safeio import NotRegularFile, open_regular
from ..base.values import parse_json

# a symlink or FIFO planted where a record goes is never followed or waited on
_NOFOLLOW_NONBLOCK = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def append_json_line(path: str, obj: dict, mode: int = PRIVATE_FILE_MODE) -> None:
    """Append obj as one line; a file this call creates gets `mode` (0600) exactly, and its
    folder, when this call creates it, 0700 (core.base.private)."""
    folder = os.path.dirname(os.path.abspath(path))
    private_dir(folder, os.path.dirname(folder))
    line = (json.dumps(obj, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
    flags = os.O_RDWR | os.O_APPEND | _NOFOLLOW_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
        os.fchmod(fd, mode)  # the umask may have taken bits off
    except FileExistsError:  # (a symlink planted there is refused: ELOOP)
        fd = os.open(path, flags | os.O_CREAT, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path)
        size = st.st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        try:
            view = memoryview(line)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(f"short write to {path}")
                view = view[written:]
        except OSError:
            try:
                os.ftruncate(fd, size)  # leave the file as it was
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


def read_json_lines(path: str, max_bytes: int | None = None) -> list[dict]:
    """Every complete JSON-object line, oldest first; torn or malformed lines skipped.
    With max_bytes, only the newest max_bytes of the file are read."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            if max_bytes is not None:
                size = os.fstat(handle.fileno()).st_size
                if size > max_bytes:
                    handle.seek(size - max_bytes)
                    handle.readline()  # a partial first line
            data = handle.read()
    except OSError:
        return []
    out = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = parse_json(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
