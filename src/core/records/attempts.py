"""A run's attempts: the launch, then each resume; its time is the sum of theirs.

A run killed and resumed is one run (one directory, one row) trained by several processes.
libreyolo's status.json only describes the current one (its `started_at`, `start_epoch`,
`elapsed_seconds` restart with each resume), so the run's time and cost are put together
from what is on disk, every refresh, without writing anything:

- the current attempt is status.json's: from its launch record's time when one started it
  (the process starts before libreyolo writes `started_at`), else from `started_at`; it
  ends where libreyolo's `elapsed_seconds` says (completed, failed), or for a DEAD run at
  its last status update, or later at its recorded end (exit record, console log);
- each earlier attempt is a launch record (a launch or a resume of this run, matched by
  core.records.launch_runs) older than the current one: from the record's time to its
  recorded exit, else to its console log's last write (its last output), never past the
  next attempt's start;
- metrics.jsonl says how many epochs each trained and how long they took: a resume from
  an earlier checkpoint writes its epochs again (a repeated epoch starts an attempt's
  rows), the current attempt's rows are those from status.json's `start_epoch` on; an
  earlier stretch of rows no record accounts for is an attempt known by its epoch times
  only (a run started or resumed outside rgpu-tui), which count as its time;
- a resume recorded after status.json's start has not written it yet: starting while its
  process lives, else an attempt that ended with no epoch.

Each Attempt says how it was known (`known_by`). The run's elapsed time is the sum of the
attempts' seconds; the mean epoch time (for the ETA) is over every row's `time`, every
attempt's.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ..model.snapshot import Attempt

SLACK_S = 5.0  # a launch record this much after status.json's started_at still started it


@dataclass(frozen=True)
class RecordSpan:
    """What the attempts need of one launch record of the run."""

    time: float  # when it was launched
    pid: int
    ended_at: float | None  # its exit, else its console log's last write; None: unknown
    ended_by: str | None  # "exit record" | "console log"
    alive: bool  # its process still runs


@dataclass(frozen=True)
class StatusSide:
    """What the attempts need of the run's status.json and state."""

    started_at: float | None
    pid: int | None
    updated: float | None  # status.json's updated_at
    state: str  # the run's derived state (running, completed, failed, dead, stalled, ...)
    status_state: str | None  # what status.json says
    start_epoch: int | None
    completed: int | None
    elapsed: float | None  # status.json's elapsed_seconds (libreyolo's, this attempt's)


@dataclass(frozen=True)
class Rows:
    """Every metrics row read, in file order (core.run.metrics.MetricsReader's arrays)."""

    epochs: Sequence[int]
    seconds: Sequence[float]  # running sum of the rows' finite `time`
    timed: Sequence[int]  # running count of the rows with one
    repeats: Sequence[int] = ()  # the rows whose epoch is not after the previous one's

    def span_seconds(self, i: int, j: int) -> float:
        """The epoch times of rows [i, j)."""
        if j <= i:
            return 0.0
        return self.seconds[j - 1] - (self.seconds[i - 1] if i else 0.0)

    def span_timed(self, i: int, j: int) -> int:
        if j <= i:
            return 0
        return self.timed[j - 1] - (self.timed[i - 1] if i else 0)


def current_rows(rows: Rows, status: StatusSide) -> int:
    """Where the current attempt's rows begin: in the last stretch of increasing epochs,
    the first row from status.json's start_epoch on (a binary search: the cost does not
    grow with the run). While it runs, libreyolo 1.6.0's completed_epochs is the epoch of
    its last row: a last row past the epoch after it is an earlier attempt's (one resumed
    from an earlier checkpoint that has not written a row yet)."""
    n = len(rows.epochs)
    if n == 0:
        return 0
    last = rows.repeats[-1] if rows.repeats else 0  # where the last stretch begins
    start = status.start_epoch
    if start is None:  # no start_epoch: the rows after the last repeated epoch
        return last
    if status.status_state == "running" and status.completed is not None:
        if status.completed >= start - 1 and rows.epochs[-1] > status.completed + 1:
            return n
    return bisect_left(rows.epochs, start, last, n)


def segments(rows: Rows, end: int) -> list[tuple[int, int]]:
    """Rows [0, end) split where an epoch comes again (a resume from an earlier epoch)."""
    cuts = [0, *(r for r in rows.repeats if r < end), end]
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def run_attempts(
    status: StatusSide, rows: Rows, records: Sequence[RecordSpan], now: float
) -> tuple[Attempt, ...]:
    """The run's attempts, oldest first (see the module doc); with neither a status.json
    start nor a launch record to count from, its stretches of rows (attempts known by
    their epoch times: the time every view gives such a run), else ()."""
    records = sorted(records, key=lambda r: r.time)
    start = status.started_at
    if start is None and not records:
        return tuple(_by_rows(rows, a, b) for a, b in segments(rows, len(rows.epochs)))
    if start is not None:
        mine = [r for r in records if r.time <= start + SLACK_S]
        pending = [r for r in records if r.time > start + SLACK_S]
    else:  # no status.json start: every record is an attempt that wrote none yet
        mine, pending = [], records
    current_record = None
    if mine and _started_status(mine[-1], status):
        current_record = mine.pop()
    earlier_records = mine
    k = current_rows(rows, status) if start is not None else len(rows.epochs)
    earlier_rows = segments(rows, k)

    out: list[Attempt] = []
    # earlier attempts: the records oldest first, each with the next stretch of rows;
    # stretches left over (more than the records) are attempts known by epoch times
    spare = len(earlier_rows) - len(earlier_records)
    for a, b in earlier_rows[: max(spare, 0)]:
        out.append(_by_rows(rows, a, b))
    stretches = earlier_rows[max(spare, 0) :]
    next_starts = [r.time for r in earlier_records[1:]]
    next_starts.append(
        current_record.time if current_record is not None else (start if start else now)
    )
    for i, record in enumerate(earlier_records):
        epochs = stretches[i][1] - stretches[i][0] if i < len(stretches) else 0
        out.append(_from_record(record, next_starts[i], epochs))

    if start is not None:
        out.append(_current(status, rows, k, current_record, now))
    for i, record in enumerate(pending):
        later = pending[i + 1].time if i + 1 < len(pending) else None
        out.append(_from_record(record, later, 0, pending=True, now=now))
    return tuple(out)


