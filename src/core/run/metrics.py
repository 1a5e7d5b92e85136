"""The metric history of a run, read incrementally.

metrics.jsonl (one JSON object per epoch, written by every libreyolo family)
is preferred; results.csv (same columns, some families only) is the fallback.
Only the bytes appended since the previous poll are parsed. An unfinished last
line waits for its newline; malformed lines are skipped and counted; a file
truncated or replaced is read again from the start. After a resume an epoch can
appear again: the later row wins (every row from that epoch on is dropped).

Numeric columns are kept as compact arrays (8 bytes a value) so that last, min,
max and best stay exact over the whole run, even after a resume.

For the charts (core.run.series) the reader also keeps, per kept row, the training time
spent up to it over every attempt (the sum of the rows' `time` fields, rows dropped by a
resume included) and two flags (the row says it did not validate; a loss in it is
null or not finite: diverged), and the epochs where an attempt began again
(`resume_points`, by `new_attempt`).

Values are untrusted: a NaN, an Infinity or an integer too large for a float is kept
as a gap, skipped by the stats and counted per column (`non_finite`), so one infinite
mAP cannot hide the real best; an epoch out of range (negative, 1e30, 400 digits)
counts as missing (the previous epoch + 1) and is counted too (`odd_epochs`). A line
nested deeper than core.base.values.JSON_DEPTH is malformed. A UTF-8 byte order mark
before the results.csv header is dropped.
"""

from __future__ import annotations

import csv
import math
import os
from array import array
from bisect import bisect_left
from dataclasses import dataclass

from ..base.values import DURATIONS, EPOCHS, METRIC, checked, int_or_none, num, parse_json
from .tail import IncrementalFile, LineSplitter

MAX_METRICS_LINE = 1024 * 1024  # a real row is ~1.5 KB; longer lines are malformed
READ_BATCH = 4 * 1024 * 1024
NAN = float("nan")
MAX_RESUME_POINTS = 1000  # a file resumed more often keeps the newest
UNVALIDATED = 1  # row flags (MetricsReader.row_flags)
DIVERGED = 2


def new_attempt(previous_epoch: int | None, epoch: int) -> bool:
    """A row whose epoch is not greater than the previous row's begins a new attempt (a
    resume from an earlier checkpoint writes its epochs again). The rows alone see no
    resume that continues where the last attempt stopped."""
    return previous_epoch is not None and epoch <= previous_epoch


def metric_direction(name: str) -> str | None:
    """'min' for losses, 'max' for validation metrics, None when there is no best."""
    low = name.lower()
    if "loss" in low:
        return "min"
    if low.startswith("metrics/") or low in ("current_metric", "best_metric", "fitness"):
        if "speed" in low or low.endswith("max_det"):
            return None
        return "max"
    return None


def metric_short(name) -> str | None:
    """The short name: metrics/mAP50-95 gives mAP50-95; None for anything but a string."""
    if not isinstance(name, str) or not name:
        return None
    return name.rsplit("/", 1)[-1]


class CheckpointRows:
    """What the rows say about the checkpoints, row by row in file order (a resumed run's
    earlier rows included: an epoch_N.pt written before the resume holds what its row
    said): the last row, the last row with is_best true, and each epoch's last row, each
    kept as the (epoch, metric name, metric) a checkpoint it describes would hold.
    core.run.checkpoints.epoch_metric reads them."""

    def __init__(self) -> None:
        self.last: tuple | None = None  # (epoch, name, metric) of the last row: last.pt
        self.last_best: tuple | None = None  # (best_epoch, name, best) by the last row
        self.best: tuple | None = None  # the last is_best row: best.pt
        self.by_epoch: dict[int, tuple] = {}  # epoch -> (name, metric): epoch_N.pt
        self._names: dict[str, str] = {}  # one copy of each metric name

    def _name(self, value) -> str | None:
        short = metric_short(value)
        if short is None or len(self._names) >= 64 and short not in self._names:
            return short
        return self._names.setdefault(short, short)

    def add(self, row: dict) -> None:
        epoch = int_or_none(row.get("epoch"))
        current = self._name(row.get("current_metric_name") or row.get("best_metric_name"))
        value = num(row["current_metric"] if "current_metric" in row else row.get("best_metric"))
        self.last = (epoch, current, value)
        self.last_best = (
            int_or_none(row.get("best_epoch")),
            self._name(row.get("best_metric_name")),
            num(row.get("best_metric")),
        )
        if row.get("is_best") is True:
            self.best = (
                epoch,
                self._name(row.get("best_metric_name") or row.get("current_metric_name")),
                num(row["best_metric"] if "best_metric" in row else row.get("current_metric")),
            )
        if epoch is not None:
            self.by_epoch[epoch] = (current, value)


