"""metrics.MetricsReader and metric_direction."""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest

from rgpu_tui.core.run.metrics import (
    MAX_METRICS_LINE,
    READ_BATCH,
    MetricsReader,
    metric_direction,
)

from ..helpers import SAMPLE_RUN

LOSS = "train/loss"
MAP = "metrics/mAP50-95"
LR = "lr/group0"


def row(epoch: int, loss: float, m: float, **extra) -> dict:
    return {"epoch": epoch, LOSS: loss, MAP: m, LR: 0.01, "validated": True, **extra}


def line(r: dict) -> bytes:
    return (json.dumps(r) + "\n").encode()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def jsonl(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b"".join(line(r) for r in rows))
    return path


def test_no_source_yet_is_a_problem_not_an_error(tmp_path: Path) -> None:
    reader = MetricsReader(str(tmp_path))
    assert reader.poll() is True
    assert reader.source is None
    assert reader.problem == "no metrics.jsonl or results.csv yet"
    assert reader.row_count == 0 and reader.last_epoch is None
    assert reader.poll() is False


def test_torn_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    second = line(row(2, 4.0, 0.2))
    path.write_bytes(line(row(1, 5.0, 0.1)) + second[:17])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.source == "metrics.jsonl"
    assert reader.row_count == 1 and reader.last_epoch == 1
    assert reader.malformed == 0

    append(path, second[17:])
    assert reader.poll() is True
    assert reader.row_count == 2 and reader.last_epoch == 2
    assert reader.series(LOSS) == (5.0, 4.0)
    assert reader.malformed == 0


def test_malformed_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(
        line(row(1, 5.0, 0.1))
        + b"this is not json\n"
        + b'{"epoch": 2, "train/loss": \n'
        + b"\n"  # blank lines are not rows, and not malformed either
        + line(row(2, 4.0, 0.2))
    )
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.malformed == 2
    assert reader.row_count == 2
    assert reader.series(LOSS) == (5.0, 4.0)


