"""SVG snapshots of the app at 80x24 and 160x48 with a frozen clock.

Update after an intended change of the screen with:
    pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from .helpers import make_app, wait_for


async def _loaded(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.snapshot is not None)
    # the log scrolls to its end after the layout pass: on a busy machine that is a frame
    # or two later
    await wait_for(pilot, lambda: pilot.app.log_pane.is_vertical_scroll_end)
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_running_run(snap_compare, runs_root, size):
    assert snap_compare(make_app(runs_root), terminal_size=size, run_before=_loaded)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_failed_run_selected(snap_compare, runs_root, size):
    async def select_failed(pilot):
        await _loaded(pilot)
        await pilot.press("j", "enter")
        await wait_for(pilot, lambda: pilot.app.selected.endswith("failed_oom"))
        await wait_for(pilot, lambda: pilot.app.snapshot.selected.run_dir == pilot.app.selected)
        await wait_for(pilot, lambda: pilot.app.log_pane.is_vertical_scroll_end)
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=size, run_before=select_failed)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_eight_gpus(snap_compare, runs_root, size):
    assert snap_compare(make_app(runs_root, gpus=8), terminal_size=size, run_before=_loaded)


def test_help_screen(snap_compare, runs_root):
    async def open_help(pilot):
        await _loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(runs_root), terminal_size=(80, 24), run_before=open_help)
