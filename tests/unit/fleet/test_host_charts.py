"""A chart from a host, checked as a whole (core.fleet.host_ranges.whole_chart): a real
run's chart (the fixture's metrics, through the Collector and its JSON), altered as a
hostile agent would, read back with snapshot_from_json and drawn by chart_rows and the
compare table. Each alteration crashed the draw or meant nothing before; now the chart
is its run with nothing to draw and the reason, and the good host's chart still draws."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rgpu_tui.core.fleet.host_ranges import NOT_WHOLE, host_snapshot
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.charts import ChartRequest
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.chart_layout import ChartOptions, ShownRun, chart_json, chart_rows
from rgpu_tui.core.render.compare import compare_lines, compare_rows

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("host") / "runs"
    shutil.copytree(FIXTURE, root / "exp", ignore=shutil.ignore_patterns("weights", "val"))
    collector = Collector(str(root), fake_gpus=0)
    try:
        request = ChartRequest((str(root / "exp"),), ("train/loss",), True)
        snap = collector.refresh(now=2e9, charts=request)
    finally:
        collector.close()
    out = json.loads(json.dumps(snapshot_to_json(snap)))
    assert out["charts"] and out["charts"][0]["epochs"] == [1, 2, 3]
    return out


def drawn(doc: dict) -> tuple[list, str]:
    snap = host_snapshot(doc)
    [chart] = snap.charts
    runs = [ShownRun(chart.run_dir, "exp", chart, price_per_hour=2.0)]
    for kind in ("epoch", "time", "cost"):
        for smooth in (0.0, 0.6):
            for y_mode in ("linear", "robust", "log"):
                options = ChartOptions(smooth=smooth, x_kind=kind, y_mode=y_mode, cursor=2)
                rows = chart_rows(runs, options, 120, 40)
                chart_rows(runs, ChartOptions(smooth=smooth, x_kind=kind), 120, 40)
    json.dumps(chart_json(runs, ChartOptions()), allow_nan=False, default=str)
    text = "\n".join(line for line, _style in compare_lines(*compare_rows(runs)))
    return rows, text + (chart.problem or "")


def altered(doc: dict, change) -> dict:
    bad = json.loads(json.dumps(doc))
    change(bad["charts"][0])
    return bad


def test_a_real_chart_passes_whole(doc):
    rows, text = drawn(doc)
    assert NOT_WHOLE not in text and "loss" in "".join(r[0] for r in rows)


def _series(c, n):
    c["series"][0]["values"] = c["series"][0]["values"][:1] * n


HOSTILE = {
    "series longer than its epochs": (lambda c: _series(c, 5), "has 5 values for 3 epochs"),
    "series shorter than its epochs": (lambda c: _series(c, 1), "has 1 values for 3 epochs"),
    "stride 0": (lambda c: c.update(stride=0), "stride 0 for"),
    "negative rows": (lambda c: c.update(rows=-3), "rows -3 for 3 epochs"),
    # (10^300 is no 64-bit integer: snapshot_from_json's typing drops it, as unknown)
    "saved 10^18": (lambda c: c.update(saved=[10**18]), "saved epoch out of range"),
    "best_epoch 10^18": (lambda c: c.update(best_epoch=10**18), "best_epoch out of range"),
    "20,000 columns": (
        lambda c: c.update(columns=[f"m/{i}" for i in range(20_000)]),
        "20000 columns",
    ),
    "epochs going back": (lambda c: c.update(epochs=[3, 2, 1]), "do not increase"),
    "epoch out of range": (lambda c: c.update(epochs=[1, 2, 10**8]), "epoch out of range"),
    "times shorter": (lambda c: c.update(spent_seconds=[1.0]), "1 times for 3 epochs"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_chart_that_does_not_hold_together_is_refused_and_said(doc, case):
    change, said = HOSTILE[case]
    rows, text = drawn(altered(doc, change))
    assert NOT_WHOLE in text and said in text, text


def test_extreme_finite_values_draw(doc):
    def extreme(c):
        c["series"][0]["values"] = [1.7e308, -1.7e308, 5e-324]
        c["spent_seconds"] = [0.0, 3.1e8, 3.1e8]

    rows, text = drawn(altered(doc, extreme))
    assert NOT_WHOLE not in text and len(rows) == 40


def test_at_most_six_charts_are_kept(doc):
    many = json.loads(json.dumps(doc))
    many["charts"] = many["charts"] * 9
    assert len(host_snapshot(many).charts) == 6
