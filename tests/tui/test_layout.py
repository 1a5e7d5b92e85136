"""Layout with 1, 2, 4 and 8 GPUs at 80x24 and 160x48: nothing overlaps or is cut."""

from __future__ import annotations

import itertools
import re

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Footer, Static

from rgpu_tui.tui.widgets.gpus import GpuPane
from rgpu_tui.tui.widgets.lines import LinePane
from rgpu_tui.tui.widgets.log_pane import LogPane
from rgpu_tui.tui.widgets.metrics import MetricsPane
from rgpu_tui.tui.widgets.run_header import RunHeader
from rgpu_tui.tui.widgets.runs_list import RunsList

from .helpers import make_app, wait_for

PANES = (GpuPane, RunsList, RunHeader, MetricsPane, LogPane, Footer)


@pytest.mark.parametrize(
    ("gpus", "size"), list(itertools.product([1, 2, 4, 8], [(80, 24), (160, 48)]))
)
async def test_every_pane_visible_and_no_row_cut(runs_root, gpus, size):
    app = make_app(runs_root, gpus=gpus)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        screen = app.screen.region
        regions = {cls.__name__: app.query_one(cls).region for cls in PANES}
        for name, region in regions.items():
            assert region.area > 0, f"{name} is not visible"
            assert screen.contains_region(region), f"{name} is off screen: {region}"
        for (a, ra), (b, rb) in itertools.combinations(regions.items(), 2):
            assert not ra.overlaps(rb), f"{a} {ra} overlaps {b} {rb}"

        pane = app.query_one(GpuPane)
        lines = pane.build_rows(pane.size.width)
        assert pane.region.height == len(lines)  # every GPU row is on screen
        assert len(lines) >= 1 + gpus
        width = pane.content_region.width
        for line in lines:
            text = line.plain
            assert len(text) <= width, f"cut at {width}: {text!r}"
        # the GPU rows (from 120 columns a health row goes under each of up to 4 GPUs)
        rows = [line.plain for line in lines[1:] if not line.plain.startswith("   ")][:gpus]
        for i, row in enumerate(rows):
            assert re.match(rf"\s*{i} RTX 4090 ", row), row
            # utilisation, memory, temperature and power are whole numbers with units
            assert re.search(r"\d+%\s+\d+\.\d/24G\s+\d+C\s+\d+W", row), row
        assert "simulated" in lines[0].plain
        # the rest of the screen still shows the run: header lines and at least one log line
        assert app.query_one(RunHeader).region.height >= 3
        assert app.query_one(LogPane).region.height >= 3
        assert app.query_one(RunsList).region.height >= 3


class _Bars(LinePane):
    """Three rows as wide as the pane, like the run header's progress bar."""

    DEFAULT_CSS = "_Bars { height: auto; width: 48; }"

    def build_rows(self, width: int) -> list[Text]:
        return [Text("#" * width) for _ in range(3)]


class _BarsApp(App):
    def compose(self) -> ComposeResult:
        self.bars = _Bars()
        self.bars.repaint_rows()  # before the first layout: built for 80 columns
        yield self.bars
        yield Static("below", id="below")


async def test_an_auto_height_pane_is_as_tall_as_its_rows_at_its_width():
    """Rows built before the pane had a size (80 columns) used to be measured wrapped at
    its real width: a 48-column run header three rows long laid out four tall, with a
    blank row that stayed (it showed up in CI's screenshots under load)."""
    app = _BarsApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.bars.size == (48, 3)
        assert app.query_one("#below").region.y == 3
        assert [len(r.plain) for r in app.bars._rows] == [48] * 3  # rebuilt at its width