def _by_rows(rows: Rows, a: int, b: int) -> Attempt:
    """An attempt known by its rows [a, b) only: their epoch times are its time."""
    seconds = rows.span_seconds(a, b) if rows.span_timed(a, b) else None
    return Attempt(None, None, b - a, True, seconds, "metrics.jsonl epoch times")


def _started_status(record: RecordSpan, status: StatusSide) -> bool:
    """Did this record's process write the current status.json? Its pid is status.json's,
    or it was still alive when libreyolo wrote started_at (rank 0 of a multi-GPU run
    writes its own pid); a record that ended before then is an earlier attempt (the
    current one was started some other way)."""
    if record.pid == status.pid or record.alive or record.ended_at is None:
        return True
    return status.started_at is not None and record.ended_at >= status.started_at - SLACK_S


def _from_record(
    record: RecordSpan,
    next_start: float | None,
    epochs: int,
    *,
    pending: bool = False,
    now: float | None = None,
) -> Attempt:
    """An attempt a launch record started and that is not status.json's."""
    if pending and record.alive:
        seconds = max((now or record.time) - record.time, 0.0)
        return Attempt(record.time, None, 0, False, seconds, "launch record (starting)")
    end, how = record.ended_at, record.ended_by
    if next_start is not None and (end is None or end > next_start):
        end, how = next_start, "the next attempt's start"
    seconds = max(end - record.time, 0.0) if end is not None else None
    return Attempt(record.time, end, epochs, True, seconds, f"launch record, {how or '?'}")


def _current(
    status: StatusSide, rows: Rows, k: int, record: RecordSpan | None, now: float
) -> Attempt:
    """status.json's attempt."""
    begin = status.started_at
    how = "status.json"
    if record is not None and record.time <= begin:
        begin, how = record.time, "launch record, status.json"
    n = len(rows.epochs)
    epochs = n - k
    if status.state in ("running", "stalled", "starting"):
        return Attempt(begin, None, epochs, False, max(now - begin, 0.0), how)
    if status.state == "dead":  # to its last status, or its recorded end (it lived on)
        seen = [t for t in (status.updated,) if t is not None]
        if record is not None and record.ended_at is not None:
            seen.append(record.ended_at)
        end = max(seen) if seen else None
    elif status.elapsed is not None:  # libreyolo's own count, to its last status
        end = status.started_at + status.elapsed
    else:
        end = status.updated
    if end is None:
        return Attempt(begin, None, epochs, True, None, how)
    return Attempt(begin, end, epochs, True, max(end - begin, 0.0), how)


def total_seconds(attempts: Sequence[Attempt]) -> float | None:
    """The run's time: the sum of its attempts' (None when none is known)."""
    known = [a.seconds for a in attempts if a.seconds is not None]
    return sum(known) if known else None


def mean_epoch_seconds(rows: Rows) -> float | None:
    """The mean epoch time over every row with a `time`, every attempt's (the ETA's)."""
    if not rows.epochs or not rows.timed[-1]:
        return None
    return rows.seconds[-1] / rows.timed[-1]


# -- which launch records' times can be a run's ----------------------------------------

RECORD_PAST_S = 30 * 86_400.0  # a run resumed over a month: no record older than this
RECORD_FUTURE_S = 300.0  # a record's time at most this far past the clock


def record_window(started_at: float | None, now: float) -> tuple[float, float]:
    """The times a launch record of a run may carry: from RECORD_PAST_S before the run's
    status.json start (before `now` when it has none) to RECORD_FUTURE_S after `now`. A
    forged record dated 2001 with an exit at the run's start would count 25 years."""
    anchor = now if started_at is None else min(started_at, now)
    return anchor - RECORD_PAST_S, now + RECORD_FUTURE_S


def in_window(time: float, ended_at: float | None, window: tuple[float, float]) -> bool:
    """Do a record's launch and end lie in `window` (record_window)?"""
    lo, hi = window
    return lo <= time <= hi and (ended_at is None or ended_at <= hi)


def ignored_note(count: int) -> str:
    """The one notice for the records left out by record_window."""
    days = RECORD_PAST_S / 86_400
    records = "launch record" if count == 1 else "launch records"
    return (
        f"{count} {records} ignored: dated more than {days:.0f} days before the run's start "
        "or in the future"
    )
