"""A log line costs about a line (issue 35): the terminal scrolls the log's rows and only what
changed is sent; the bytes of an update say a style once; a line cut at the pane's edge ends
with "…" (issue 29, item 10).

The updates are the app's own, rendered in order by a console as the app's driver would
write them (a headless app does not write), so the band's copy of the terminal evolves as
on a real terminal; tests/e2e/test_tmux_log_scroll.py checks the result in a real tmux."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual._compositor import CompositorUpdate
from textual.app import App
from textual.strip import Strip

from rgpu_tui.core.model.snapshot import LogView
from rgpu_tui.tui.compat import band, sgr
from rgpu_tui.tui.widgets import log_pane

from .helpers import make_app, wait_for

CUP = re.compile(r"\x1b\[(\d+);(\d+)H")
PATH = "/runs/x/train.log"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def written(monkeypatch) -> list[str]:
    """What the app would write to a truecolor terminal, one string per update."""
    out: list[str] = []
    console = Console(color_system="truecolor", force_terminal=True, legacy_windows=False)

    def display(self, screen, renderable) -> None:
        if isinstance(renderable, CompositorUpdate):
            out.append(renderable.render_segments(console))

    monkeypatch.setattr(App, "_display", display)
    band.forget()  # another test's terminal is not this one's
    return out


def rows_written(text: str, top: int, height: int) -> set[int]:
    """The screen rows (0-based) in [top, top + height) that `text` moves the cursor to."""
    return {int(m.group(1)) - 1 for m in CUP.finditer(text)} & set(range(top, top + height))


async def _shown(pilot, clock: Clock, pane, lines: tuple[str, ...]) -> None:
    clock.t += 5.0  # past LOG_PERIOD: shown at once
    pane.show(LogView(PATH, lines))
    await wait_for(pilot, lambda: pane.lines[-1] == log_pane.compact(lines[-1]))
    await pilot.pause()
    await pilot.pause()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_one_new_log_line_sends_about_one_row(runs_root, monkeypatch, written, size):
    clock = Clock()
    monkeypatch.setattr(log_pane, "time", clock)
    app = make_app(runs_root, gpus=8)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.view.log_pane
        lines = tuple(
            f"2026-12-02 12:00:{i % 60:02d} | INFO     | Epoch 3/10 [{i}/500]" for i in range(60)
        )
        await _shown(pilot, clock, pane, lines)
        lines += ("2026-12-02 12:01:00 | INFO     | warm",)
        await _shown(pilot, clock, pane, lines)  # the band's first update: sent whole
        region = pane.region
        assert region.height >= 5
        written.clear()
        lines += ("2026-12-02 12:01:01 | INFO     | Validation - mAP50: 0.5505",)
        await _shown(pilot, clock, pane, lines)
        out = "".join(written)
        assert "12:01:01 Validation - mAP50: 0.5505" in out
        rows = rows_written(out, region.y, region.height)
        # the new line's row, and the runs list's bottom border the scroll moved up
        assert len(rows) <= 2, (sorted(rows), region)
        assert len(out.encode()) < 500, out
        assert f"\x1b[{region.y + 1};{region.bottom}r\x1b[1S\x1b[r" in out

        written.clear()  # three lines at once: one scroll of three rows
        lines += tuple(f"2026-12-02 12:01:0{i} | INFO     | line {i}" for i in range(2, 5))
        await _shown(pilot, clock, pane, lines)
        out = "".join(written)
        assert f"\x1b[{region.y + 1};{region.bottom}r\x1b[3S\x1b[r" in out
        assert len(rows_written(out, region.y, region.height)) <= 4


async def test_without_the_fast_path_a_new_line_repaints_the_pane(runs_root, monkeypatch, written):
    """What the band saves: Textual's own update sends every row of the pane."""
    monkeypatch.setenv("RGPU_FAST_PATHS", "0")
    clock = Clock()
    monkeypatch.setattr(log_pane, "time", clock)
    app = make_app(runs_root, gpus=8)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.view.log_pane
        lines = tuple(f"line {i}" for i in range(60))
        await _shown(pilot, clock, pane, lines)
        written.clear()
        await _shown(pilot, clock, pane, (*lines, "one more"))
        rows = rows_written("".join(written), pane.region.y, pane.region.height)
        assert len(rows) == pane.region.height


# -- the bytes of an update --------------------------------------------------------------


def _pen(bce: bool = True) -> sgr.Pen:
    return sgr.Pen(sgr.ColorSystem.TRUECOLOR, bce)


def test_a_style_is_said_once_and_only_what_changes() -> None:
    grey = Style(color="#e0e0e0", bgcolor="#1e1e1e")
    green = Style(color="#98e024", bgcolor="#1e1e1e")
    writer = sgr.Writer(_pen())
    writer.move_to(0, 0)
    writer.segments([Segment("ab", grey), Segment("cd", grey), Segment("▌", green)])
    out = writer.text()
    assert out == (
        "\x1b[1;1H\x1b[0;38;2;224;224;224;48;2;30;30;30mabcd"
        "\x1b[38;2;152;224;36m▌\x1b[0m"  # the foreground only: the background is the same
    )
    bold = Style(bold=True, color="#e0e0e0")
    writer = sgr.Writer(_pen())
    writer.segments([Segment("x", bold), Segment("y", Style(color="#e0e0e0"))])
    assert writer.text() == "\x1b[0;1;38;2;224;224;224mx\x1b[0;38;2;224;224;224my\x1b[0m"


