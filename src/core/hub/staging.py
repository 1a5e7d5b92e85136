"""Torn-file-safe staging of a checkpoint before it is uploaded.

libreyolo rewrites best.pt and last.pt in place (same inode, truncated, then
written again) at every improvement and every epoch, and an uploader reads a
path several times (size, hash, bytes). Uploading the live file can therefore
send a mix of two versions. `stage()` makes a private copy that is one complete
version:

1. wait until the file's (inode, size, mtime_ns, ctime_ns) has not changed for
   `settle_s` seconds;
2. copy it in chunks to a private file (mode 0600) in `staging_dir`, which
   should be on the same filesystem (`<run>/.rgpu/staging`), hashing (sha256) as
   it copies, so memory stays flat whatever the size;
3. stat the source again: if anything changed, throw the copy away and start
   over (at most `tries` times, then "best.pt keeps changing: tried 5 times");
4. check the copy is a complete torch checkpoint (core.run.torch_checkpoint, the one
   check): a zip archive with a `*/data.pkl` member whose every member passes its CRC check;
5. `os.replace` the temporary name to the final one and return `Staged`.

Every failure is a `StagingError` whose message is one line, and leaves no
staging file behind (a full disk included).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..base.private import private_dir
from ..base.safeio import NotRegularFile, open_regular
from ..run.runpath import fd_outside_run
from ..run.torch_checkpoint import check_checkpoint as check_torch_checkpoint

CHUNK = 1024 * 1024
_NAME_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<rand>[0-9a-f]+)\.(part|staged)$")


class StagingError(Exception):
    """Staging failed; str(error) is one line that says why."""


@dataclass(frozen=True)
class Staged:
    """A complete, private copy of a checkpoint."""

    path: str
    sha256: str
    size: int
    # the epoch the copied bytes hold (the checkpoint's own, as resume reads it): None when
    # it does not say, or the copy was not checked
    epoch: int | None = None
    mtime: float | None = None  # the source's mtime when these bytes were copied

    def remove(self) -> None:
        """Delete the staged copy (quietly: it may be gone already)."""
        _unlink(self.path)


def _signature(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stat(src: str, name: str) -> os.stat_result:
    try:
        st = os.stat(src)
    except FileNotFoundError:
        raise StagingError(f"{name}: no such file") from None
    except OSError as exc:
        raise StagingError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise StagingError(f"{name} is not a regular file")
    return st


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's live process
        return True
    return True


def clean_stale(staging_dir: str) -> int:
    """Remove staging files left behind by processes that died. Returns how many."""
    removed = 0
    try:
        names = os.listdir(staging_dir)
    except OSError:
        return 0
    for entry in names:
        m = _NAME_RE.match(entry)
        if m and not _pid_alive(int(m.group("pid"))):
            _unlink(os.path.join(staging_dir, entry))
            removed += 1
    return removed


def wait_settled(
    src: str,
    settle_s: float,
    *,
    max_wait_s: float,
    name: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> os.stat_result | None:
    """The stat of `src` once it has not changed for `settle_s`; None if that did not
    happen within `max_wait_s`. Raises StagingError when the file is missing."""
    name = name or os.path.basename(src)
    poll = min(0.1, max(0.01, settle_s / 5))
    start = clock()
    st = _stat(src, name)
    since = start
    while True:
        now = clock()
        if now - since >= settle_s:
            return st
        if now - start >= max_wait_s:
            return None
        sleep(min(poll, max(0.0, settle_s - (now - since))))
        st2 = _stat(src, name)
        if _signature(st2) != _signature(st):
            st, since = st2, clock()


def _changed(src: str, st: os.stat_result) -> bool:
    try:
        return _signature(os.stat(src)) != _signature(st)
    except OSError:
        return True


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _copy(
    src: str,
    tmp: str,
    expected: os.stat_result,
    name: str,
    progress: Callable[[int, int], None] | None,
    chunk: int,
    within: str | None = None,
):
    """Copy src to a new tmp file; returns (hexdigest, size) or None when the source changed."""
    import hashlib

    try:
        fd_in = open_regular(src)  # never blocks: a FIFO swapped in since the stat is refused
    except FileNotFoundError:
        return None  # replaced or removed since the stat: start over (the stat will tell)
    except NotRegularFile:
        raise StagingError(f"{name} is not a regular file") from None
    except OSError as exc:
        raise StagingError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        real = fd_outside_run(within, fd_in) if within else None
        if real is not None:
            raise StagingError(f"{name} resolves to {real}, outside the run directory")
        if _signature(os.fstat(fd_in)) != _signature(expected):
            return None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        fd_out = os.open(tmp, flags, 0o600)
        try:
            digest = hashlib.sha256()
            buf = bytearray(chunk)
            view = memoryview(buf)
            total = expected.st_size
            done = 0
            while True:
                n = os.readv(fd_in, [buf])
                if n == 0:
                    break
                part = view[:n]
                digest.update(part)
                _write_all(fd_out, part)
                done += n
                if done > total:
                    return None  # grew while copying
                if progress is not None:
                    progress(done, total)
            if done != total:
                return None  # truncated while copying
            if _signature(os.fstat(fd_in)) != _signature(expected):
                return None
            return digest.hexdigest(), done
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


def check_checkpoint(path: str, name: str) -> int | None:
    """Raise StagingError unless `path` is a complete torch checkpoint whose every member
    passes its CRC check (core.run.torch_checkpoint: the one check, here with the CRCs);
    the epoch it holds (None when it does not say)."""
    got = check_torch_checkpoint(path, name, crc=True, epoch=True)
    if got.problem is not None:
        raise StagingError(got.problem)
    return got.epoch


def _free_bytes(path: str) -> int | None:
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def _enospc(name: str, staging_dir: str, size: int) -> StagingError:
    mb = size / 1e6
    return StagingError(
        f"no space left on the device holding {staging_dir} to stage {name} "
        f"({mb:.1f} MB needed): free some disk and push again"
    )


def stage(
    src: str,
    staging_dir: str,
    *,
    settle_s: float = 2.0,
    tries: int = 5,
    progress: Callable[[int, int], None] | None = None,
    settle_max_s: float | None = None,
    check_zip: bool = True,
    chunk: int = CHUNK,
    within: str | None = None,
) -> Staged:
    """A private, complete, verified copy of `src` in `staging_dir` (see the module doc).

    progress(bytes_copied, bytes_total) is called after each chunk of each try.
    settle_max_s: how long one try waits for the file to be still (default 5 x settle_s,
    at least 1 s); a try that never sees it still counts as a failed try.
    within: a run directory the opened file must lie in (core.run.runpath).
    Raises StagingError (one line); leaves no staging file behind on failure.
    """
    name = os.path.basename(src)
    tries = max(1, int(tries))
    settle_max_s = max(1.0, settle_s * 5) if settle_max_s is None else settle_max_s
    try:
        private_dir(staging_dir, os.path.dirname(os.path.abspath(staging_dir)))
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise _enospc(name, staging_dir, 0) from None
        raise StagingError(f"cannot create {staging_dir}: {exc.strerror or exc}") from None
    clean_stale(staging_dir)
    stem = f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    tmp = os.path.join(staging_dir, stem + ".part")
    final = os.path.join(staging_dir, stem + ".staged")
    for _attempt in range(tries):
        st = wait_settled(src, settle_s, max_wait_s=settle_max_s, name=name)
        if st is None:
            continue
        free = _free_bytes(staging_dir)
        if free is not None and free < st.st_size:
            raise _enospc(name, staging_dir, st.st_size)
        try:
            copied = _copy(src, tmp, st, name, progress, chunk, within)
        except StagingError:
            _unlink(tmp)
            raise
        except OSError as exc:
            _unlink(tmp)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise _enospc(name, staging_dir, st.st_size) from None
            raise StagingError(
                f"cannot stage {name} in {staging_dir}: {exc.strerror or exc}"
            ) from None
        except BaseException:
            _unlink(tmp)
            raise
        if copied is None:
            _unlink(tmp)
            continue
        if _changed(src, st):
            _unlink(tmp)
            continue
        digest, size = copied
        epoch = None
        try:
            if check_zip:
                try:
                    epoch = check_checkpoint(tmp, name)
                except StagingError:
                    # a writer that pauses longer than settle_s leaves a still but
                    # unfinished file: if it moves again, try again; else it is bad
                    _unlink(tmp)
                    time.sleep(settle_s)
                    if _changed(src, st):
                        continue
                    raise
            os.replace(tmp, final)
        except BaseException:
            _unlink(tmp)
            raise
        return Staged(final, digest, size, epoch, st.st_mtime_ns / 1e9)
    raise StagingError(f"{name} keeps changing: tried {tries} times")
