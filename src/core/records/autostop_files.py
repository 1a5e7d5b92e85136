"""The files autostop keeps, beside the watcher's state (core.records.event_state), per root:

- `autostop-<hash>.jsonl`: the record, one JSON line per act (the command started, how it
  ended, not run, re-armed), appended by the watcher only (0600; core.records.records). A restarted
  watcher reads it to know whether the current idle stretch has had its autostop.
- `autostop-<hash>.json`: the plan, what the watcher's autostop is doing now (counting down
  to a time, held and why, ran), replaced atomically (0600) when it changes; the app reads
  it for its countdown line. It names the watcher's pid and start time, so a plan left by a
  watcher that died is known as such.
- `autostop-<hash>.hold`: a lock file. An app that cancelled autostop for its session (`a`,
  or `--no-autostop`) holds a shared flock on it while it runs; the watcher does not run
  the command while anyone holds it (the kernel drops the lock when the app exits or dies).

`<hash>` is the watcher's (core.records.event_state.root_key): the same root gives the same files.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Mapping
from dataclasses import dataclass

import psutil

from ..base.private import PRIVATE_FILE_MODE, private_parent
from ..base.values import TIMES, checked, value_text
from ..model.snapshot import AutostopPlan
from .event_state import APP_DIR, load_state, root_key, save_state, state_home
from .records import append_json_line, read_json_lines

PLAN_VERSION = 1
MESSAGE_MAX = 1000  # characters of the plan's message
RECORD_READ_MAX = 256 * 1024  # the newest records are enough to know the last stretch


@dataclass(frozen=True)
class AutostopFiles:
    record: str
    plan: str
    hold: str

    @classmethod
    def for_root(cls, root: str, environ: Mapping[str, str] | None = None) -> AutostopFiles:
        base = os.path.join(state_home(environ), APP_DIR, f"autostop-{root_key(root)}")
        return cls(record=base + ".jsonl", plan=base + ".json", hold=base + ".hold")

    # -- the record (the watcher writes, everyone reads) ---------------------------------

    def append(self, record: dict) -> None:
        append_json_line(self.record, record)

    def records(self) -> list[dict]:
        return read_json_lines(self.record, RECORD_READ_MAX)

    # -- the plan --------------------------------------------------------------------

    def write_plan(self, plan: dict) -> None:
        save_state(self.plan, {"version": PLAN_VERSION, **plan})

    def read_plan(self) -> dict | None:
        """The plan of a watcher that is alive; None when there is none (never written, not
        ours, or its watcher is gone)."""
        doc, _problem = load_state(self.plan)
        if not isinstance(doc, dict) or doc.get("version") != PLAN_VERSION:
            return None
        if not process_alive(doc.get("pid"), doc.get("pid_started")):
            return None
        return doc


class PlanReader:
    """The root's autostop plan as a refresh reads it: one stat a refresh, the file only when
    it changed; None when no live watcher wrote it (never written, or its watcher is gone:
    the watcher's pid and start time are checked while the file stays the same)."""

    def __init__(self, files: AutostopFiles) -> None:
        self.files = files
        self._key: tuple | None = None
        self._doc: dict | None = None

    def read(self) -> AutostopPlan | None:
        try:
            st = os.stat(self.files.plan)
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        if key is None:
            doc = None
        elif key != self._key:
            doc = self.files.read_plan()
        elif self._doc is not None and process_alive(
            self._doc.get("pid"), self._doc.get("pid_started")
        ):
            doc = self._doc
        else:
            doc = None
        self._key, self._doc = key, doc
        return plan_of(doc)


def plan_of(doc: dict | None) -> AutostopPlan | None:
    """The plan file's document as the Snapshot carries it; None when it is not usable."""
    if doc is None or not isinstance(doc.get("phase"), str):
        return None
    fires_at, _odd = checked(doc.get("fires_at"), TIMES)
    return AutostopPlan(doc["phase"], value_text(doc.get("message") or "", MESSAGE_MAX), fires_at)


def process_alive(pid, started) -> bool:
    """The process `pid` is alive and started at `started` (within a second: not a reused
    pid)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    started = checked(started, TIMES)[0]  # a 400-digit start would overflow the subtraction
    if started is None:
        return False
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 1.0 and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def own_start_time() -> float | None:
    try:
        return psutil.Process(os.getpid()).create_time()
    except (psutil.Error, OSError):
        return None


# -- the hold ---------------------------------------------------------------------------


class Hold:
    """The app's hold on autostop: a shared flock on the hold file while held."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def take(self) -> None:
        """Hold (raises OSError when the state folder cannot be written)."""
        if self._fd is not None:
            return
        private_parent(self.path)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        fd = os.open(self.path, flags, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a watcher probes (microseconds)
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def someone_holds(path: str) -> bool:
    """Whether any process holds the hold file (the watcher's probe: it takes the lock
    exclusively for an instant, without waiting, and lets it go)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except OSError:
        return False  # no file (nobody ever held it), or not ours to read
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False
