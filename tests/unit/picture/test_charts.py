"""The chart view's data and layout: RunCharts built on request (core.picture.charts), the
view's rows (core.render.chart_layout), the compare table (core.render.compare)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from support.run_dir import make_run as build_run

from rgpu_tui.core.fleet.host_ranges import host_snapshot
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.charts import ChartRequest, default_panels
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.chart_layout import (
    COLOURS,
    ChartOptions,
    ShownRun,
    chart_json,
    chart_rows,
    ema,
    panel_metrics,
    run_colours,
)
from rgpu_tui.core.render.compare import compare_json, compare_lines, compare_rows, per_point

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


def make_run(root: Path, name: str, epochs: int = 5, family: str = "yolo9", **status) -> Path:
    """A completed run of `epochs` rows with every chart's metric (support.run_dir builds it)."""
    rows = []
    for e in range(1, epochs + 1):
        rows.append(
            {
                "epoch": e,
                "time": 30.0,
                "train/loss": 10.0 / e,
                "train/box_loss": 4.0 / e,
                "train/cls_loss": 3.0 / e,
                "train/dfl_loss": 2.0 / e,
                "metrics/precision": 0.1 * e,
                "metrics/recall": 0.1 * e,
                "metrics/mAP50": 0.08 * e,
                "metrics/mAP50-95": 0.05 * e,
                "lr/group0": 0.01,
                "speed/total_ms": 12.0,
                "validated": True,
                "is_best": True,
                "best_epoch": e,
                "best_metric": 0.05 * e,
                "best_metric_name": "metrics/mAP50-95",
            }
        )
    st = {
        "state": "completed",
        "model_family": family,
        "model_size": "t",
        "total_epochs": epochs,
        "best_epoch": epochs,
        "best_metric": 0.05 * epochs,
        "best_metric_name": "metrics/mAP50-95",
        **status,
    }
    return build_run(root, name, status=st, rows=rows)


def shown(snap, run_dir: str, price=None, colour="cyan") -> ShownRun:
    info = snap.run(run_dir)
    return ShownRun(run_dir, info.name, snap.chart(run_dir), info, price, colour)


# -- building on request ------------------------------------------------------------


def test_no_request_builds_nothing_and_a_request_builds_once(tmp_path: Path) -> None:
    run = make_run(tmp_path, "a")
    c = Collector(str(tmp_path))
    assert c.refresh(time.time()).charts == ()
    request = ChartRequest.of([str(run)])
    first = c.refresh(time.time(), charts=request).charts[0]
    again = c.refresh(time.time(), charts=request).charts[0]
    assert again is first  # unchanged inputs: the same object, so the view draws nothing
    assert [s.name for s in first.series] == ["train/loss", *FIRST_YOLO9]
    with (run / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"epoch": 6, "time": 30.0, "train/box_loss": 0.5}) + "\n")
    newer = c.refresh(time.time(), charts=request).charts[0]
    assert newer is not first and newer.epochs[-1] == 6


DEFAULT_YOLO9 = (
    "train/box_loss",
    "train/cls_loss",
    "train/dfl_loss",
    "metrics/precision",
    "metrics/recall",
    "metrics/mAP50",
    "metrics/mAP50-95",
    "lr/group0",
)


# the headline metric first (it was on page 2), then the family's order
FIRST_YOLO9 = ("metrics/mAP50-95", *(n for n in DEFAULT_YOLO9 if n != "metrics/mAP50-95"))


def test_default_panels_by_family() -> None:
    cols = [*DEFAULT_YOLO9, "train/loss", "train/iou_loss", "train/obj_loss", "train/l1_loss"]
    assert default_panels("yolo9", DEFAULT_YOLO9) == FIRST_YOLO9
    assert default_panels("yolo9", cols) == ("train/loss", *FIRST_YOLO9)
    assert default_panels("yolox", cols)[:6] == (
        "train/loss",
        "metrics/mAP50-95",
        "train/iou_loss",
        "train/obj_loss",
        "train/cls_loss",
        "train/l1_loss",
    )
    # another family: its losses, the metrics, lr
    assert default_panels("rtdetr", ["train/giou_loss", "metrics/mAP50", "lr/group0"]) == (
        "train/giou_loss",
        "metrics/mAP50",
        "lr/group0",
    )
    # the run's own headline (a lower-is-better task names another) comes second
    assert default_panels("yolo9", cols, "metrics/mAP50")[:3] == (
        "train/loss",
        "metrics/mAP50",
        "train/box_loss",
    )


