"""What the metrics reader keeps is bounded whatever metrics.jsonl holds (1M rows
once took 268 MB), and every answer that used all the rows stays the same: stats with
their epochs, the chart's sampled rows, time spent, attempts' row counts and sums."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rgpu_tui.core.records.attempts import Rows, segments
from rgpu_tui.core.run.metrics import MetricsReader, metric_direction
from rgpu_tui.core.run.series import honest_chart, sampled, stride_for

LOSS = "train/loss"
MAP = "metrics/mAP50-95"
ROWS = 60_000
BOUND = 4096  # what the arrays may hold: 3,072 rows (core.run.thin_rows) and a few pinned


def _rows(n: int) -> list[dict]:
    """`n` rows, an epoch written again every 7,000 rows (a resume from 5 epochs back),
    a null loss now and then (diverged), a row without `time` now and then."""
    out, epoch = [], 0
    for i in range(n):
        epoch += 1
        if i and i % 7000 == 0:
            epoch -= 5
        loss = 10.0 / (1 + (i % 977)) + (i % 13) * 0.01
        r = {"epoch": epoch, "time": 1.0 + (i % 5) * 0.25, LOSS: loss, MAP: (i * 37 % 1000) / 1e3}
        if i % 9999 == 5:
            r[LOSS] = None
        if i % 4001 == 3:
            del r["time"]
        out.append(r)
    return out


def _reference(rows: list[dict]):
    """What the reader answered when it kept every row: the rows kept after each resume
    (a repeated epoch drops every row from it on), every row in file order."""
    kept: list[dict] = []
    spent = 0.0
    for r in rows:
        spent += r.get("time", 0.0)
        while kept and kept[-1]["epoch"] >= r["epoch"]:
            kept.pop()
        kept.append({**r, "spent": spent})  # time spent up to it, every attempt's
    return kept


def _stats(kept: list[dict], name: str):
    last = mn = mx = best = best_e = min_e = max_e = None
    direction = metric_direction(name)
    for r in kept:
        v, e = r.get(name), r["epoch"]
        if v is None or not math.isfinite(v):
            continue
        last = v
        if mn is None or v < mn:
            mn, min_e = v, e
        if mx is None or v >= mx:
            mx, max_e = v, e
        if direction == "min" and (best is None or v < best):
            best, best_e = v, e
        if direction == "max" and (best is None or v >= best):
            best, best_e = v, e
    return last, mn, mx, best, best_e, min_e, max_e


def test_the_reader_keeps_a_bounded_number_of_rows_with_the_same_answers(tmp_path: Path):
    rows = _rows(ROWS)
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    # bounded: what the arrays hold, not what the file holds
    assert len(reader.epochs()) <= BOUND
    assert len(reader.spent()) <= BOUND and len(reader.column(LOSS)) <= BOUND
    kept = _reference(rows)
    assert reader.row_count == len(kept)
    assert reader.last_epoch == kept[-1]["epoch"]
    for name in (LOSS, MAP):
        s = reader.stats()[name]
        got = (s.last, s.min, s.max, s.best, s.best_epoch, s.min_epoch, s.max_epoch)
        assert got == _stats(kept, name), name
    # time over every row read, and the attempts' stretches with their sums
    timed = [r["time"] for r in rows if "time" in r]
    assert reader.time_total == sum(timed) and reader.time_rows == len(timed)
    log = Rows(reader.row_epochs, reader.row_seconds, reader.row_timed, reader.row_repeats)
    assert len(log.epochs) == ROWS
    cuts = [i for i in range(1, ROWS) if rows[i]["epoch"] <= rows[i - 1]["epoch"]]
    assert list(log.repeats) == cuts
    for a, b in segments(log, ROWS):
        assert log.span_seconds(a, b) == sum(r.get("time", 0.0) for r in rows[a:b])
        assert log.span_timed(a, b) == sum("time" in r for r in rows[a:b])
        assert (log.epochs[a], log.epochs[b - 1]) == (rows[a]["epoch"], rows[b - 1]["epoch"])
    # the chart: the same sampled rows, values, epochs and time as with every row
    chart = honest_chart(reader, str(tmp_path), [LOSS, MAP])
    keep = sampled(len(kept), stride_for(len(kept)))
    assert chart.epochs == tuple(kept[i]["epoch"] for i in keep)
    assert chart.metric(MAP).values == tuple(kept[i][MAP] for i in keep)
    assert chart.spent_seconds == tuple(kept[i]["spent"] for i in keep)
    assert (chart.rows, chart.stride) == (len(kept), stride_for(len(kept)))
    diverged = [r["epoch"] for r in kept if r[LOSS] is None]
    assert list(chart.diverged) == diverged
    # the newest rows are all kept: the metrics pane's last 120 values
    assert reader.series(MAP) == tuple(r[MAP] for r in kept[-120:])


def test_a_resume_far_back_in_a_long_file_stays_bounded_and_counts_right(tmp_path: Path):
    # epochs 1..20,000, then a resume from epoch 100 that writes 100..150: the rows before
    # 100 are thinned by then, so the counts are found from the kept ones (epochs are
    # consecutive here: exactly) and the stats from the kept rows
    rows = [{"epoch": e, "time": 1.0, LOSS: 1000.0 - e / 100} for e in range(1, 20_001)]
    rows += [{"epoch": e, "time": 1.0, LOSS: 0.5} for e in range(100, 151)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert len(reader.epochs()) <= BOUND
    assert reader.row_count == 150 and reader.last_epoch == 150
    s = reader.stats()[LOSS]
    assert (s.last, s.min, s.best, s.best_epoch) == (0.5, 0.5, 0.5, 100)  # its first epoch
    assert s.max == 1000.0 - 1 / 100 and s.max_epoch == 1  # the first row is always kept
    assert reader.time_total == len(rows)
    chart = honest_chart(reader, str(tmp_path), [LOSS])
    assert chart.epochs[-1] == 150 and list(chart.epochs) == sorted(set(chart.epochs))


def test_a_file_of_repeats_and_new_keys_stays_bounded(tmp_path: Path):
    # every row writes epoch 1 again (each one a new attempt) with a key of its own
    rows = [{"epoch": 1, "time": 1.0, f"k{i}": float(i), LOSS: 1.0} for i in range(30_000)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.row_count == 1 and len(reader.epochs()) == 1
    assert len(reader.columns) <= 512  # MAX_COLUMNS: later keys are not read
    assert len(reader.row_repeats) <= 1000  # the newest attempts' starts
    assert len(reader.row_epochs) == 30_000 and reader.time_total == 30_000.0
    log_kept = reader._log.index  # the every-row log's kept rows: bounded too
    assert len(log_kept) <= BOUND