def test_trailing_blanks_at_the_edge_are_erased_only_where_that_looks_the_same() -> None:
    bg = Style(color="#e1e1e1", bgcolor="#1e1e1e")
    row = [Segment("epoch 3", bg), Segment(" " * 20, bg)]
    erased = sgr.Writer(_pen(bce=True))
    erased.segments(row, to_edge=True)
    assert erased.text().endswith("epoch 3\x1b[K\x1b[0m")
    kept = sgr.Writer(_pen(bce=False))  # no bce: a coloured background is painted
    kept.segments(row, to_edge=True)
    assert kept.text().endswith("epoch 3" + " " * 20 + "\x1b[0m")
    inside = sgr.Writer(_pen(bce=True))  # not at the right edge: the cells after are others'
    inside.segments(row, to_edge=False)
    assert " " * 20 in inside.text()
    reverse = sgr.Writer(_pen(bce=True))  # reverse spaces draw the foreground colour
    reverse.segments([Segment("x"), Segment(" " * 9, Style(reverse=True))], to_edge=True)
    assert " " * 9 in reverse.text()


def test_erase_with_background_is_known_from_terminfo_or_tmux() -> None:
    assert sgr.erases_with_background({"TERM": "screen-256color", "TMUX": "/tmp/t,1,0"})
    assert not sgr.erases_with_background({"TERM": "screen-256color"})  # GNU screen
    assert not sgr.erases_with_background({"TERM": "dumb"})
    assert not sgr.erases_with_background({"TERM": "no-such-terminal-xyz"})
    assert not sgr.erases_with_background({"TERM": "../../etc/passwd"})
    if shutil.which("infocmp"):  # ncurses' own reading of the same entry
        info = subprocess.run(["infocmp", "-1", "xterm-256color"], capture_output=True, text=True)
        assert sgr.erases_with_background({"TERM": "xterm-256color"}) == ("bce," in info.stdout)


def test_changed_runs_join_near_changes_and_keep_wide_characters_whole() -> None:
    s = sgr.DEFAULT
    old = [(c, s) for c in "abcdefghijklmnopqrstuvwxyz"]
    new = list(old)
    new[2] = ("X", s)
    new[5] = ("Y", s)  # 3 cells apart: one run
    new[20] = ("Z", s)  # far: a run of its own
    assert sgr.changed_runs(old, new) == [(2, 6), (20, 21)]
    assert sgr.changed_runs(None, new) == [(0, 26)]
    assert sgr.changed_runs(old, old) == []
    wide_old = [("a", s), ("数", s), ("", s), ("b", s)]
    wide_new = [("a", s), ("据", s), ("", s), ("b", s)]
    assert sgr.changed_runs(wide_old, wide_new) == [(1, 3)]


def test_best_scroll_finds_the_shift_and_only_when_it_saves_rows() -> None:
    s = sgr.DEFAULT

    def row(text: str) -> list:
        return [(c, s) for c in text.ljust(6)]

    old = [row(f"l{i}") for i in range(8)]
    new = [row(f"l{i}") for i in range(2, 10)]
    assert band.best_scroll(old, new, (0, 6)) == 2
    assert band.best_scroll(old, old, (0, 6)) == 0
    assert band.best_scroll([None] * 8, new, (0, 6)) == 0
    other = [row(f"x{i}") for i in range(8)]
    assert band.best_scroll(old, other, (0, 6)) == 0
    # beside a runs list: the rows a shift brings in are sent whole, the list's cells too;
    # a shift that brings in most rows costs more than sending the pane's cells
    left = [(c, s) for c in "|    |"]
    old = [left + row(f"a{i}") for i in range(4)]
    assert band.best_scroll(old, [left + row(f"a{i}") for i in range(1, 5)], (6, 12)) == 1
    assert band.best_scroll(old, [left + row(f"a{i}") for i in range(2, 6)], (6, 12)) == 0


# -- a cut line ends with "…" (issue 29, item 10) -------------------------------------------


@pytest.mark.parametrize("fast", ["1", "0"])
async def test_a_line_wider_than_the_pane_ends_with_an_ellipsis(runs_root, monkeypatch, fast):
    monkeypatch.setenv("RGPU_FAST_PATHS", fast)
    app = make_app(runs_root, gpus=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.view.log_pane
        width = pane.size.width
        fits = "f" * width
        long = "Checkpoint saved: /data/runs/yolo9t/weights/" + "x" * width
        wide = "数据" * width
        pane.show(LogView(PATH, (fits, long, wide)))
        await wait_for(pilot, lambda: pane.lines[-1] == wide)
        await pilot.pause()
        rows = {pane.render_line(y).text: y for y in range(pane.size.height)}
        texts = list(rows)
        assert fits in texts  # exactly the width: not cut
        cut = [t for t in texts if t.startswith("Checkpoint")]
        assert cut and cut[0].endswith("x…") and Strip([Segment(cut[0])]).cell_length == width
        cut_wide = [t for t in texts if t.startswith("数")]
        assert cut_wide and cut_wide[0].rstrip().endswith("…")
