"""Incremental file reading: only the bytes appended since the last call.

`IncrementalFile` keeps (inode, offset) for one path. Each `read_new()` stats the
file, reads what was appended (in 64 KiB chunks), and notices when the file was
truncated or replaced (new inode, or smaller than the offset): then it starts
again from the beginning and says so with `reset=True`. Missing and unreadable
files are reported in `problem`, never raised; a FIFO, socket or device in the file's
place is refused without blocking ("is not a regular file").

`LineSplitter` turns those chunks into complete lines, keeping an unfinished
last line until its newline arrives. A line longer than `max_line` is cut there
and the rest of it is dropped as it arrives, so memory stays bounded whatever
the file holds.

`LogTail` is the reusable tail of a text log (train.log today, a process's
console log later): the first read takes at most the last 256 KiB, carriage
return progress lines keep the text after the last ``\\r``, undecodable bytes
are replaced and Hugging Face tokens are redacted.
"""

from __future__ import annotations

import errno
import os
import re
from collections import deque
from dataclasses import dataclass

from ..base.safeio import NotRegularFile, open_regular

CHUNK = 64 * 1024
HEAD_BYTES = 64


def describe_os_error(exc: OSError) -> str:
    """One short phrase for why a file could not be read."""
    if isinstance(exc, NotRegularFile):  # a FIFO, a socket or a device
        return "is not a regular file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "unreadable: permission denied"
    if exc.errno == errno.ENOENT:
        return "missing"
    if exc.errno == errno.EISDIR:
        return "unreadable: is a directory"
    return f"unreadable: {exc.strerror or exc}"


@dataclass
class ReadResult:
    data: bytes = b""
    reset: bool = False  # the file was truncated/replaced: data starts at byte 0
    problem: str | None = None  # "missing", "unreadable: ..."; None when fine
    skipped_head: bool = False  # data starts mid-file (more than `behind_max` was new)
    skipped_bytes: int = 0


class IncrementalFile:
    """Reads only the bytes appended to `path` since the previous call."""

    def __init__(self, path: str, first_read_max: int | None = None, burst_max: int | None = None):
        """A tail passes `first_read_max` (the first read starts that far from the end) and
        `burst_max` (when more than that was appended, jump to the last `first_read_max`
        bytes). A history passes neither and reads every byte."""
        self.path = path
        self.first_read_max = first_read_max
        self.burst_max = burst_max
        self._ino: tuple[int, int] | None = None
        self._offset = 0
        # the file's first bytes: a file truncated or recreated (a new file can get the
        # freed inode back) and grown past the old offset between two reads still differs
        self._head = b""
        self.bytes_read = 0  # total, for tests and benchmarks

    @property
    def offset(self) -> int:
        return self._offset

    def read_new(self, limit: int | None = None) -> ReadResult:
        """New bytes since the last call (at most `limit` bytes when given)."""
        try:
            fd = open_regular(self.path)  # never blocks: a FIFO or a device is refused
        except OSError as exc:
            return ReadResult(problem=describe_os_error(exc))
        try:
            st = os.fstat(fd)
            ident = (st.st_dev, st.st_ino)
            reset = False
            skipped = False
            rewritten = bool(self._head) and os.pread(fd, len(self._head), 0) != self._head
            if ident != self._ino or st.st_size < self._offset or rewritten:
                reset = self._ino is not None
                self._ino = ident
                self._offset = 0
                self._head = b""
                limit_behind = self.first_read_max
            else:
                limit_behind = self.burst_max
            skipped_bytes = 0
            if limit_behind is not None and st.st_size - self._offset > limit_behind:
                # a big file read the first time, or a burst too large to read: keep the end
                keep = self.first_read_max or limit_behind
                skipped_bytes = st.st_size - keep - self._offset
                self._offset = st.st_size - keep
                skipped = True
            if len(self._head) < HEAD_BYTES and st.st_size > len(self._head):
                self._head = os.pread(fd, HEAD_BYTES, 0)
            want = st.st_size - self._offset
            if limit is not None:
                want = min(want, limit)
            if want <= 0:
                return ReadResult(reset=reset, skipped_head=skipped, skipped_bytes=skipped_bytes)
            parts = []
            pos = self._offset
            remaining = want
            while remaining > 0:
                chunk = os.pread(fd, min(CHUNK, remaining), pos)
                if not chunk:
                    break
                parts.append(chunk)
                pos += len(chunk)
                remaining -= len(chunk)
            data = b"".join(parts)
            self._offset = pos
            self.bytes_read += len(data)
            return ReadResult(
                data=data, reset=reset, skipped_head=skipped, skipped_bytes=skipped_bytes
            )
        except OSError as exc:
            return ReadResult(problem=describe_os_error(exc))
        finally:
            os.close(fd)


