"""The chart view under Pilot (frozen clock, the fixed runs root of conftest.py): `v`, the
reading keys, the picker, marks and the compare table, and redraws only on a new epoch."""

from __future__ import annotations

import json
import re

import pytest

from rgpu_tui.core.base.config import Settings
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.charts import CompareScreen, MetricPickScreen

from .helpers import make_app, rendered, wait_for


async def open_charts(pilot) -> str:
    app = pilot.app
    await wait_for(pilot, lambda: app.snapshot is not None)
    await pilot.press("v")
    await wait_for(pilot, lambda: app.snapshot.charts and app.view.chart_view.runs)
    await pilot.pause()
    return rendered(app.view.chart_view)


def panels(text: str) -> int:
    return sum(line.count("└") for line in text.splitlines())


def titles(text: str) -> list[str]:
    """The panels' metric names, left to right, top to bottom."""
    out = []
    for line in text.splitlines():
        out += re.findall(r"(?:^|\s)((?:train|metrics|lr)/\S+|mAP\S*|precision|recall)  ", line)
    return out


@pytest.mark.parametrize(
    ("size", "least"), [((80, 24), 2), ((100, 30), 2), ((120, 40), 4), ((200, 50), 4)]
)
async def test_v_shows_as_many_panels_as_fit_and_v_again_the_log(runs_root, size, least):
    """The first page holds train/loss and the headline metric (mAP50-95, the run's
    best_metric_name) at every size, 80x24 included (it held
    train/box_loss alone there, mAP50-95 was on page 2 and train/loss on none)."""
    app = make_app(runs_root)
    async with app.run_test(size=size) as pilot:
        text = await open_charts(pilot)
        assert app.view.chart_view.display and not app.view.log_pane.display
        assert panels(text) >= least
        assert titles(text)[:2] == ["train/loss", "mAP50-95"], text
        assert "┤" in text and "✧" in text  # a y-axis; the best epoch, best.pt not pushed
        await pilot.press("v")
        await pilot.pause()
        assert app.view.log_pane.display and not app.view.chart_view.display
        assert app.collector.charts._built == {}  # closed: the refresh builds none


async def test_reading_keys(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_charts(pilot)
        await pilot.press("e")
        assert "smooth 0.6" in rendered(app.view.chart_view)
        await pilot.press("e")
        assert "smooth 0.9" in rendered(app.view.chart_view)
        await pilot.press("y")
        assert "y no outliers" in rendered(app.view.chart_view)
        await pilot.press("y")
        assert "y log" in rendered(app.view.chart_view)
        await pilot.press("x")
        text = rendered(app.view.chart_view)
        assert "x time" in text and "10m" in text  # 60 s epochs
        await pilot.press("x")
        text = rendered(app.view.chart_view)
        assert "x cost" in text and "no price for live_exp" in text  # said plainly
        await pilot.press("left")
        last = rendered(app.view.chart_view).splitlines()[-1]
        assert last.startswith("epoch 30") and "30m00s" in last
        await pilot.press("left", "left")
        assert rendered(app.view.chart_view).splitlines()[-1].startswith("epoch 28")
        await pilot.press("right")
        assert rendered(app.view.chart_view).splitlines()[-1].startswith("epoch 29")


async def test_money_on_the_x_axis_with_a_price(runs_root):
    app = make_app(runs_root, settings=Settings(price_per_hour=3.6))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_charts(pilot)
        await pilot.press("x", "x", "left")
        text = rendered(app.view.chart_view)
        assert "x cost" in text and "$1.80" in text.splitlines()[-1]  # 30 x 60 s at $3.60/h


async def test_the_picker_filters_and_adds_a_panel_first(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_charts(pilot)
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, MetricPickScreen))
        await pilot.press(*"train/lo")
        await pilot.pause()
        shown = [o.id for o in app.screen.query_one("#metrics")._options]
        assert shown == ["train/loss"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, MetricPickScreen))
        await wait_for(pilot, lambda: app.view.chart_view.runs[0].chart.metric("train/loss"))
        await pilot.pause()
        first = next(line for line in rendered(app.view.chart_view).splitlines() if "@ep" in line)
        assert first.startswith("train/loss")


