"""Keys that arrive in one burst (a paste, `tmux send-keys`, a laggy SSH link) land in order
in the field that had focus when each arrived: the console script in a
real pseudo-terminal, every key of the burst in one write, with the fast paths on and off.
Before the fix `Tab End BSpace×4 7 0` put "70" into data.yaml and emptied epochs. The
chart view's metric filter is such a field too."""

from __future__ import annotations

import os

import pytest
from support.cli_env import RGPU_TUI
from support.cli_env import clean_env as _env
from support.pty_app import PtyApp
from support.vt_screen import screen_rows
from support.waiting import wait_until
from textual import events
from textual.widgets import Checkbox, Input

from rgpu_tui.tui import compat
from rgpu_tui.tui.screens.charts import MetricPickScreen
from rgpu_tui.tui.screens.launch import LaunchScreen

from .helpers import make_app, wait_for

COLS, ROWS = 100, 30
TAB, BACKTAB, END, BSPACE = "\t", "\x1b[Z", "\x1b[F", "\x7f"


@pytest.fixture(autouse=True)
def no_switch(monkeypatch) -> None:
    """The runner's RGPU_FAST_PATHS is not these tests' (each sets its own)."""
    monkeypatch.delenv(compat.ENV, raising=False)


def field(rows: list[str], label: str) -> str | None:
    """The value the form's row `label` shows ('│ epochs     70   │' -> '70')."""
    for row in rows:
        for cell in row.split("│"):
            if cell.strip().startswith(label):
                return cell.strip()[len(label) :].strip()
    return None


@pytest.mark.parametrize("switch", ["1", "0"], ids=["fast-paths-on", "fast-paths-off"])
def test_a_burst_of_keys_lands_in_the_fields_it_was_typed_for(runs_root, tmp_path, switch):
    argv = [str(RGPU_TUI), str(runs_root.root), "--fake-gpus", "1"]
    app = PtyApp(argv, _env(tmp_path, TERM="xterm-256color", RGPU_FAST_PATHS=switch), COLS, ROWS)

    def screen() -> list[str]:
        return screen_rows(app.output(), COLS, ROWS)

    def shown() -> str:
        return "\n".join(screen())

    try:
        wait_until(lambda: "runs (3)" in shown(), "the first frame", 30, shown)
        os.write(app.fd, b"n")
        # the clone's name is a run: the form offers the next free one (live_exp2)
        wait_until(lambda: field(screen(), "name") == "live_exp2", "the launch form", 30, shown)
        burst = (
            "/x/d.yaml"  # into data.yaml, the focused field (absolute: no cwd in the rows)
            + TAB + END + BSPACE * 4 + "70"  # epochs: 100 -> 70
            + TAB + END + BSPACE * 2 + "200"  # batch: -1 -> 200
            + BACKTAB + END + "5"  # back to epochs: 705
            + TAB * 5 + END + BSPACE * 4 + "abc"  # past imgsz, device, project to name
        )  # fmt: skip
        os.write(app.fd, burst.encode())  # one write: the app reads them at once

        def landed() -> bool:
            rows = screen()
            return (
                field(rows, "epochs") == "705"
                and field(rows, "batch (-1: largest that fits)") == "200"
                and field(rows, "name") == "live_abc"
                and any("data=/x/d.yaml epochs=705 batch=200" in r for r in rows)  # the command
            )

        wait_until(landed, "every key of the burst in its field", 30, shown)
        assert field(screen(), "data.yaml") == "/x/d.yaml"
        os.write(app.fd, b"\x1b")
        wait_until(lambda: field(screen(), "epochs") is None, "the form closing", 30, shown)
        assert app.quit() == 0
    finally:
        app.close()


async def test_a_burst_reaching_the_doctors_checkbox_toggles_it_and_moves_on(runs_root):
    """The keys posted to the app at once, as its driver posts a burst: the space for the
    checkbox toggles the checkbox though the tab after it moves focus on before the
    checkbox has handled it."""
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        form = app.screen
        form.query_one("#f-extra", Input).focus()
        await pilot.pause()
        doctor = form.query_one("#doctor", Checkbox)
        doctor.focus()
        await pilot.pause()
        assert doctor.content_size.height == 1  # focused, it still shows (no tall border)
        form.query_one("#f-extra", Input).focus()
        await pilot.pause()
        for key, char in [("tab", None), ("space", " "), ("tab", None)]:
            app.post_message(events.Key(key, char))  # to the doctor's box, then past it
        await wait_for(pilot, lambda: app.focused is not None and app.focused is not doctor)
        await pilot.pause()
        assert doctor.value is False


async def test_a_burst_of_edits_in_one_field_applies_in_order(runs_root):
    """No focus moves, and still: a backspace (an Input *binding*) went up to the app and
    came back after the keys typed after it, so "mapx⌫5" gave "mapx". The chart view's
    metric filter, the keys posted to the app at once as its driver posts a burst."""
    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("v")
        await wait_for(pilot, lambda: app.view.charts_open)
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, MetricPickScreen))
        field = app.screen.query_one("#filter", Input)
        keys = [(c, c) for c in "mapx"] + [("backspace", None), ("5", "5"), ("0", "0")]
        keys += [("home", None), ("delete", None), ("end", None), ("backspace", None)]
        for key, char in keys:
            app.post_message(events.Key(key, char))
        await wait_for(pilot, lambda: field.value == "ap5")
        await pilot.pause()
        assert field.value == "ap5"