def test_picked_metrics_come_first_and_the_request_is_bounded(tmp_path: Path) -> None:
    run = make_run(tmp_path, "a")
    c = Collector(str(tmp_path))
    chart = c.refresh(time.time(), charts=ChartRequest.of([str(run)], ["speed/total_ms"]))
    assert chart.charts[0].series[0].name == "speed/total_ms"
    only = ChartRequest.of([str(run)], ["speed/total_ms"], defaults=False)
    assert [s.name for s in c.refresh(time.time(), charts=only).charts[0].series] == [
        "speed/total_ms"
    ]
    big = ChartRequest.of([f"/r{i}" for i in range(20)], [f"m{i}" for i in range(50)] + ["x" * 500])
    assert len(big.runs) == 6 and len(big.metrics) == 16
    with pytest.raises(ValueError):
        ChartRequest.from_json({"runs": "/etc"})


def test_marks_saved_epochs_and_best_on_the_hub_by_the_push_records(tmp_path: Path) -> None:
    run = make_run(tmp_path, "a", epochs=5)
    weights = run / "weights"
    weights.mkdir()
    for name in ("best.pt", "last.pt", "epoch_2.pt", "epoch_4.pt"):
        (weights / name).write_bytes(b"w" * 10)
    request = ChartRequest.of([str(run)])
    c = Collector(str(tmp_path))
    chart = c.refresh(time.time(), charts=request).charts[0]
    assert chart.saved == (2, 4)
    assert chart.best_epoch == 5 and chart.best_pushed is False  # never pushed
    # the push records of a successful push of this best.pt (core.hub.push writes them so)
    mtime = os.stat(weights / "best.pt").st_mtime
    record = {
        "file": "best.pt",
        "outcome": "ok",
        "size": 10,
        "epoch": 5,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(mtime + 5)),
    }
    (run / ".rgpu").mkdir()
    (run / ".rgpu" / "pushes.jsonl").write_text(json.dumps(record) + "\n")
    pushed = c.refresh(time.time(), charts=request).charts[0]
    assert pushed.best_pushed is True
    (weights / "best.pt").write_bytes(b"w" * 11)  # a newer best, not pushed
    assert c.refresh(time.time(), charts=request).charts[0].best_pushed is False


def test_charts_survive_the_json_the_agent_sends(tmp_path: Path) -> None:
    run = make_run(tmp_path, "a")
    c = Collector(str(tmp_path))
    snap = c.refresh(time.time(), charts=ChartRequest.of([str(run)]))
    doc = json.loads(json.dumps(snapshot_to_json(snap)))
    assert host_snapshot(doc).charts == snap.charts
    # a hostile document: wrong types are dropped, never raised
    doc["charts"] = [{"run_dir": 5}, {"run_dir": "/x", "epochs": "no", "series": [{"x": 1}]}, 7]
    back = host_snapshot(doc)
    assert [ch.run_dir for ch in back.charts] == ["/x"] and back.charts[0].epochs == ()


# -- reading tools ------------------------------------------------------------------


def test_debiased_ema_keeps_gaps_and_leaves_a_constant_series_raw() -> None:
    values = [10.0, None, 0.0, 0.0]
    smoothed = ema(values, 0.6)
    assert smoothed[0] == pytest.approx(10.0)  # debiased: the first point is itself
    assert smoothed[1] is None
    assert smoothed[2] == pytest.approx((0.6 * 0.4 * 10.0) / (1 - 0.6**2))
    assert ema([3.0, 3.0, None, 3.0], 0.9) == [3.0, 3.0, None, 3.0]
    assert ema([1e308, -1e308, 1e308], 0.999)  # no overflow error
    assert ema([1.0, 2.0], 0.0) == [1.0, 2.0]


