"""One function gives a run's time and money (core.picture.cost.run_spent): compare, the
chart's time and `$` x-axis, the exporter and the cost view agree with the snapshot for a
run killed and resumed (compare summed the rows' epoch times and showed
less than every other view)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.resumed_run import EPOCH_S, killed_and_resumed

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.picture.charts import ChartRequest, charts_once
from rgpu_tui.core.picture.cost import cost_once, run_spent
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.render.chart_layout import ChartOptions, ShownRun, chart_json
from rgpu_tui.core.render.compare import compare_rows
from rgpu_tui.core.render.prometheus import families

PRICE = 3.6  # $ per hour: a dollar every 1000 s


def test_compare_chart_exporter_and_cost_give_the_snapshots_time_and_money(tmp_path: Path):
    project = tmp_path / "runs"
    t0 = time.time() - 3600
    run = killed_and_resumed(project, t0)  # launch t0..t0+53, resume t0+58..t0+75
    now = time.time()
    watcher = RunsWatcher(str(project))
    snap = watcher.refresh(now, str(run))
    info = snap.run(str(run))
    assert info is not None and len(info.attempts) == 2
    assert info.elapsed_seconds == pytest.approx(53.0 + 17.0)  # not the rows' 25 x 2.4 s
    seconds, dollars = run_spent(info, PRICE)
    assert (seconds, dollars) == (pytest.approx(70.0), pytest.approx(0.07))

    settings = Settings(price_per_hour=PRICE)
    got = charts_once([str(run)], ChartRequest.of([str(run)]), settings, now)
    cli_info, chart = got[0]
    assert cli_info.elapsed_seconds == pytest.approx(70.0)  # compare reads the records too
    shown = ShownRun(str(run), "exp", chart, cli_info, PRICE)
    row = compare_rows([shown])[0][0]
    assert (row.time_s, row.cost) == (pytest.approx(70.0), pytest.approx(0.07))

    # the chart: the resume's epochs start after the whole first attempt (53 s, its
    # start-up and the epoch the kill lost included), not after its rows' 52.8 s
    by_epoch = dict(zip(chart.epochs, chart.spent_seconds, strict=True))
    assert by_epoch[20] == pytest.approx(20 * EPOCH_S)  # the launch's, kept
    assert by_epoch[23] == pytest.approx(53.0 + 3 * EPOCH_S)
    doc = chart_json([shown], ChartOptions(x_kind="cost"))["runs"][0]
    assert doc["elapsed_seconds"] == pytest.approx(70.0)
    assert doc["spent"] == pytest.approx(0.07)
    assert doc["cost"][-1] == pytest.approx((53.0 + 3 * EPOCH_S) * PRICE / 3600)

    priced = replace(snap, cost=cost_once(settings, now, snap.runs, info))
    fams = {f.metric.name: f for f in families(priced, {})}
    elapsed = dict((labels[0], v) for labels, v in fams["rgpu_run_elapsed_seconds"].samples)
    spent = dict((labels[0], v) for labels, v in fams["rgpu_run_spent_dollars"].samples)
    assert elapsed == {"exp": pytest.approx(70.0)} and spent == {"exp": pytest.approx(0.07)}
    assert cost_once(settings, now, snap.runs, info).run_spent == pytest.approx(0.07)