@dataclass(frozen=True)
class ColumnStats:
    last: float | None
    min: float | None
    max: float | None
    best: float | None
    best_epoch: int | None
    last_epoch: int | None = None
    min_epoch: int | None = None  # the first epoch of the minimum
    max_epoch: int | None = None  # the last epoch of the maximum


def _coerce_csv(value: str):
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


class MetricsReader:
    """Incremental reader of one run's metrics history."""

    SOURCES = ("metrics.jsonl", "results.csv")

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.source: str | None = None
        self._file: IncrementalFile | None = None
        self._clear()
        self.problem: str | None = None
        self.generation = 0  # bumps whenever the history changes

    def _clear(self) -> None:
        self._lines = LineSplitter(MAX_METRICS_LINE)
        self.columns: list[str] = []
        self._epochs = array("q")
        self._values: dict[str, array] = {}
        self._last_row: dict = {}
        self._seen: set[str] = set()
        # per numeric column: [last, min, max, best, best_epoch, direction], O(1) per row
        self._running: dict[str, list] = {}
        self._stats_dirty = False  # a resume dropped rows: recompute from the arrays
        self._stats: dict[str, ColumnStats] | None = None
        self._csv_header: list[str] | None = None
        self.malformed = 0
        self.rows_parsed = 0
        self.non_finite: dict[str, int] = {}  # column -> NaN/Infinity/too-large values seen
        self.odd_epochs = 0  # rows whose epoch was out of range
        self.checkpoint_rows = CheckpointRows()
        # per kept row: training seconds spent up to it (every attempt), and its flags
        self._spent = array("d")
        self._flags = array("B")
        self.resume_points: list[int] = []  # first epoch of each attempt after the first
        # every row read, in file order, the rows a resume wrote again included (what the
        # attempts of a run are counted from, core.records.attempts): its epoch, and the
        # running sums of the finite `time` (seconds the epoch took) and of the rows with one
        self.row_epochs = array("q")
        self.row_seconds = array("d")
        self.row_timed = array("q")
        self.row_repeats = array("q")  # the rows whose epoch is not after the previous row's

    # -- reading -----------------------------------------------------------

    def _pick_source(self) -> str | None:
        for name in self.SOURCES:
            if os.path.exists(os.path.join(self.run_dir, name)):
                return name
        return None

    def poll(self) -> bool:
        """Parse what was appended. Returns True when the history changed."""
        source = self._pick_source()
        changed = False
        if source != self.source:
            self.source = source
            self._file = IncrementalFile(os.path.join(self.run_dir, source)) if source else None
            if self._epochs or self._last_row:
                changed = True
            self._clear()
        if self._file is None:
            problem = "no metrics.jsonl or results.csv yet"
            if problem != self.problem:
                self.problem = problem
                changed = True
            if changed:
                self.generation += 1
            return changed
        problem = None
        while True:
            result = self._file.read_new(limit=READ_BATCH)
            if result.problem:
                problem = f"{self.source} {result.problem}"
                break
            if result.reset:
                self._clear()
                changed = True
            if not result.data:
                break
            for raw in self._lines.feed(result.data):
                if self._parse_line(raw):
                    changed = True
        if problem != self.problem:
            self.problem = problem
            changed = True
        if changed:
            self.generation += 1
        return changed

    def _parse_line(self, raw: bytes) -> bool:
        if not raw.strip():
            return False
        if len(raw) >= MAX_METRICS_LINE:
            self.malformed += 1
            return False
        if self.source == "results.csv":
            row = self._parse_csv(raw)
        else:
            try:
                row = parse_json(raw)
            except ValueError:  # not JSON, or nested too deep
                row = None
            if not isinstance(row, dict):
                row = None
        if row is None:
            self.malformed += 1
            return False
        if row is _HEADER:
            return False
        self._add_row(row)
        return True

    def _parse_csv(self, raw: bytes):
        try:
            text = raw.decode("utf-8")
            fields = next(csv.reader([text]))
        except (UnicodeDecodeError, csv.Error, StopIteration):
            return None
        if self._csv_header is None:
            if fields:
                fields[0] = fields[0].removeprefix("\ufeff")  # a byte order mark
            self._csv_header = [f.strip() for f in fields]
            return _HEADER
        if len(fields) != len(self._csv_header):
            return None
        return {k: _coerce_csv(v.strip()) for k, v in zip(self._csv_header, fields, strict=True)}

    def _add_row(self, row: dict) -> None:
        self.rows_parsed += 1
        epoch, odd = checked(row.get("epoch"), EPOCHS, integer=True)
        if odd:
            self.odd_epochs += 1
        if epoch is None:
            epoch = (self._epochs[-1] + 1) if self._epochs else 1
        n = len(self._epochs)
        if new_attempt(self._epochs[-1] if n else None, epoch):
            # a resumed run writes this epoch again: the later row wins
            keep = bisect_left(self._epochs, epoch)
            del self._epochs[keep:]
            for values in self._values.values():
                del values[keep:]
            del self._spent[keep:]
            del self._flags[keep:]
            n = keep
            self._stats_dirty = True
            points = [p for p in self.resume_points if p < epoch]  # now overwritten
            points.append(epoch)
            self.resume_points = points[-MAX_RESUME_POINTS:]
        self._epochs.append(epoch)
        took = checked(row.get("time"), DURATIONS)[0]
        before = (self.row_seconds[-1], self.row_timed[-1]) if self.row_epochs else (0.0, 0)
        if new_attempt(self.row_epochs[-1] if self.row_epochs else None, epoch):
            self.row_repeats.append(len(self.row_epochs))
        self.row_epochs.append(epoch)
        self.row_seconds.append(before[0] + (took or 0.0))
        self.row_timed.append(before[1] + (took is not None))
        self._spent.append(self.time_total)
        flags = UNVALIDATED if row.get("validated") is False else 0
        appended = 0
        for key, value in row.items():
            if key not in self._seen:
                self._seen.add(key)
                self.columns.append(key)
            kind = type(value)
            if kind is float:
                num = value
            elif kind is int:
                num = float(value) if value in METRIC else NAN
            else:
                if value is None and "loss" in key:  # libreyolo writes a NaN loss as null
                    flags |= DIVERGED
                continue  # bools, strings, None: not a curve
            if not math.isfinite(num):  # NaN, Infinity, 400 digits: a gap, never a stat
                if key != "epoch":  # an odd epoch is counted as such
                    self.non_finite[key] = self.non_finite.get(key, 0) + 1
                if "loss" in key:
                    flags |= DIVERGED
                num = NAN
            values = self._values.get(key)
            if values is None:
                values = self._values[key] = array("d", [NAN]) * n
                self._running[key] = _new_running(key)
            values.append(num)
            appended += 1
            if num == num and not self._stats_dirty:
                _update_running(self._running[key], num, epoch)
        if appended != len(self._values):  # some known columns are absent from this row
            for values in self._values.values():
                if len(values) < n + 1:
                    values.append(NAN)
        self._flags.append(flags)
        self._last_row = row
        self._stats = None
        self.checkpoint_rows.add(row)

    # -- results -----------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._epochs)

    @property
    def last_row(self) -> dict:
        return dict(self._last_row)

    @property
    def last_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def time_total(self) -> float:
        """Seconds of training: the `time` of every row read, rows a resume wrote again
        included."""
        return self.row_seconds[-1] if self.row_seconds else 0.0

    @property
    def time_rows(self) -> int:
        """How many rows read had a usable `time`."""
        return self.row_timed[-1] if self.row_timed else 0

    def epochs(self) -> array:
        """The epoch of each kept row, ascending (a copy)."""
        return array("q", self._epochs)

    def column(self, name: str) -> array | None:
        """The values of a numeric column, one per kept row, NaN where the row had none
        or had a null or non-finite one (the array itself: read, do not change)."""
        return self._values.get(name)

    def spent(self) -> array:
        """Training seconds spent up to each kept row, over every attempt (the array
        itself: read, do not change)."""
        return self._spent

    def row_flags(self) -> array:
        """UNVALIDATED | DIVERGED per kept row (the array itself: read, do not change)."""
        return self._flags

    def value_problem(self) -> str | None:
        """One phrase about the odd values skipped so far, None when there were none:
        "2 non-finite values skipped (metrics/mAP50-95), 1 epoch out of range"."""
        parts = []
        if self.non_finite:
            n = sum(self.non_finite.values())
            names = list(self.non_finite)
            shown = ", ".join(names[:3]) + (f" +{len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"{n} non-finite value{'s' if n != 1 else ''} skipped ({shown})")
        if self.odd_epochs:
            n = self.odd_epochs
            parts.append(f"{n} epoch{'s' if n != 1 else ''} out of range")
        return ", ".join(parts) or None

    def numeric_columns(self) -> list[str]:
        return [c for c in self.columns if c in self._values and c != "epoch"]

    def series(self, name: str, n: int = 120) -> tuple[float | None, ...]:
        values = self._values.get(name)
        if values is None:
            return ()
        return tuple([None if v != v else v for v in values[-n:].tolist()])

    def stats(self) -> dict[str, ColumnStats]:
        """last/min/max/best per numeric column over the whole (resumed) run."""
        if self._stats_dirty:
            # rows were dropped by a resume: recompute once from the arrays
            for name, values in self._values.items():
                running = _new_running(name)
                for v, epoch in zip(values, self._epochs, strict=True):
                    if v == v:
                        _update_running(running, v, epoch)
                self._running[name] = running
            self._stats_dirty = False
            self._stats = None
        if self._stats is None:
            self._stats = {
                name: ColumnStats(
                    last=r[0],
                    min=r[1],
                    max=r[2],
                    best=r[3],
                    best_epoch=r[4],
                    last_epoch=r[6],
                    min_epoch=r[7],
                    max_epoch=r[8],
                )
                for name, r in self._running.items()
            }
        return self._stats


_HEADER = object()


def _new_running(name: str) -> list:
    """[last, min, max, best, best_epoch, direction, last_epoch, min_epoch, max_epoch]"""
    return [None, None, None, None, None, metric_direction(name), None, None, None]


def _update_running(r: list, v: float, epoch: int) -> None:
    """Fold a finite value `v` at `epoch` into r (see _new_running)."""
    r[0], r[6] = v, epoch
    if r[1] is None or v < r[1]:
        r[1], r[7] = v, epoch
    if r[2] is None or v >= r[2]:
        r[2], r[8] = v, epoch
    direction = r[5]
    if direction == "min":
        if r[3] is None or v < r[3]:
            r[3], r[4] = v, epoch
    elif direction == "max" and (r[3] is None or v >= r[3]):
        r[3], r[4] = v, epoch