def test_colours_are_stable_and_distinct() -> None:
    keys = [f"/runs/r{i}" for i in range(6)]
    colours = run_colours(keys)
    assert sorted(colours.values()) == sorted(COLOURS)
    # the colour of a run does not depend on the runs marked after it
    assert run_colours(keys[:1])[keys[0]] == colours[keys[0]]


def test_the_view_at_two_sizes(tmp_path: Path) -> None:
    a, b = make_run(tmp_path, "a", epochs=5), make_run(tmp_path, "b", epochs=8)
    c = Collector(str(tmp_path))
    snap = c.refresh(time.time(), charts=ChartRequest.of([str(a), str(b)]))
    runs = [shown(snap, str(a), 2.0, "cyan"), shown(snap, str(b), 2.0, "magenta")]
    small = chart_rows(runs[:1], ChartOptions(), 50, 16)
    assert len(small) == 16 and all(len(r[0]) <= 50 for r in small)
    assert sum("┤" in r[0] and "└" not in r[0] for r in small) >= 3
    titles = [r[0] for r in chart_rows(runs, ChartOptions(), 90, 32) if "box_loss" in r[0]]
    assert titles  # two panels a row: box_loss beside cls_loss
    wide = chart_rows(runs, ChartOptions(), 90, 32)
    panels = sum(r[0].count("└") for r in wide)
    assert panels >= 4
    assert "━━ a" in wide[1][0] and "━━ b" in wide[1][0]  # the legend
    cursor = chart_rows(runs, ChartOptions(cursor=3, smooth=0.6, x_kind="cost"), 90, 32)
    assert "epoch 3" in cursor[-1][0] and "$" in cursor[-1][0]


def test_no_price_no_money_axis_said_plainly(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a")
    snap = Collector(str(tmp_path)).refresh(time.time(), charts=ChartRequest.of([str(a)]))
    rows = chart_rows([shown(snap, str(a))], ChartOptions(x_kind="cost"), 80, 20)
    assert "no price for a" in rows[1][0]
    got = chart_json([shown(snap, str(a))], ChartOptions(x_kind="cost"))
    assert got["x"] == "epoch" and "price" in got["x_note"] and got["runs"][0]["cost"] is None


def test_hostile_metric_names_are_printable(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a")
    with (a / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"epoch": 6, "metrics/\x1b]0;pwn\x07x": 1.0}) + "\n")
    name = "metrics/\x1b]0;pwn\x07x"
    snap = Collector(str(tmp_path)).refresh(time.time(), charts=ChartRequest.of([str(a)], [name]))
    runs = [shown(snap, str(a))]
    assert name in panel_metrics(runs, ChartOptions(picked=(name,)))
    rows = chart_rows(runs, ChartOptions(picked=(name,)), 80, 30)
    text = "".join(r[0] for r in rows)
    assert "\x1b" not in text and "\x07" not in text and "^[]0;pwn^G" in text


# -- the compare table ---------------------------------------------------------------


def test_compare_names_the_hyperparameters_that_differ(tmp_path: Path) -> None:
    """One real run's train_config.yaml (the fixture's, written by libreyolo), copied and
    edited: epochs and warmup_epochs differ, name and project are where it was written."""
    a, b = make_run(tmp_path, "a", epochs=3), make_run(tmp_path, "b", epochs=5)
    config = (FIXTURE / "train_config.yaml").read_text()
    (a / "train_config.yaml").write_text(config)
    edited = config.replace("epochs: 3\n", "epochs: 5\n", 1).replace(
        "warmup_epochs: 3\n", "warmup_epochs: 1\n"
    )
    edited = edited.replace("name: cli\n", "name: other\n")
    assert edited.count("epochs: 5\n") == 1 and "warmup_epochs: 1" in edited
    (b / "train_config.yaml").write_text(edited)
    c = Collector(str(tmp_path))
    snap = c.refresh(time.time(), charts=ChartRequest.of([str(a), str(b)]))
    rows, differs = compare_rows([shown(snap, str(a), 3.6), shown(snap, str(b), 3.6)])
    assert differs == ["epochs", "warmup_epochs"]
    assert rows[0].time_s == 90.0 and rows[0].cost == pytest.approx(0.09)
    assert rows[1].best == pytest.approx(0.25) and rows[1].best_epoch == 5
    assert rows[1].per_point == pytest.approx(0.15 / 25)
    doc = compare_json(rows, differs)
    assert doc["differs"] == ["epochs", "warmup_epochs"] and len(doc["runs"]) == 2
    lines = [text for text, _style in compare_lines(rows, differs, 80)]
    assert any(line.startswith("warmup_epochs") and "3" in line and "1" in line for line in lines)
    assert all(len(line) <= 80 for line in lines)


