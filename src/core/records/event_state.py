"""Where `rgpu-tui watch` keeps what it has already reported, across restarts.

One JSON file per watched root, `$XDG_STATE_HOME/rgpu-tui/watch-<hash>.json` (default
`~/.local/state/rgpu-tui/`), the hash being the first 16 hex digits of the sha256 of the
root's resolved path (symlinks followed: `~/runs` and the real folder it points to are one
root, with one state, one lock and one autostop plan): a watcher restarted on the same root
finds what it had reported and repeats nothing. The file is the watcher's (the act path); a
refresh never writes it, and the app keeps its events in memory only.

- Written atomically: a private temp file (0600) in the same folder, fsynced, then
  `os.replace`d over the real name; the folders it creates are 0700 (core.base.private).
  A crash leaves the old file or the new one, never half of one.
- Read tolerantly: a missing file is a first start; a file that is not ours (not a
  regular file, too large, not JSON, another version) is set aside as a first start with
  a one-line warning, never a crash. The engine checks every field it takes from it.
- One watcher per root: `WatchLock` holds an flock on `watch-<hash>.lock` for the
  process's life, so a second `rgpu-tui watch` on the same root (a forgotten nohup)
  refuses to start instead of sending every notification twice.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Mapping

from ..base.private import PRIVATE_FILE_MODE, private_parent
from ..base.safeio import NotRegularFile, read_regular
from ..base.values import parse_json

APP_DIR = "rgpu-tui"
MAX_STATE_BYTES = 64 * 1024 * 1024  # about 400,000 runs' entries


def state_home(environ: Mapping[str, str] | None = None) -> str:
    """$XDG_STATE_HOME (an absolute path), else ~/.local/state (the XDG spec's default)."""
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        return xdg
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".local", "state")


def root_key(root: str) -> str:
    """The root's identity: its resolved directory, whatever spelling reached it."""
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:16]


def state_path(root: str, environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(state_home(environ), APP_DIR, f"watch-{root_key(root)}.json")


def load_state(path: str) -> tuple[dict | None, str | None]:
    """(the saved state, None), (None, None) when there is none yet, or (None, why) when
    the file cannot be used (the watcher then starts as on a first start)."""
    try:
        raw = read_regular(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return None, None
    except NotRegularFile:
        return None, f"{path} is not a regular file: starting afresh"
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or exc}): starting afresh"
    if len(raw) > MAX_STATE_BYTES:
        return None, f"{path} is larger than {MAX_STATE_BYTES // 2**20} MiB: starting afresh"
    try:
        doc = parse_json(raw)
    except ValueError:
        return None, f"{path} is not JSON: starting afresh"
    if not isinstance(doc, dict):
        return None, f"{path} is not a JSON object: starting afresh"
    return doc, None


def save_state(path: str, state: dict) -> None:
    """Atomically replace `path` with `state` as JSON (0600; folders it makes 0700)."""
    private_parent(path)
    data = json.dumps(state, sort_keys=True, allow_nan=False).encode("utf-8")
    tmp = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.unlink(tmp)  # left by a crashed watcher with this pid
    except FileNotFoundError:
        pass
    fd = os.open(tmp, flags, PRIVATE_FILE_MODE)
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)  # the umask may have taken bits off
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class WatchLock:
    """An exclusive flock held by the one watcher of a root, released when it exits (or
    dies: the kernel drops the lock with the process)."""

    def __init__(self, state_file: str) -> None:
        self.path = state_file.removesuffix(".json") + ".lock"
        self._fd: int | None = None

    def acquire(self) -> str | None:
        """None when held; else one line saying who holds it."""
        private_parent(self.path)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        fd = os.open(self.path, flags, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            return f"another `rgpu-tui watch` is watching this root{who}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
