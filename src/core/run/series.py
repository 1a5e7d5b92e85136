"""A run's metrics as honest chart series, from the rows its MetricsReader has read.

The rules, the same for the chart view, `rgpu-tui chart` and its --json:

- a value that is null, NaN, infinite or exactly -1 (COCO's "no object of that size"
  placeholder, written for mAP_large and AR_large) is a gap, never a point;
- an epoch that did not validate (`validated: false`) has no point in a `metrics/...`
  column;
- after a resume from an earlier checkpoint a repeated epoch keeps its last row (the
  reader drops the older rows), and the epochs where an attempt began again are resume
  points (core.run.metrics.new_attempt, and the run's attempts when they are known:
  `attempt_starts`);
- an epoch whose loss was null or not finite is marked diverged;
- the time at an epoch is the time spent up to it over every attempt: the sum of the rows'
  `time` fields, rows a resume dropped included; when the run's attempts are known
  (`attempts_time`), every earlier attempt counts its whole time instead (start-up, an
  epoch lost at a kill: core.records.attempts, the time every view gives the run).

Memory is bounded: a series holds at most MAX_POINTS values. A longer run keeps one row
in `stride` (a power of two, so the kept rows change only when the stride doubles, about
log2 times over a run) and always its last row. The reader itself keeps a bounded number
of rows (core.run.thin_rows), among them every row such a stride asks for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..model.snapshot import ChartSeries, RunChart
from .metrics import UNVALIDATED, MetricsReader

MAX_POINTS = 512
MAX_MARKS = 1000  # resume points, diverged epochs: the newest kept
PLACEHOLDER = -1.0
VALIDATION_PREFIXES = ("metrics/", "val/")


def stride_for(rows: int, max_points: int = MAX_POINTS) -> int:
    """The smallest power of two that keeps at most `max_points` of `rows` (with the last)."""
    stride = 1
    while _kept(rows, stride) > max_points and stride < rows:
        stride *= 2
    return stride


def _kept(rows: int, stride: int) -> int:
    """len(sampled(rows, stride)): every stride-th row, and the last when it is not one."""
    if rows <= 0:
        return 0
    return (rows - 1) // stride + 1 + (1 if (rows - 1) % stride else 0)


def sampled(rows: int, stride: int) -> list[int]:
    """The kept row indices: every `stride`-th from the first, and the last."""
    if rows <= 0:
        return []
    keep = list(range(0, rows, stride))
    if keep[-1] != rows - 1:
        keep.append(rows - 1)
    return keep


def honest(value: float, validated: bool = True) -> float | None:
    """One value as a chart point, or None for a gap."""
    if value != value or value == PLACEHOLDER or not validated or math.isinf(value):
        return None
    return value


def needs_validation(name: str) -> bool:
    return name.startswith(VALIDATION_PREFIXES)


def attempt_starts(row_epochs: Sequence[int], attempts: Sequence) -> tuple[int, ...]:
    """The first epoch of each attempt after the first, from how many metrics rows each
    attempt wrote (RunInfo.attempts, core.records.attempts) and the epochs of every row in
    file order (MetricsReader.row_epochs): it also sees a resume that went on at the next
    epoch, which the rows alone do not. () when an attempt's row count is not known."""
    out: list[int] = []
    at = 0
    for attempt in attempts[:-1]:
        if attempt.epochs is None:
            return ()
        at += attempt.epochs
        if at >= len(row_epochs):
            break
        out.append(row_epochs[at])
    return tuple(out)


def attempts_time(
    epochs: Sequence[int],
    spent: Sequence[float],
    row_epochs: Sequence[int],
    row_seconds: Sequence[float],
    attempts: Sequence,
) -> tuple[float, ...]:
    """The time spent up to each kept epoch (`epochs`, `spent`: a RunChart's) with every
    earlier attempt counted whole: an epoch of attempt k is at the sum of the seconds of
    attempts 0..k-1 plus attempt k's rows' `time` up to it. `spent` unchanged when the
    attempts do not account for every row (an attempt's rows or seconds unknown)."""
    if not spent or len(spent) != len(epochs) or len(attempts) < 2:
        return tuple(spent)
    counts = [a.epochs for a in attempts]
    if any(c is None for c in counts) or sum(counts) != len(row_epochs):
        return tuple(spent)
    # each row's offset: the earlier attempts' whole seconds minus their rows' time
    where: dict[int, float] = {}  # epoch -> the offset of the row that kept it (the last)
    base: float | None = 0.0
    first = 0
    for attempt in attempts:
        n = attempt.epochs
        if n:
            if base is None:  # an earlier attempt's time is unknown
                return tuple(spent)
            before = row_seconds[first - 1] if first else 0.0
            for r in range(first, first + n):
                where[row_epochs[r]] = base - before
            first += n
        base = base + attempt.seconds if base is not None and attempt.seconds is not None else None
    return tuple(s + where.get(e, 0.0) for e, s in zip(epochs, spent, strict=True))


def honest_chart(
    reader: MetricsReader,
    run_dir: str,
    names: Iterable[str],
    max_points: int = MAX_POINTS,
) -> RunChart:
    """The series `names` of the run (names it has no column of are left out), its epochs,
    time spent, resume points and diverged epochs. Marks that need more than the rows
    (checkpoints, pushes) and the config are core.picture.charts'."""
    rows = reader.row_count
    stride = stride_for(rows, max_points)
    keep = reader.positions(sampled(rows, stride))  # where the reader keeps those rows
    epochs = reader.epochs()
    flags = reader.row_flags()
    series = []
    for name in dict.fromkeys(names):
        column = reader.column(name)
        if column is None or name == "epoch":
            continue
        check = needs_validation(name)
        values = tuple(honest(column[i], not (check and flags[i] & UNVALIDATED)) for i in keep)
        series.append(ChartSeries(name=name, values=values))
    spent = reader.spent()
    diverged = reader.diverged_epochs()[-MAX_MARKS:]
    return RunChart(
        run_dir=run_dir,
        epochs=tuple(epochs[i] for i in keep),
        spent_seconds=tuple(spent[i] for i in keep) if reader.time_rows else (),
        series=tuple(series),
        columns=tuple(reader.numeric_columns()),
        resumes=tuple(reader.resume_points[-MAX_MARKS:]),
        diverged=tuple(diverged),
        rows=rows,
        stride=stride,
        time_total=reader.time_total if reader.time_rows else None,
        problem=None if rows else (reader.problem or "no metrics rows yet"),
    )
