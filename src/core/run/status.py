"""status.json, read tolerantly, and the state a user should see.

libreyolo rewrites status.json atomically (new inode) at train start and after
every epoch, with mode 0600. It can only ever write ``running``, ``completed``
or ``failed``; a trainer killed by SIGTERM/SIGKILL, the OOM killer or a
preempted machine leaves ``running`` behind forever. So the state shown is
derived: ``dead`` when the pid is gone (or was reused by a younger process) and
``stalled`` when the process lives but the file has not changed for too long.
"""

from __future__ import annotations

import os
import select
import time
from dataclasses import dataclass

from ..base.safeio import NotRegularFile, read_regular
from ..base.values import (
    DURATIONS,
    EPOCHS,
    METRIC,
    NESTED_TOO_DEEP,
    PIDS,
    checked,
    checked_time,
    parse_json,
    shown,
)
from ..base.values import parse_time as parse_time  # re-exported; the one time parser is in values
from .run_process import START_AFTER_S, run_process
from .tail import describe_os_error

MAX_STATUS_BYTES = 4 * 1024 * 1024
PID_REUSE_SLACK_S = START_AFTER_S  # started_at has one-second precision
STALL_MIN_S = 600.0
STALL_EPOCHS = 3.0
ELSEWHERE_RECHECK_S = 30.0  # a process working in another run's directory: read again after


_INT_FIELDS = {
    "pid": PIDS,
    "total_epochs": EPOCHS,
    "completed_epochs": EPOCHS,
    "current_epoch": EPOCHS,
    "start_epoch": EPOCHS,
    "best_epoch": EPOCHS,
}
_FLOAT_FIELDS = {
    "mean_epoch_seconds": DURATIONS,
    "elapsed_seconds": DURATIONS,
    "best_metric": METRIC,
}
_TIME_FIELDS = ("started_at", "updated_at")


@dataclass(frozen=True)
class StatusNumbers:
    """The numbers and times of one status.json, each in its sane range (core.base.values) or
    None; `odd` names each field whose value was out of range, for the run's problem line
    ("started_at out of range (0001-01-01T00:00:00)"). Made once per new status.json."""

    pid: int | None = None
    total_epochs: int | None = None
    completed_epochs: int | None = None
    current_epoch: int | None = None
    start_epoch: int | None = None
    best_epoch: int | None = None
    mean_epoch_seconds: float | None = None
    elapsed_seconds: float | None = None
    best_metric: float | None = None
    started_at: float | None = None
    updated_at: float | None = None
    odd: tuple[str, ...] = ()

    @classmethod
    def of(cls, doc: dict) -> StatusNumbers:
        values: dict = {}
        odd: list[str] = []
        for key, rng in _INT_FIELDS.items():
            values[key], bad = checked(doc.get(key), rng, integer=True)
            if bad:
                odd.append(f"{key} out of range ({shown(doc[key])})")
        for key, rng in _FLOAT_FIELDS.items():
            values[key], bad = checked(doc.get(key), rng)
            if bad:
                odd.append(f"{key} out of range ({shown(doc[key])})")
        for key in _TIME_FIELDS:
            values[key], bad = checked_time(doc.get(key))
            if bad:
                odd.append(f"{key} out of range ({shown(doc[key])})")
        return cls(**values, odd=tuple(odd))


