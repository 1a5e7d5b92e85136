"""Honest chart series from a run's metrics rows (core.run.series): gaps, validation,
resumes, divergence, time spent, bounded size."""

from __future__ import annotations

import json
from pathlib import Path

from rgpu_tui.core.run.metrics import MetricsReader
from rgpu_tui.core.run.series import MAX_POINTS, honest_chart, sampled, stride_for


def write_rows(run: Path, rows: list, raw_lines: list[str] = ()) -> None:
    run.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows) + "".join(raw_lines)
    (run / "metrics.jsonl").write_text(text)


def chart_of(run: Path, names):
    reader = MetricsReader(str(run))
    reader.poll()
    return reader, honest_chart(reader, str(run), names)


def row(epoch: int, **values) -> dict:
    return {"epoch": epoch, "time": 10.0, "validated": True, **values}


def test_placeholders_nulls_and_non_finite_values_are_gaps(tmp_path: Path) -> None:
    run = tmp_path / "r"
    rows = [
        row(1, **{"metrics/mAP_large": -1.0, "train/loss": 3.0}),
        row(2, **{"metrics/mAP_large": 0.25, "train/loss": None}),
        row(3, **{"metrics/mAP_large": 0.5, "train/loss": 2.0}),
    ]
    # NaN, Infinity and a 400-digit integer as Python's json writes and reads them
    raw = ['{"epoch": 4, "time": 10.0, "metrics/mAP_large": NaN, "train/loss": Infinity}\n']
    raw.append('{"epoch": 5, "time": 10.0, "metrics/mAP_large": 1' + "0" * 400 + "}\n")
    write_rows(run, rows, raw)
    _reader, chart = chart_of(run, ["metrics/mAP_large", "train/loss"])
    assert chart.epochs == (1, 2, 3, 4, 5)
    assert chart.metric("metrics/mAP_large").values == (None, 0.25, 0.5, None, None)
    assert chart.metric("train/loss").values == (3.0, None, 2.0, None, None)
    # a null loss and an infinite one: both diverged, and said at their epochs
    assert chart.diverged == (2, 4)


def test_an_epoch_that_did_not_validate_has_no_metric_point(tmp_path: Path) -> None:
    run = tmp_path / "r"
    rows = [
        row(1, **{"metrics/mAP50": 0.1, "train/box_loss": 5.0}),
        {**row(2, **{"metrics/mAP50": 0.1, "train/box_loss": 4.0}), "validated": False},
        row(3, **{"train/box_loss": 3.0}),  # no metrics at all (libreyolo's own way)
        row(4, **{"metrics/mAP50": 0.3, "train/box_loss": 2.0}),
    ]
    write_rows(run, rows)
    _reader, chart = chart_of(run, ["metrics/mAP50", "train/box_loss"])
    assert chart.metric("metrics/mAP50").values == (0.1, None, None, 0.3)
    assert chart.metric("train/box_loss").values == (5.0, 4.0, 3.0, 2.0)


def test_a_resume_keeps_the_last_row_of_each_epoch_and_marks_the_attempts(tmp_path: Path):
    run = tmp_path / "r"
    first = [row(e, **{"train/loss": 100.0 + e}) for e in range(1, 11)]  # 1..10
    second = [row(e, **{"train/loss": 200.0 + e}) for e in range(6, 13)]  # resumed at 6
    third = [row(e, **{"train/loss": 300.0 + e}) for e in range(4, 16)]  # resumed at 4
    write_rows(run, first + second + third)
    reader, chart = chart_of(run, ["train/loss"])
    assert chart.epochs == tuple(range(1, 16))
    assert chart.metric("train/loss").values == tuple(
        [101.0, 102.0, 103.0] + [300.0 + e for e in range(4, 16)]
    )
    # the resume at 6 was overwritten by the one at 4: one boundary on the final curve
    assert chart.resumes == (4,)
    # time spent counts every attempt: epoch 4 of the third attempt comes after 10 + 7
    # earlier rows and its own, 10 s each
    assert chart.spent_seconds[chart.epochs.index(4)] == (10 + 7 + 1) * 10.0
    assert chart.time_total == (10 + 7 + 12) * 10.0
    assert reader.resume_points == [4]


