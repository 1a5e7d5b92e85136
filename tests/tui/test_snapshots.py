"""SVG snapshots of the app at 80x24, 120x40 and 160x48 with a frozen clock.

Update after an intended change of the screen with:
    pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from .helpers import make_app, wait_for

MAIN_SIZES = [(80, 24), (120, 40), (160, 48)]
MAIN_IDS = ["80x24", "120x40", "160x48"]


async def _loaded(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.snapshot is not None)
    # the log scrolls to its end after the layout pass: on a busy machine that is a frame
    # or two later
    await wait_for(pilot, lambda: pilot.app.view.log_pane.is_vertical_scroll_end)
    await pilot.pause()


@pytest.mark.parametrize("size", MAIN_SIZES, ids=MAIN_IDS)
def test_running_run(snap_compare, runs_root, size):
    assert snap_compare(make_app(runs_root), terminal_size=size, run_before=_loaded)


@pytest.mark.parametrize("size", MAIN_SIZES, ids=MAIN_IDS)
def test_failed_run_selected(snap_compare, runs_root, size):
    async def select_failed(pilot):
        await _loaded(pilot)
        await pilot.press("j", "enter")
        await wait_for(pilot, lambda: pilot.app.view.selected.endswith("failed_oom"))
        await wait_for(
            pilot, lambda: pilot.app.snapshot.selected.run_dir == pilot.app.view.selected
        )
        await wait_for(pilot, lambda: pilot.app.view.log_pane.is_vertical_scroll_end)
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=size, run_before=select_failed)


@pytest.mark.parametrize("size", MAIN_SIZES, ids=MAIN_IDS)
def test_eight_gpus(snap_compare, runs_root, size):
    assert snap_compare(make_app(runs_root, gpus=8), terminal_size=size, run_before=_loaded)


def test_help_screen(snap_compare, runs_root):
    async def open_help(pilot):
        await _loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=(80, 24), run_before=open_help)


def test_help_screen_scrolled_to_its_end(snap_compare, runs_root):
    """At 80x24 the help is taller than the screen: `end` shows its last line."""

    async def help_end(pilot):
        await _loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=(80, 24), run_before=help_end)


async def _charts(pilot) -> None:
    await _loaded(pilot)
    await pilot.press("v")
    await wait_for(pilot, lambda: pilot.app.view.chart_view.runs)
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_chart_view(snap_compare, runs_root, size):
    """`v` on the running run: panels with axes, the best epoch marked; smoothing on and
    the cursor two epochs back."""

    async def charts(pilot):
        await _charts(pilot)
        await pilot.press("e", "left", "left")
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=size, run_before=charts)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_compare_table(snap_compare, runs_root, size):
    """Two runs marked (space) and `t`."""

    async def compare(pilot):
        await _charts(pilot)
        await pilot.press("space", "j", "space")
        await wait_for(pilot, lambda: len(pilot.app.view.chart_view.runs) == 2)
        await pilot.press("t")
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=size, run_before=compare)