class StatusReader:
    """Re-reads status.json only when its (inode, size, mtime) changed."""

    def __init__(self, path: str):
        self.path = path
        self._key: tuple | None = None
        self.data: dict | None = None  # the last good value
        self.numbers: StatusNumbers | None = None  # its numbers, range-checked
        self.problem: str | None = None  # why the current file is not that value
        self.mtime: float | None = None
        self.generation = 0

    def poll(self) -> bool:
        """Returns True when what the reader says changed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._set(self.data, "no status.json")
        except OSError as exc:  # its directory cannot be searched, a loop of symlinks...
            return self._set(self.data, "status.json " + describe_os_error(exc))
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        self.mtime = st.st_mtime
        if key == self._key:
            return False
        if st.st_size > MAX_STATUS_BYTES:
            self._key = key
            return self._set(self.data, f"status.json too large ({st.st_size} bytes)")
        try:
            # never blocks: a FIFO or a device is refused before it is opened
            raw = read_regular(self.path, MAX_STATUS_BYTES)
        except NotRegularFile as exc:
            self._key = key  # stays so until replaced (a new inode)
            return self._set(self.data, "status.json " + describe_os_error(exc))
        except OSError as exc:
            return self._set(self.data, "status.json " + describe_os_error(exc))
        if len(raw) > MAX_STATUS_BYTES:  # grew since the stat
            return self._set(self.data, "status.json too large (still being written?)")
        try:
            value = parse_json(raw)
        except ValueError as exc:
            if str(exc) == NESTED_TOO_DEEP:  # not a writer caught mid-write: keep the key
                self._key = key
                return self._set(self.data, f"status.json is not usable JSON ({exc})")
            # half-written by a non-atomic writer: try again next poll
            return self._set(self.data, "status.json is half-written or not JSON")
        self._key = key
        if not isinstance(value, dict):
            return self._set(self.data, "status.json is not a JSON object")
        return self._set(value, None)

    def _set(self, data: dict | None, problem: str | None) -> bool:
        changed = data is not self.data or problem != self.problem
        if data is not self.data:
            self.numbers = StatusNumbers.of(data) if data is not None else None
        self.data = data
        self.problem = problem
        if changed:
            self.generation += 1
        return changed


@dataclass(frozen=True)
class PidCheck:
    alive: bool
    reason: str | None = None  # why it counts as not alive
    elsewhere: bool = False  # a live process that works in another run's directory


def check_pid(pid, started_at: float | None, run_dir: str | None = None) -> PidCheck:
    """Is `pid` the trainer that started at `started_at` (and works in `run_dir`)? The one
    rule `stop` uses too (core.run.run_process): never pid 1 or an rgpu-tui process, a
    process started outside the window around started_at is not the run's, nor one that
    does not work in the run's directory."""
    got = run_process(pid, started_at, run_dir=run_dir)
    return PidCheck(got.alive, got.reason, got.elsewhere)


class PidWatch:
    """`check_pid` for one run, refresh after refresh, cheaply: once a full check finds
    the trainer alive, a pidfd (Linux 5.3+) on that very process answers later checks
    with one poll() instead of reading /proc twice through psutil (0.3 ms a refresh on
    a small VM). The pidfd becomes readable when the process exits, zombie or reaped,
    and cannot be fooled by a reused pid; then, or when the pid or start time in
    status.json changes, the full check runs again and says why. Without pidfds every
    check is a full one. A live process found working in another directory (a pulled
    copy's original: its open files are read) is checked again at most every
    ELSEWHERE_RECHECK_S."""

    def __init__(self, run_dir: str | None = None) -> None:
        self.run_dir = run_dir  # the process must work in it (core.run.run_process)
        self._key: tuple | None = None
        self._fd: int | None = None
        self._poller: select.poll | None = None  # polls _fd
        self._elsewhere: tuple | None = None  # (key, recheck after, its PidCheck)

    def check(self, pid, started_at: float | None) -> PidCheck:
        key = (pid, started_at)
        if self._poller is not None and key == self._key and not self._poller.poll(0):
            return PidCheck(True)
        elsewhere = self._elsewhere
        if elsewhere is not None and elsewhere[0] == key and time.monotonic() < elsewhere[1]:
            return elsewhere[2]
        self.close()
        result = check_pid(pid, started_at, self.run_dir)
        self._key = key
        if result.elsewhere:
            self._elsewhere = (key, time.monotonic() + ELSEWHERE_RECHECK_S, result)
        if result.alive and hasattr(os, "pidfd_open"):
            try:
                self._fd = os.pidfd_open(pid)
            except OSError:  # gone since, or not permitted: full checks
                return result
            self._poller = select.poll()
            self._poller.register(self._fd, select.POLLIN)
        return result

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = self._poller = self._key = self._elsewhere = None


def stall_limit(mean_epoch_seconds: float | None) -> float:
    """Seconds without a status update after which a live run counts as stalled."""
    if mean_epoch_seconds and mean_epoch_seconds > 0:
        return max(STALL_EPOCHS * mean_epoch_seconds, STALL_MIN_S)
    return STALL_MIN_S


def derive_state(
    status_state: str | None,
    pid: PidCheck | None,
    status_mtime: float | None,
    mean_epoch_seconds: float | None,
    now: float,
) -> str:
    """The state to show: running, completed, failed, dead, stalled or unknown."""
    if status_state in ("completed", "failed"):
        return status_state
    if status_state != "running":
        return "unknown"
    if pid is not None and not pid.alive:
        return "dead"
    if status_mtime is not None and now - status_mtime > stall_limit(mean_epoch_seconds):
        return "stalled"
    return "running"