class LineSplitter:
    """Feeds bytes in, gets complete lines (bytes, without the newline) out."""

    def __init__(self, max_line: int):
        self.max_line = max_line
        self._pending = bytearray()
        self._overflow = False  # the pending line was cut; drop bytes until "\n"
        self.cut_lines = 0

    def reset(self) -> None:
        self._pending.clear()
        self._overflow = False

    def discard_partial(self) -> None:
        """Drop everything up to the next newline (used after seeking mid-file)."""
        self._pending.clear()
        self._overflow = True

    @property
    def pending(self) -> bytes:
        return bytes(self._pending)

    @property
    def overflowing(self) -> bool:
        return self._overflow

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._overflow:
                if nl >= 0:
                    if self._pending:
                        lines.append(bytes(self._pending))
                        self._pending.clear()
                    self._overflow = False
            else:
                room = self.max_line - len(self._pending)
                piece = data[start:end]
                if len(piece) > room:
                    self._pending += piece[:room]
                    self.cut_lines += 1
                    if nl < 0:
                        self._overflow = True
                    else:
                        lines.append(bytes(self._pending))
                        self._pending.clear()
                else:
                    self._pending += piece
                    if nl >= 0:
                        lines.append(bytes(self._pending))
                        self._pending.clear()
            if nl < 0:
                break
            start = nl + 1
        return lines


HF_TOKEN_RE = re.compile(r"hf_[A-Za-z0-9]{20,}")
# A token cut by the line limit may have fewer than 20 characters left at the end.
_HF_TOKEN_TAIL_RE = re.compile(r"hf_[A-Za-z0-9]*$")


def redact(text: str) -> str:
    """Replace anything shaped like a Hugging Face token with ``hf_***``."""
    return HF_TOKEN_RE.sub("hf_***", text)


MAX_LOG_LINE = 4096
LOG_FIRST_READ = 256 * 1024
LOG_READ_BATCH = 256 * 1024
LOG_BURST_MAX = 16 * 1024 * 1024  # more appended between two polls: show only the end


def clean_log_line(raw: bytes, was_cut: bool = False) -> str:
    """Decode one raw line for display: progress text, redaction, length cut."""
    text = raw.decode("utf-8", errors="replace")
    if text.endswith("\r"):
        text = text[:-1]
    if "\r" in text:
        text = text.rsplit("\r", 1)[1]
    text = redact(text)
    if was_cut:
        text = _HF_TOKEN_TAIL_RE.sub("hf_***", text)
    if len(text) > MAX_LOG_LINE:
        text = text[:MAX_LOG_LINE]
    return text


class LogTail:
    """The last `keep` lines of a growing text file, read incrementally."""

    def __init__(self, path: str, keep: int = 1000):
        self.path = path
        self._file = IncrementalFile(path, first_read_max=LOG_FIRST_READ, burst_max=LOG_BURST_MAX)
        # keep a little more than the cut length so a token at the cut is seen whole
        self._lines = LineSplitter(MAX_LOG_LINE + 64)
        self._tail: deque[str] = deque(maxlen=keep)
        self.problem: str | None = None
        self.generation = 0  # bumps whenever the visible lines change

    @property
    def bytes_read(self) -> int:
        return self._file.bytes_read

    def poll(self) -> bool:
        """Read what was appended. Returns True when the tail changed."""
        changed = False
        while True:
            # bounded batches: a huge append never sits in memory whole
            result = self._file.read_new(limit=LOG_READ_BATCH)
            if result.problem != self.problem:
                self.problem = result.problem
                changed = True
            if result.problem:
                if result.problem == "missing" and self._tail:
                    self._tail.clear()
                    self._lines.reset()
                    changed = True
                break
            if result.reset:
                self._tail.clear()
                self._lines.reset()
                changed = True
            if result.skipped_head:
                self._lines.discard_partial()
                if self._tail:  # a burst bigger than the window: say what was jumped over
                    self._tail.append(f"[… {result.skipped_bytes:,} bytes skipped …]")
            if not result.data:
                break
            limit = self._lines.max_line
            for raw in self._lines.feed(result.data):
                self._tail.append(clean_log_line(raw, was_cut=len(raw) >= limit))
            # an unfinished line (a progress bar redrawn with "\r") shows too
            changed = True
        if changed:
            self.generation += 1
        return changed

    def lines(self, n: int | None = None) -> tuple[str, ...]:
        """The newest `n` lines (all kept lines when None), oldest first."""
        out = list(self._tail)
        pending = self._lines.pending
        if pending and not self._lines.overflowing:
            # unfinished: a token at its end may still be being written
            text = clean_log_line(pending, was_cut=True)
            if text:
                out.append(text)
        if n is not None and n < len(out):
            out = out[-n:]
        return tuple(out)