def test_compare_without_a_price_or_a_config_says_so(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a")
    snap = Collector(str(tmp_path)).refresh(time.time(), charts=ChartRequest.of([str(a)]))
    rows, differs = compare_rows([shown(snap, str(a))])
    assert rows[0].cost is None and differs == []
    text = "\n".join(t for t, _s in compare_lines(rows, differs))
    assert "no price for a" in text and "train_config.yaml missing" in text


def test_per_point() -> None:
    assert per_point(1.0, 0.5) == pytest.approx(0.02)  # 50 points of mAP
    assert per_point(10.0, 20.0) == pytest.approx(0.5)  # a metric beyond 0..1: units
    assert per_point(1.0, 0.0) is None and per_point(None, 0.5) is None


def test_a_config_that_is_hostile_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a")
    (a / "train_config.yaml").write_text("[" * 5000)
    shutil.copy(FIXTURE / "train_config.yaml", tmp_path / "elsewhere.yaml")
    b = make_run(tmp_path, "b")
    (b / "train_config.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    snap = Collector(str(tmp_path)).refresh(time.time(), charts=ChartRequest.of([str(a), str(b)]))
    assert "not readable YAML" in snap.chart(str(a)).config_problem
    assert "outside the run" in snap.chart(str(b)).config_problem
    assert snap.chart(str(b)).config == ()


def test_a_resume_that_went_on_at_the_next_epoch_is_marked_from_the_attempts(tmp_path) -> None:
    """The chart's resume points take the run's attempts (RunInfo.attempts) as well as the
    rows: a resume from the last epoch's checkpoint writes no epoch again."""
    from rgpu_tui.core.model.snapshot import Attempt, RunInfo
    from rgpu_tui.core.picture.charts import run_chart
    from rgpu_tui.core.run.metrics import MetricsReader

    run = make_run(tmp_path, "exp", epochs=5)
    reader = MetricsReader(str(run))
    reader.poll()
    request = ChartRequest(runs=(str(run),), metrics=("train/loss",))
    alone = run_chart(reader, str(run), request, "yolo9", None)
    assert alone.resumes == ()  # epochs 1..5 once each: the rows see no resume
    attempts = (Attempt(1.0, 2.0, 2, True, 60.0, "t"), Attempt(3.0, 4.0, 3, True, 90.0, "t"))
    info = RunInfo(run_dir=str(run), name="exp", state="completed", attempts=attempts)
    assert run_chart(reader, str(run), request, "yolo9", info).resumes == (3,)


def test_resolve_metrics_takes_the_shown_name_and_offers_the_nearest():
    """The names `rgpu-tui chart --metric` takes."""
    from rgpu_tui.core.picture.charts import metric_candidates, resolve_metrics

    cols = ["time", "train/loss", "metrics/mAP50-95", "metrics/mAP50", "mAP50-95"]
    assert resolve_metrics(["mAP50", "train/loss", "metrics/mAP50"], cols) == (
        ("metrics/mAP50", "train/loss"),
        "",
    )
    assert resolve_metrics(["mAP50-95"], cols) == (("mAP50-95",), "")  # a column's own first
    names, why = resolve_metrics(["MAP50", "x"], cols[:4])
    assert names == () and why == "no metric 'MAP50' in the runs' metrics: did you mean `mAP50`?"
    _names, why = resolve_metrics(["\x1b[2Jzz"], cols[:2])
    assert why == "no metric '^[[2Jzz' in the runs' metrics: the metrics are train/loss"
    assert resolve_metrics(["anything"], []) == (("anything",), "")  # no rows yet
    assert metric_candidates(["mAP50", "metrics/AR1"]) == ("mAP50", "metrics/mAP50", "metrics/AR1")
