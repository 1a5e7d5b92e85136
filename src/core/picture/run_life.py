"""A run's life across kills and resumes, as the refresh shows it: its attempts
(core.records.attempts) put on its RunInfo, elapsed as their sum, and a resume that has not
written status.json yet (starting, or ended before it could).

Read only, and cheap: status.json's numbers and the metrics rows are already in memory (the
run's readers keep them); a launch record's end is read once its process has ended (one
stat of its console log, and its last lines for a resume that died before status.json),
then kept.
"""

from __future__ import annotations

from dataclasses import replace

from ..base.formatting import iso
from ..model.snapshot import RunInfo
from ..records.attempts import (
    SLACK_S,
    RecordSpan,
    Rows,
    StatusSide,
    ignored_note,
    in_window,
    record_window,
    run_attempts,
    total_seconds,
)
from ..records.launch_records import LaunchRecord
from ..records.launch_runs import console_tail, error_from_tail, launch_end

STARTING = "launch record (starting)"


class RecordEnds:
    """What the attempts need of the launch records, each ended one's read once."""

    def __init__(self) -> None:
        self._ends: dict[str, tuple[float | None, str | None]] = {}
        self._errors: dict[str, str | None] = {}

    def span(self, record: LaunchRecord, alive: bool) -> RecordSpan:
        if alive:
            return RecordSpan(record.time, record.pid, None, None, True)
        got = self._ends.get(record.id)
        if got is None:
            got = self._ends[record.id] = launch_end(record)
        return RecordSpan(record.time, record.pid, got[0], got[1], False)

    def error(self, record: LaunchRecord) -> str | None:
        """The console's error line of an ended record (read once)."""
        if record.died_error:
            return record.died_error
        if record.id not in self._errors:
            self._errors[record.id] = error_from_tail(console_tail(record.console_log))
        return self._errors[record.id]

    def keep_only(self, ids: set[str]) -> None:
        for cache in (self._ends, self._errors):
            for rid in [r for r in cache if r not in ids]:
                del cache[rid]


def with_attempts(
    info: RunInfo,
    status: StatusSide,
    rows: Rows,
    records: list[tuple[LaunchRecord, RecordSpan]],
    now: float,
    ends: RecordEnds | None = None,
) -> RunInfo:
    """`info` with its attempts and their total as its elapsed time; a resume recorded
    after status.json's start makes it "starting" while its process lives, or says it
    ended before writing status.json. A record whose times lie outside the run's window
    (core.records.attempts.record_window) is left out, and the run's problem says so."""
    window = record_window(status.started_at, now)
    kept = [(r, span) for r, span in records if in_window(span.time, span.ended_at, window)]
    if len(kept) < len(records):
        note = ignored_note(len(records) - len(kept))
        info = replace(info, problem="; ".join(filter(None, (info.problem, note))))
    records = kept
    attempts = run_attempts(status, rows, [span for _, span in records], now)
    if not attempts:
        return info
    total = total_seconds(attempts)
    changes: dict = {"attempts": attempts}
    if total is not None:
        changes["elapsed_seconds"] = total
    last = attempts[-1]
    start = status.started_at
    pending = [r for r, span in records if start is None or span.time > start + SLACK_S]
    if pending and last.known_by == STARTING and info.state not in ("running", "stalled"):
        record = pending[-1]
        changes.update(  # the old attempt's "process ... is gone" is no longer news
            state="starting",
            error=None,
            problem=f"resumed (pid {record.pid}); waiting for it to write status.json",
        )
    elif pending and last.started_at == pending[-1].time and last.epochs == 0 and last.ended:
        record = pending[-1]
        why = ends.error(record) if ends is not None else None
        note = f"the resume started {iso(record.time)} ended before writing status.json" + (
            f": {why}" if why else f" (console log {record.console_log})"
        )
        changes["problem"] = "; ".join(filter(None, (info.problem, note)))
    return replace(info, **changes)