def test_non_object_json_lines_are_malformed(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(
        line(row(1, 5.0, 0.1)) + b'[1, 2]\n"x"\n3\nnull\ntrue\n' + line(row(2, 4.0, 0.2))
    )
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.malformed == 5
    assert reader.row_count == 2
    assert reader.last_epoch == 2


def _check_resumed(reader: MetricsReader) -> None:
    assert reader.row_count == 4
    assert reader.last_epoch == 4
    assert reader.series(LOSS) == (5.0, 4.0, 3.0, 2.0)
    assert reader.series(MAP) == (0.1, 0.2, 0.3, 0.25)
    stats = reader.stats()
    loss = stats[LOSS]
    # the superseded epoch-2/3 values (1.0, 0.5 / 0.9, 0.95) must not count
    assert (loss.last, loss.min, loss.max) == (2.0, 2.0, 5.0)
    assert (loss.best, loss.best_epoch) == (2.0, 4)
    m = stats[MAP]
    assert (m.last, m.min, m.max) == (0.25, 0.1, 0.3)
    assert (m.best, m.best_epoch) == (0.3, 3)
    assert reader.last_row[LOSS] == 2.0


FIRST = [row(1, 5.0, 0.1), row(2, 1.0, 0.9), row(3, 0.5, 0.95)]
RESUMED = [row(2, 4.0, 0.2), row(3, 3.0, 0.3), row(4, 2.0, 0.25)]


def test_resume_later_rows_win_in_one_poll(tmp_path: Path) -> None:
    jsonl(tmp_path, FIRST + RESUMED)
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    _check_resumed(reader)


def test_resume_later_rows_win_across_polls(tmp_path: Path) -> None:
    path = jsonl(tmp_path, FIRST)
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    s = reader.stats()
    assert (s[LOSS].min, s[LOSS].best_epoch, s[MAP].max, s[MAP].best_epoch) == (0.5, 3, 0.95, 3)

    append(path, b"".join(line(r) for r in RESUMED))
    assert reader.poll() is True
    _check_resumed(reader)

    # rows after the recompute are folded in incrementally again
    append(path, line(row(5, 1.5, 0.4)))
    reader.poll()
    s = reader.stats()
    assert (s[LOSS].last, s[LOSS].min, s[LOSS].best, s[LOSS].best_epoch) == (1.5, 1.5, 1.5, 5)
    assert (s[MAP].max, s[MAP].best_epoch) == (0.4, 5)
    assert reader.row_count == 5


def test_resume_from_an_earlier_epoch_drops_everything_after_it(tmp_path: Path) -> None:
    jsonl(tmp_path, FIRST + [row(1, 9.0, 0.0)])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.row_count == 1
    assert reader.series(LOSS) == (9.0,)
    s = reader.stats()[LOSS]
    assert (s.min, s.max, s.last, s.best_epoch) == (9.0, 9.0, 9.0, 1)


def test_truncated_file_is_read_again(tmp_path: Path) -> None:
    path = jsonl(tmp_path, FIRST)
    append(path, b"garbage\n")
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.row_count == 3 and reader.malformed == 1

    path.write_bytes(line(row(1, 7.0, 0.7)))  # truncated in place
    assert reader.poll() is True
    assert reader.row_count == 1
    assert reader.series(LOSS) == (7.0,)
    assert reader.malformed == 0
    assert reader.stats()[LOSS].min == 7.0


def test_replaced_file_is_read_again(tmp_path: Path) -> None:
    path = jsonl(tmp_path, FIRST)
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    tmp = tmp_path / "metrics.tmp"
    new_rows = [row(e, 10.0 + e, 0.01 * e) for e in range(1, 9)]  # larger than before
    tmp.write_bytes(b"".join(line(r) for r in new_rows))
    os.replace(tmp, path)
    assert reader.poll() is True
    assert reader.row_count == 8
    assert reader.series(LOSS) == tuple(10.0 + e for e in range(1, 9))
    assert reader.stats()[LOSS].min == 11.0


def test_results_csv_fallback(tmp_path: Path) -> None:
    if not SAMPLE_RUN.is_dir():
        pytest.skip("sample run missing")
    shutil.copy(SAMPLE_RUN / "results.csv", tmp_path / "results.csv")
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.source == "results.csv"
    assert reader.problem is None
    assert reader.row_count == 3 and reader.last_epoch == 3
    last = reader.last_row
    assert last["epoch"] == 3 and isinstance(last["epoch"], int)
    assert isinstance(last[LOSS], float) and last[LOSS] == pytest.approx(17.86728000640869)
    assert last["current_metric_name"] == "metrics/mAP50-95"
    assert last["validated"] == 1
    assert reader.malformed == 0

    # the same history as metrics.jsonl gives
    other = tmp_path / "jsonl"
    other.mkdir()
    shutil.copy(SAMPLE_RUN / "metrics.jsonl", other / "metrics.jsonl")
    ref = MetricsReader(str(other))
    ref.poll()
    assert reader.series(LOSS) == ref.series(LOSS)
    assert reader.series(MAP) == ref.series(MAP)


def test_results_csv_coercion_and_bad_rows(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text(
        "epoch,train/loss,note,metrics/mAP50\n"
        '1,2.5,"a, quoted",0.1\n'
        "2,,plain,0.2\n"  # empty field: no value
        "3,1.5,short\n"  # wrong number of fields: malformed
        "4,1e-1,x,7\n"
    )
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.row_count == 3
    assert reader.malformed == 1
    assert reader.series("train/loss") == (2.5, None, 0.1)
    assert reader.series("metrics/mAP50") == (0.1, 0.2, 7.0)
    assert reader.last_row == {"epoch": 4, "train/loss": 0.1, "note": "x", "metrics/mAP50": 7}
    assert "note" not in reader.numeric_columns()
    assert reader.columns == ["epoch", "train/loss", "note", "metrics/mAP50"]


def test_switches_to_metrics_jsonl_when_it_appears(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text("epoch,train/loss\n1,9.0\n2,8.0\n")
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.source == "results.csv"
    assert reader.series("train/loss") == (9.0, 8.0)

    jsonl(tmp_path, [row(1, 3.0, 0.1), row(2, 2.0, 0.2), row(3, 1.0, 0.3)])
    assert reader.poll() is True
    assert reader.source == "metrics.jsonl"
    assert reader.row_count == 3
    assert reader.series(LOSS) == (3.0, 2.0, 1.0)
    assert reader.stats()[LOSS].max == 3.0  # nothing left over from the csv


def test_huge_line_is_malformed_and_following_rows_survive(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(line(row(1, 5.0, 0.1)))
    reader = MetricsReader(str(tmp_path))
    reader.poll()

    huge = b'{"epoch": 2, "blob": "' + b"A" * (10 * 1024 * 1024) + b'"}'
    append(path, huge[:-10])  # torn near the end of the huge line
    tracemalloc.start()
    try:
        reader.poll()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(reader._lines.pending) <= MAX_METRICS_LINE
    assert reader.row_count == 1 and reader.malformed == 0
    assert peak < 4 * (READ_BATCH + MAX_METRICS_LINE)  # the batch and the line cap, not 10 MB

    append(path, huge[-10:] + b"\n" + line(row(2, 4.0, 0.2)) + line(row(3, 3.0, 0.3)))
    reader.poll()
    assert reader.malformed == 1
    assert reader.row_count == 3
    assert reader.series(LOSS) == (5.0, 4.0, 3.0)
    assert "blob" not in reader.columns


def test_stats_last_min_max_best(tmp_path: Path) -> None:
    jsonl(tmp_path, [row(1, 3.0, 0.1), row(2, 1.0, 0.5), row(3, 2.0, 0.3)])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    s = reader.stats()
    loss, m, lr = s[LOSS], s[MAP], s[LR]
    assert (loss.last, loss.min, loss.max, loss.best, loss.best_epoch) == (2.0, 1.0, 3.0, 1.0, 2)
    assert (m.last, m.min, m.max, m.best, m.best_epoch) == (0.3, 0.1, 0.5, 0.5, 2)
    assert (lr.last, lr.min, lr.max, lr.best, lr.best_epoch) == (0.01, 0.01, 0.01, None, None)
    assert reader.numeric_columns() == [LOSS, MAP, LR]  # epoch and bools are not series


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("train/loss", "min"),
        ("train/box_loss", "min"),
        ("val/Loss", "min"),
        ("metrics/mAP50-95", "max"),
        ("metrics/precision", "max"),
        ("current_metric", "max"),
        ("best_metric", "max"),
        ("metrics/max_det", None),
        ("metrics/AR_max_det", None),
        ("lr/group0", None),
        ("speed/inference_ms", None),
        ("time", None),
        ("epoch", None),
    ],
)
def test_metric_direction(name: str, direction: str | None) -> None:
    assert metric_direction(name) == direction


def test_series_is_capped_to_the_newest_n(tmp_path: Path) -> None:
    jsonl(tmp_path, [row(e, float(e), 0.0) for e in range(1, 201)])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.row_count == 200
    assert reader.series(LOSS) == tuple(float(e) for e in range(81, 201))  # default n=120
    assert reader.series(LOSS, n=5) == (196.0, 197.0, 198.0, 199.0, 200.0)
    assert reader.series("no/such/column") == ()
    assert reader.stats()[LOSS].min == 1.0  # stats cover the whole run, not the window


def test_nan_values_and_missing_columns(tmp_path: Path) -> None:
    rows = [
        {"epoch": 1, LOSS: 4.0},
        {"epoch": 2, LOSS: float("nan"), MAP: 0.2},
        {"epoch": 3, LOSS: 1.0, MAP: float("nan")},
        {"epoch": 4, LOSS: float("nan")},
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # json writes NaN
    assert b"NaN" in path.read_bytes()
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.series(LOSS) == (4.0, None, 1.0, None)
    assert reader.series(MAP) == (None, 0.2, None, None)
    loss = reader.stats()[LOSS]
    assert (loss.last, loss.min, loss.max, loss.best, loss.best_epoch) == (1.0, 1.0, 4.0, 1.0, 3)
    m = reader.stats()[MAP]
    assert (m.last, m.min, m.max, m.best, m.best_epoch) == (0.2, 0.2, 0.2, 0.2, 2)

    # the recomputed stats (after a resume) treat NaN the same way
    append(path, (json.dumps({"epoch": 4, LOSS: float("nan")}) + "\n").encode())
    reader.poll()
    loss = reader.stats()[LOSS]
    assert (loss.last, loss.min, loss.max, loss.best, loss.best_epoch) == (1.0, 1.0, 4.0, 1.0, 3)
    assert all(v is None or math.isfinite(v) for v in reader.series(LOSS))


def test_rows_without_epoch_are_numbered_in_order(tmp_path: Path) -> None:
    jsonl(tmp_path, [{LOSS: 3.0}, {LOSS: 2.0}, {"epoch": "x", LOSS: 1.0}])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.row_count == 3
    assert reader.last_epoch == 3
    assert reader.stats()[LOSS].best_epoch == 3


def test_cost_per_poll_is_the_appended_bytes(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [row(e, 1.0 / e, 0.01 * e) for e in range(1, 51)])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader._file is not None
    assert reader._file.bytes_read == path.stat().st_size

    for e in range(51, 56):
        new = line(row(e, 1.0 / e, 0.01 * e))
        before = reader._file.bytes_read
        append(path, new)
        assert reader.poll() is True
        assert reader._file.bytes_read - before == len(new)
        assert reader.last_epoch == e

    before = reader._file.bytes_read
    gen = reader.generation
    assert reader.poll() is False
    assert reader._file.bytes_read == before
    assert reader.generation == gen


def test_unreadable_metrics_file_is_reported(tmp_path: Path, monkeypatch) -> None:
    path = jsonl(tmp_path, [row(1, 1.0, 0.1)])
    real_open = os.open

    def fake_open(p, flags, *args, **kwargs):
        if os.fspath(p) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(p, flags, *args, **kwargs)

    reader = MetricsReader(str(tmp_path))
    with monkeypatch.context() as m:
        m.setattr(os, "open", fake_open)
        assert reader.poll() is True
        assert reader.problem == "metrics.jsonl unreadable: permission denied"
        assert reader.row_count == 0
    reader.poll()
    assert reader.problem is None
    assert reader.row_count == 1


def test_huge_line_is_malformed_even_if_its_head_parses(tmp_path: Path) -> None:
    # cut at MAX_METRICS_LINE, this line's head is valid JSON: it must not become a row
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(
        line(row(1, 5.0, 0.1))
        + line(row(2, 0.0, 1.0)).rstrip(b"\n")
        + b" " * (10 * 1024 * 1024)
        + b"\n"
        + line(row(2, 4.0, 0.2))
    )
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.malformed == 1
    assert reader.series(LOSS) == (5.0, 4.0)
    assert reader.stats()[LOSS].min == 4.0
