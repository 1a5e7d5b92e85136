"""The log's rows scrolled by the terminal (issue 35) show what a full repaint shows, in a real
tmux: the `rgpu-tui` console script at 120x40 and 80x24 on a live run (2 simulated GPUs
changing every second), its log grown by 1, 2 and 3 lines at a time (each a scroll of the
band of rows the log sits in, the runs list's cells beside it mended), then the rows of the
log read with `tmux capture-pane -e` (text and colours), the window resized away and back
(Textual repaints every cell), and read again: the same, cell for cell."""

from __future__ import annotations

import pytest
from support.screen_runs import append_log, build_screen_root
from support.tmux import Tmux

from e2e.test_tmux import _need_tmux, home, terminals  # noqa: F401 (fixtures)

from .test_tmux import RGPU_TUI

UI_TIMEOUT = 30.0
LOADED = "Running validation for epoch 6"


def log_rows(term: Tmux) -> list[str]:
    """The screen rows under the log's title, down to the footer, with their colours."""
    plain = term.capture().splitlines()
    coloured = term.tmux("capture-pane", "-p", "-e", "-t", term.session).splitlines()
    top = next(i for i, row in enumerate(plain) if "─ log" in row) + 1
    bottom = next(i for i, row in enumerate(plain) if row.startswith(" q Quit"))
    assert bottom - top >= 4, "\n".join(plain)
    return coloured[top:bottom]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_scrolled_log_rows_are_what_a_full_repaint_shows(terminals, home, tmp_path, size):  # noqa: F811
    _need_tmux()
    root = build_screen_root(tmp_path)
    width, height = size
    term = terminals(width, height)
    argv = [str(RGPU_TUI), str(root), "--fake-gpus", "2", "--no-autostop"]
    env = {**home, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    term.start_app(argv, tmp_path / "rc", env=env)
    term.wait_for(lambda s: "runs (3)" in s and LOADED in s, "the app", UI_TIMEOUT)
    append_log(root, [f"filling the pane {i}" for i in range(40)])
    term.wait_for("filling the pane 39", "a full log pane", UI_TIMEOUT)
    n = 0
    for step in (1, 2, 3, 1, 1, 2, 3, 1):
        lines = [f"step {n + i} of the log, a line of some length" for i in range(step)]
        n += step
        append_log(root, lines)
        term.wait_for(lines[-1], f"line {n}", UI_TIMEOUT)
    scrolled = log_rows(term)
    assert any(f"step {n - 1} of the log" in row for row in scrolled)

    term.tmux("resize-window", "-t", term.session, "-x", str(width - 7), "-y", str(height))
    term.wait_for(lambda s: max(len(r) for r in s.splitlines()) <= width - 7, "the smaller window")
    term.tmux("resize-window", "-t", term.session, "-x", str(width), "-y", str(height))
    term.wait_for(
        lambda s: "─ log" in s and f"step {n - 1} of the log" in s and s.splitlines()[0][-1:] != "",
        "the repaint",
        UI_TIMEOUT,
    )
    term.wait_for(
        lambda s: log_rows(term) == scrolled, "the same log rows after a full repaint", 10
    )
    term.send("q")
    assert term.wait_exit(UI_TIMEOUT) == 0