async def test_marked_runs_are_overlaid_and_compared(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_charts(pilot)
        await pilot.press("space", "j", "space")  # live_exp, then failed_oom
        await wait_for(pilot, lambda: len(app.view.chart_view.runs) == 2)
        text = rendered(app.view.chart_view)
        assert "━━ live_exp" in text and "━━ failed_oom" in text
        lines = [app.view.runs_list.get_option_at_index(i).prompt.plain for i in range(3)]
        assert [line.startswith("◉") for line in lines] == [True, True, False]
        colours = {r.label: r.colour for r in app.view.chart_view.runs}
        assert len(set(colours.values())) == 2
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        body = rendered(app.screen.query_one("#body"))
        assert "live_exp" in body and "failed_oom" in body and "best mAP50-95" in body
        await pilot.press("t")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))
        await pilot.press("k", "space")  # unmark live_exp: failed_oom alone
        await wait_for(pilot, lambda: len(app.view.chart_view.runs) == 1)
        assert app.view.chart_view.runs[0].label == "failed_oom"


async def test_more_than_six_marks_are_refused(runs_root):
    for i in range(5):
        run = runs_root.root / f"extra{i}"
        run.mkdir()
        (run / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "train/loss": 1.0}) + "\n")
    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and len(app.snapshot.runs) == 8)
        for _ in range(7):
            await pilot.press("space", "j")
        assert len(app.runs.marks) == 6
        assert any("at most 6" in str(n.message) for n in app._notifications)


async def test_the_view_redraws_only_on_a_new_epoch(runs_root):
    """The clock moves (the running run's elapsed time and ETA change at each refresh);
    the view draws again only when a new epoch comes."""
    ticks = iter(range(10**6))
    app = RgpuApp(
        root=str(runs_root.root),
        interval=3600.0,
        clock=lambda: runs_root.now + next(ticks),
        fake_gpus=2,
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await open_charts(pilot)
        draws = app.view.chart_view.draws
        elapsed = app.snapshot.selected_run.elapsed_seconds
        for _ in range(3):  # refreshes that find nothing new but the time
            before = app.snapshot
            app.request_refresh()
            await wait_for(pilot, lambda b=before: app.snapshot is not b)
        assert app.snapshot.selected_run.elapsed_seconds > elapsed
        assert app.view.chart_view.draws == draws
        row = {"epoch": 31, "time": 60.0, "train/box_loss": 0.25, "metrics/mAP50": 2.8}
        with (runs_root.root / "live_exp" / "metrics.jsonl").open("a") as f:
            f.write(json.dumps(row) + "\n")
        app.request_refresh()
        await wait_for(pilot, lambda: app.view.chart_view.runs[0].chart.epochs[-1] == 31)
        await pilot.pause()
        assert app.view.chart_view.draws == draws + 1
        assert "0.25 @ep31" in rendered(app.view.chart_view)


async def test_metric_rows_say_which_number_is_which(runs_root):
    """The numbers after a sparkline carry labels and epochs; from 40 rows the
    pane shows up to 8 metrics instead of 3."""
    from rgpu_tui.tui.widgets.metrics import MetricsPane

    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        rows = rendered(app.query_one(MetricsPane)).splitlines()
        assert len(rows) == 6  # every metric of live_exp but the bookkeeping ones
        assert rows[0].split()[0] == "train/loss"
        assert rows[0].endswith("last 0.6667 @30  min 0.6667 @30  max 20 @1")
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        rows = rendered(app.query_one(MetricsPane)).splitlines()
        assert len(rows) == 3 and rows[1].rstrip().endswith("last 1.5 @30")
