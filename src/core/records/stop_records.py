"""A run the user stopped: `<run>/.rgpu/stops.jsonl`, and the state it makes the run.

`stop` (core.launch.stop: the app's `s`, `rgpu-tui stop`, a fleet host's stop) appends one
line before it signals the run's process: when, which process (pid, status.json's
`started_at`) and who asked. libreyolo then writes `failed` with KeyboardInterrupt on
SIGINT (and drops completed_epochs), or nothing at all when SIGTERM/SIGKILL ended it (its
status.json still says running: DEAD). Either is the user's stop, not a failure, when a
stop record names that very attempt: the run reads STOPPED (`stopped_state`), its epochs
and progress from its metrics as for any run, no failure event. A record of an earlier
attempt (the run resumed since) does not make a later failure a stop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..base.values import PIDS, TIMES, checked
from .records import read_json_lines

STOPS = "stops.jsonl"
STOPS_READ_MAX = 64 * 1024  # the newest records are the ones that count
SLACK_S = 5.0  # started_at has one-second precision; a record within this names it
STOPPED_OVER = ("failed", "dead")  # the states a stop of that attempt turns into "stopped"


def stops_path(run_dir: str) -> str:
    return os.path.join(run_dir, ".rgpu", STOPS)


@dataclass(frozen=True)
class StopRecord:
    time: float  # when the stop was asked (before the first signal)
    pid: int | None  # the process signalled (status.json's pid)
    started_at: float | None  # status.json's started_at then: which attempt
    by: str  # "app", "rgpu-tui stop", "fleet"

    def to_json(self) -> dict:
        return {"time": self.time, "pid": self.pid, "started_at": self.started_at, "by": self.by}


def _record(obj: dict) -> StopRecord | None:
    time = checked(obj.get("time"), TIMES)[0]
    if time is None:
        return None
    pid = checked(obj.get("pid"), PIDS, integer=True)[0]
    started = checked(obj.get("started_at"), TIMES)[0]
    by = obj.get("by") if isinstance(obj.get("by"), str) else "?"
    return StopRecord(float(time), pid, started, by[:40])


def read_stops(run_dir: str) -> list[StopRecord]:
    """The run's stop records, oldest first (the newest STOPS_READ_MAX bytes); a torn,
    malformed or out-of-range line is skipped."""
    got = (_record(o) for o in read_json_lines(stops_path(run_dir), STOPS_READ_MAX))
    return [r for r in got if r is not None]


def stop_of(
    stops: list[StopRecord], pid: int | None, started_at: float | None
) -> StopRecord | None:
    """The newest stop record of the attempt status.json describes (its pid and
    started_at), or None: a stop of an earlier attempt is not this one's."""
    for r in reversed(stops):
        if started_at is not None and r.started_at is not None:
            if abs(r.started_at - started_at) <= SLACK_S and (pid is None or r.pid == pid):
                return r
        elif pid is not None and r.pid == pid:
            if started_at is None or r.time >= started_at - SLACK_S:
                return r
    return None


def stopped_state(state: str, stop: StopRecord | None) -> str:
    """ "stopped" for a failed or dead run the user stopped (this attempt), else `state`."""
    return "stopped" if stop is not None and state in STOPPED_OVER else state
