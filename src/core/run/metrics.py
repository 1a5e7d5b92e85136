"""The metric history of a run, read incrementally.

metrics.jsonl (one JSON object per epoch, written by every libreyolo family)
is preferred; results.csv (same columns, some families only) is the fallback.
Only the bytes appended since the previous poll are parsed. An unfinished last
line waits for its newline; malformed lines are skipped and counted; a file
truncated or replaced is read again from the start. After a resume an epoch can
appear again: the later row wins (every row from that epoch on is dropped).

What is read stays bounded whatever the file holds (core.run.thin_rows): every row of a
file of up to 3,072 rows (more epochs than a real run has), and past that the newest
1,024 rows and one in `stride` of the older ones (a power of two: the rows a chart of
core.run.series samples), as compact arrays (8 bytes a value); at most MAX_COLUMNS
columns. Last, min, max and best are running aggregates over every row, exact after a
resume too (the rows before the kept ones are folded into a base as they are thinned);
a resume that goes back past the newest 1,024 rows of a longer file recomputes them from
the kept rows (within `stride` rows of exact).

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
from .thin_rows import RowThinner, RowView

MAX_METRICS_LINE = 1024 * 1024  # a real row is ~1.5 KB; longer lines are malformed
READ_BATCH = 1024 * 1024  # bytes parsed at a time (4 MB held ~14 MB of lines at once)
NAN = float("nan")
MAX_RESUME_POINTS = 1000  # a file resumed more often keeps the newest
MAX_DIVERGED = 1000  # diverged epochs: the newest kept
MAX_COLUMNS = 512  # keys of the rows: those past it are not read
MAX_BY_EPOCH = 4096  # CheckpointRows.by_epoch: the epochs written last kept
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
        self.by_epoch: dict[int, tuple] = {}  # epoch -> (name, metric): epoch_N.pt (bounded)
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
            self.by_epoch.pop(epoch, None)  # the newest epochs are the last keys
            self.by_epoch[epoch] = (current, value)
            if len(self.by_epoch) > 2 * MAX_BY_EPOCH:  # the newest MAX_BY_EPOCH at least
                self.by_epoch = dict(list(self.by_epoch.items())[-MAX_BY_EPOCH:])


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
        # the kept rows (core.run.thin_rows) and, parallel to them, their epochs and values
        self._kept = RowThinner()
        self._epochs = array("q")
        self._values: dict[str, array] = {}
        self._last_row: dict = {}
        self._seen: set[str] = set()
        # per numeric column: [last, min, max, best, best_epoch, direction], O(1) per row
        self._running: dict[str, list] = {}
        self._base: dict[str, list] = {}  # the same over the rows before _kept.boundary
        self._stats_dirty = False  # a resume dropped rows: recompute (base + kept rows)
        self._diverged: list[int] = []  # epochs whose loss was null or not finite
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
        # running sums of the finite `time` (seconds the epoch took) and of the rows with one;
        # thinned like the kept rows, each seen as every row's (RowView), the rows where an
        # attempt began again and the rows before them always kept
        self._log = RowThinner()
        self._log_epochs = array("q")
        self._log_seconds = array("d")
        self._log_timed = array("q")
        self.row_epochs = RowView(self._log, self._log_epochs)
        self.row_seconds = RowView(self._log, self._log_seconds)
        self.row_timed = RowView(self._log, self._log_timed)
        self.row_repeats: list[int] = []  # the rows whose epoch is not after the previous
        self._time_total = 0.0
        self._time_rows = 0

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
        if new_attempt(self._epochs[-1] if self._epochs else None, epoch):
            self._resume_at(epoch)  # a resumed run writes this epoch again: the later row wins
        n = len(self._epochs)
        self._epochs.append(epoch)
        took = checked(row.get("time"), DURATIONS)[0]
        self._log_row(epoch, took)
        self._spent.append(self.time_total)
        flags = UNVALIDATED if row.get("validated") is False else 0
        appended = 0
        for key, value in row.items():
            if key not in self._seen:
                if len(self._seen) >= MAX_COLUMNS:
                    continue
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
        if flags & DIVERGED:
            self._diverged.append(epoch)
            if len(self._diverged) > 2 * MAX_DIVERGED:
                del self._diverged[:-MAX_DIVERGED]
        self._last_row = row
        self._stats = None
        self.checkpoint_rows.add(row)
        if self._kept.append():
            self._compact_kept()

    def _resume_at(self, epoch: int) -> None:
        """Drop the kept rows from `epoch` on (a resume writes them again)."""
        keep = bisect_left(self._epochs, epoch)
        kept = self._kept
        if keep < len(self._epochs):
            at = kept.index[keep]
            if keep == 0 or kept.index[keep - 1] == at - 1:
                count = at  # the rows before it are all kept: exact
            else:  # a thinned stretch: as many rows as epochs up to `epoch`, at most
                prev = kept.index[keep - 1]
                count = prev + 1 + max(0, min(epoch - self._epochs[keep - 1] - 1, at - prev - 1))
        else:
            count = kept.count
        exact = count >= kept.boundary
        del self._epochs[keep:]
        for values in self._values.values():
            del values[keep:]
        del self._spent[keep:]
        del self._flags[keep:]
        kept.truncate(keep, count)
        if not exact:  # the base held rows now dropped: rebuilt from the kept rows
            self._base = self._fold(range(len(self._epochs)), {})
        self._stats_dirty = True
        self._diverged = [e for e in self._diverged if e < epoch]
        points = [p for p in self.resume_points if p < epoch]  # now overwritten
        points.append(epoch)
        self.resume_points = points[-MAX_RESUME_POINTS:]

    def _compact_kept(self) -> None:
        rows = self._kept.index  # before: compact puts a new array in its place
        keep, before, boundary = self._kept.compact()
        # the rows that leave the exact stretch are folded into the base first
        lo, hi = bisect_left(rows, before), bisect_left(rows, boundary)
        self._base = self._fold(range(lo, hi), self._base)
        _take(self._epochs, keep)
        for values in self._values.values():
            _take(values, keep)
        _take(self._spent, keep)
        _take(self._flags, keep)

    def _fold(self, positions, base: dict[str, list]) -> dict[str, list]:
        """`base` (running aggregates per column) with the kept rows at `positions` folded
        in, in order."""
        out = {name: list(r) for name, r in base.items()}
        for name, values in self._values.items():
            running = out.get(name)
            if running is None:
                running = out[name] = _new_running(name)
            for p in positions:
                v = values[p]
                if v == v:
                    _update_running(running, v, self._epochs[p])
        return out

    def _log_row(self, epoch: int, took: float | None) -> None:
        """Every row read, in file order (see _clear)."""
        log = self._log
        if new_attempt(self._log_epochs[-1] if self._log_epochs else None, epoch):
            row = log.count
            self.row_repeats.append(row)
            log.pin(row - 1)  # an attempt's sums end there: kept exact
            log.pin(row)
            if len(self.row_repeats) > MAX_RESUME_POINTS:
                old = self.row_repeats.pop(0)
                log.unpin(old - 1)
                log.unpin(old)
        self._time_total += took or 0.0
        self._time_rows += took is not None
        self._log_epochs.append(epoch)
        self._log_seconds.append(self._time_total)
        self._log_timed.append(self._time_rows)
        if log.append():
            keep = log.compact()[0]
            _take(self._log_epochs, keep)
            _take(self._log_seconds, keep)
            _take(self._log_timed, keep)

    # -- results -----------------------------------------------------------

    @property
    def row_count(self) -> int:
        """The rows of the history (a resume's rewritten epochs counted once)."""
        return self._kept.count

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
        return self._time_total

    @property
    def time_rows(self) -> int:
        """How many rows read had a usable `time`."""
        return self._time_rows

    @property
    def kept_rows(self) -> int:
        """How many rows the arrays hold (row_count while the file is short; bounded)."""
        return len(self._epochs)

    def epochs(self) -> array:
        """The epoch of each kept row, ascending (a copy)."""
        return array("q", self._epochs)

    def positions(self, rows) -> list[int]:
        """The positions in the arrays (epochs, column, spent, row_flags) of the rows
        numbered `rows` (0 to row_count - 1, ascending), each the row itself when kept,
        else the nearest kept row before it; a position is given once."""
        kept = self._kept
        return list(dict.fromkeys(kept.position(i) for i in rows))

    def diverged_epochs(self) -> list[int]:
        """The epochs whose loss was null or not finite, the newest MAX_DIVERGED."""
        return self._diverged[-MAX_DIVERGED:]

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
            # rows were dropped by a resume: recompute once, the base and the exact rows
            start = bisect_left(self._kept.index, self._kept.boundary)
            self._running = self._fold(range(start, len(self._epochs)), self._base)
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


def _take(values: array, keep: list[int]) -> None:
    """Keep the items at positions `keep` (ascending), in place (views hold the array)."""
    values[:] = array(values.typecode, [values[p] for p in keep])


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