def test_time_missing_from_every_row_is_no_time_at_all(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write_rows(run, [{"epoch": e, "train/loss": 1.0 / e} for e in (1, 2)])
    _reader, chart = chart_of(run, ["train/loss"])
    assert chart.spent_seconds == ()
    assert chart.time_total is None


def test_a_long_run_keeps_a_bounded_sample_with_its_last_epoch(tmp_path: Path) -> None:
    run = tmp_path / "r"
    n = 5000
    write_rows(run, [row(e, **{"train/loss": 1.0 / e}) for e in range(1, n + 1)])
    _reader, chart = chart_of(run, ["train/loss"])
    assert chart.rows == n
    assert len(chart.epochs) <= MAX_POINTS
    assert chart.stride & (chart.stride - 1) == 0  # a power of two
    assert chart.epochs[0] == 1 and chart.epochs[-1] == n
    assert len(chart.metric("train/loss").values) == len(chart.epochs)
    # the kept rows change only when the stride doubles: one more row keeps the others
    assert stride_for(n + 1) == stride_for(n)
    assert sampled(n + 1, chart.stride)[:-1] == sampled(n, chart.stride)[:-1]


def test_the_stride_is_the_smallest_power_of_two_that_fits() -> None:
    """512 rows fit 512 points at stride 1 (it was 2: half the points
    thrown away); the next power of two only when the smaller one keeps too many, at
    every boundary, with the last row always kept."""
    assert stride_for(MAX_POINTS) == 1
    assert len(sampled(MAX_POINTS, 1)) == MAX_POINTS
    assert stride_for(MAX_POINTS + 1) == 2  # 513 at stride 1 is one too many
    assert len(sampled(MAX_POINTS + 1, 2)) == 257
    assert stride_for(2 * MAX_POINTS - 1) == 2  # 0, 2, ..., 1022: 512 rows, the last one of them
    assert stride_for(2 * MAX_POINTS) == 4  # 0, 2, ..., 1022 and 1023: 513
    for max_points in range(2, 12):
        for rows in range(0, 200):
            stride = stride_for(rows, max_points)
            assert stride & (stride - 1) == 0, (rows, max_points, stride)
            assert len(sampled(rows, stride)) <= max_points, (rows, max_points, stride)
            if stride > 1:  # half of it would keep too many
                assert len(sampled(rows, stride // 2)) > max_points, (rows, max_points, stride)


def test_names_the_run_lacks_are_left_out(tmp_path: Path) -> None:
    run = tmp_path / "r"
    write_rows(run, [row(1, **{"train/loss": 1.0})])
    _reader, chart = chart_of(run, ["train/loss", "metrics/nope", "epoch"])
    assert [s.name for s in chart.series] == ["train/loss"]
    assert "train/loss" in chart.columns


def test_no_rows_says_why(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    _reader, chart = chart_of(run, ["train/loss"])
    assert chart.epochs == () and chart.problem


def test_attempt_starts_see_a_resume_that_went_on_at_the_next_epoch() -> None:
    """The rows alone see a resume only when an epoch is written again; the attempts' row
    counts (core.records.attempts) see one that went on at the next epoch too."""
    from rgpu_tui.core.model.snapshot import Attempt
    from rgpu_tui.core.run.series import attempt_starts

    def attempt(epochs):
        return Attempt(None, None, epochs, True, None, "test")

    rows = [1, 2, 3, 4, 5]  # attempt 1 wrote epochs 1-2, attempt 2 went on with 3-5
    assert attempt_starts(rows, [attempt(2), attempt(3)]) == (3,)
    rows = [1, 2, 3, 2, 3, 4]  # attempt 2 resumed from epoch 1's checkpoint
    assert attempt_starts(rows, [attempt(3), attempt(3)]) == (2,)
    assert attempt_starts(rows, [attempt(None), attempt(3)]) == ()  # not known: rows alone
    assert attempt_starts(rows, [attempt(6)]) == ()  # one attempt: no resume
    assert attempt_starts(rows[:2], [attempt(2), attempt(0)]) == ()  # it wrote nothing yet
