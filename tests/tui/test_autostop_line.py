"""The app's autostop line under Pilot: the watcher's countdown (a real core Autostop writes
the plan, as `rgpu-tui watch` does), `a` cancelling it for the session (the watcher sees the
hold), --no-autostop, and the warning when no watcher would run the command."""

from __future__ import annotations

import os
import sys

import pytest

from rgpu_tui.core.away.autostop import Autostop
from rgpu_tui.core.away.events import EventEngine
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.model.snapshot import CostView, Snapshot
from rgpu_tui.core.records.autostop_files import AutostopFiles, someone_holds
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.widgets.autostop import AutostopLine

from .helpers import make_app, rendered, wait_for

SETTINGS = Settings(autostop_command=(sys.executable, "-c", "pass"), autostop_idle_minutes=5.0)


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def watcher(runs_root) -> Autostop:
    """The root's watcher autostop, 30 s into an idle stretch at the app's clock."""
    autostop = Autostop(
        SETTINGS, str(runs_root.root), [].append, engine=EventEngine(SETTINGS, pushes=False)
    )
    look(autostop, runs_root)
    return autostop


def look(autostop: Autostop, runs_root) -> str:
    autostop.step(
        Snapshot(
            generated_at=runs_root.now,
            root=str(runs_root.root),
            root_exists=True,
            runs=(),
            selected=None,
            cost=CostView(configured=False, idle_now_seconds=30.0),
        )  # fmt: skip
    )
    return autostop.phase


def line(app) -> str:
    return rendered(app.query_one(AutostopLine))


async def test_the_countdown_and_a_cancelling_it_for_the_session(runs_root):
    autostop = watcher(runs_root)
    try:
        app = make_app(runs_root)
        async with app.run_test(size=(100, 30)) as pilot:
            want = (
                f"autostop in 4m30s: no runs and no weights under {runs_root.root} (is that "
                "the folder that holds them?) — a cancels"
            )
            assert len(want) > 98  # the line is narrower: the message is cut, not the key
            head = want.removesuffix(" — a cancels")
            await wait_for(pilot, lambda: line(app).endswith("… — a cancels"))
            shown = line(app).removesuffix("… — a cancels")
            assert len(line(app)) <= 98 and head.startswith(shown)
            assert head[len(shown)] == " "  # cut where a word ends
            await pilot.resize_terminal(max(200, len(want) + 4), 30)  # a long temp path fits
            await wait_for(pilot, lambda: line(app) == want)
            assert app.query_one(AutostopLine).display
            await pilot.press("a")
            hold = AutostopFiles.for_root(str(runs_root.root)).hold
            assert someone_holds(hold)
            assert look(autostop, runs_root) == "held_by_app"  # the watcher holds off
            await wait_for(pilot, lambda: "cancelled for this session" in line(app))
            await pilot.press("a")  # back on
            assert not someone_holds(hold)
            assert look(autostop, runs_root) == "counting"
            await wait_for(pilot, lambda: line(app).startswith("autostop in "))
    finally:
        autostop.close()


async def test_no_autostop_holds_from_the_start_until_the_app_quits(runs_root):
    hold = AutostopFiles.for_root(str(runs_root.root)).hold
    app = RgpuApp(root=str(runs_root.root), interval=3600.0, clock=runs_root.clock,
                  fake_gpus=2, no_autostop=True)  # fmt: skip
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert someone_holds(hold)
    assert not someone_holds(hold)


async def test_a_plan_left_by_a_dead_watcher_is_not_shown(runs_root):
    files = AutostopFiles.for_root(str(runs_root.root))
    files.write_plan(
        {"pid": os.getpid(), "pid_started": 1.0, "phase": "counting", "fires_at": runs_root.now,
         "message": "all weights on the Hub"}
    )  # fmt: skip
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(AutostopLine)
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert widget.plan is None and line(app) == "" and not widget.display


async def test_without_a_watcher_an_idle_machine_is_told_nothing_will_stop_it(runs_root, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    app = make_app(runs_root, root=empty, gpus=None, settings=SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "no `rgpu-tui watch` runs on this root" in line(app))
    plain = make_app(runs_root, root=empty, gpus=None)  # autostop not set: nothing to say
    async with plain.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: plain.snapshot is not None)
        assert line(plain) == ""


async def test_the_seconds_while_the_notification_goes_out_are_shown_and_a_still_cancels(
    runs_root,
):
    """The watcher told `autostop` and waits for the notification before the command: the
    line says so (it was hidden), and `a` then cancels it (the watcher looks again)."""
    from rgpu_tui.core.records.autostop_files import own_start_time

    files = AutostopFiles.for_root(str(runs_root.root))
    files.write_plan(
        {"pid": os.getpid(), "pid_started": own_start_time(), "phase": "notifying",
         "fires_at": None, "message": "telling you first (notify_command)"}
    )  # fmt: skip
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        want = "autostop now: telling you first (notify_command) — a cancels"
        await wait_for(pilot, lambda: line(app) == want)
        await pilot.press("a")
        assert someone_holds(files.hold)
