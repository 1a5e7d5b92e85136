"""The one ShownRun builder (core.render.chart_layout.shown_run) that the app's chart view,
a fleet host's and `rgpu-tui chart`/`compare` use: a run's label (its name, with its host),
its chart and the price of the snapshot's cost, the machine's price as the cost pane shows
it, not a settings value of its own. A real CPU run's files (tests/fixtures/run_completed)
read as `chart` reads them."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.picture.charts import ChartRequest, charts_once, charts_snapshot
from rgpu_tui.core.render.chart_layout import shown_run

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


def test_the_price_is_the_snapshots_and_the_label_names_the_host(tmp_path) -> None:
    run = str(shutil.copytree(FIXTURE, tmp_path / "exp_a"))
    now = time.time()
    settings = Settings(price_per_hour=3.0)
    got = charts_once([run], ChartRequest((run,), (), defaults=True), settings, now)
    snap = charts_snapshot(got, settings, now)
    shown = shown_run(run, run, snap, "cyan")
    assert (shown.label, shown.price_per_hour, shown.colour) == ("exp_a", 3.0, "cyan")
    assert shown.chart is snap.chart(run) and shown.info is snap.run(run)
    # a price_command's answer in the snapshot wins over the settings' 3.0
    priced = replace(snap, cost=replace(snap.cost, price_per_hour=7.5))
    on_host = shown_run("h1\0" + run, run, priced, "cyan", host="h1")
    assert (on_host.label, on_host.price_per_hour) == ("h1:exp_a", 7.5)
    # no chart for the run yet: nothing to show
    assert shown_run(run, run, replace(snap, charts=()), "cyan") is None
