"""Partial repaints: a pane marks only the changed cells, Textual sends only those,
rows render as Textual would render them, and the log scrolls at most every 2 s."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._compositor import ChopsUpdate
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widgets import Log

from rgpu_tui.core.model.snapshot import LogView
from rgpu_tui.tui.compat import partial
from rgpu_tui.tui.widgets import log_pane
from rgpu_tui.tui.widgets.lines import LinePane, changed_span, row_key

from .helpers import make_app, wait_for


def key(text: str, *spans) -> tuple:
    t = Text(text)
    for start, end, style in spans:
        t.stylize(style, start, end)
    return row_key(t)


# -- which cells changed ------------------------------------------------------------


def test_changed_span_is_the_cells_that_differ() -> None:
    old = key(" 0 RTX 4090   96%  17.0/24G   69C  427W")
    new = key(" 0 RTX 4090   97%  17.0/24G   69C  430W")
    start, end = changed_span(old, new, 118)
    assert (start, end) == (15, 38)  # from the "6" of 96% to the "7" of 427W
    assert changed_span(old, old, 118) is None


def test_a_shorter_row_clears_its_old_tail() -> None:
    assert changed_span(key("updated 10s ago"), key("updated 9s ago"), 80) == (8, 15)


def test_wide_characters_repaint_the_whole_row() -> None:
    assert changed_span(key("run 数据 1"), key("run 数据 2"), 50) == (0, 50)


def test_other_styles_repaint_the_cells_they_style() -> None:
    a = key("RUN  yolo", (0, 3, "green"))
    b = key("RUN  yolo", (0, 3, "red"))
    assert changed_span(a, b, 50) == (0, 3)
    # a chart's curve that reaches two more cells: its span grows by those cells only
    old = key("  │⠉⠒⠤      ", (3, 6, "cyan"))
    new = key("  │⠉⠒⠤⣀⣀    ", (3, 8, "cyan"))
    assert changed_span(old, new, 40) == (6, 8)
    # the same text and spans split differently style the same cells: nothing to paint
    split = key("abcd", (0, 2, "red"), (2, 4, "red"))
    assert changed_span(split, key("abcd", (0, 4, "red")), 9) is None


def test_changes_beyond_the_width_are_not_repainted() -> None:
    wide = "x" * 100
    assert changed_span(key(wide + "a"), key(wide + "b"), 80) is None
    # a row that grows past the edge gets an ellipsis in the last cell
    assert changed_span(key("x" * 80), key("x" * 81), 80) == (79, 80)


# -- Textual sends only those cells ---------------------------------------------------


def _render(update: ChopsUpdate) -> str:
    console = Console(color_system="truecolor", legacy_windows=False, force_terminal=True)
    return update.render_segments(console)


def test_a_partial_update_starts_where_the_change_starts() -> None:
    strip = Strip([Segment(" "), Segment(" 0 RTX 4090 ", Style(bold=True)), Segment(" 97%  430W")])
    # " 97%" starts at column 13: the change is "7% " at columns 15-17
    update = ChopsUpdate([{0: strip}], [(0, 15, 18)], [[strip.cell_length]])
    partial.install()
    try:
        out = _render(update)
    finally:
        partial.uninstall()
    assert out.startswith("\x1b[1;16H")  # column 15, 0-based
    assert "7% " in out and "RTX" not in out and "9" not in out and "W" not in out
    textual_own = _render(update)  # Textual's: from the start of the row
    assert textual_own.startswith("\x1b[1;1H") and "RTX" in textual_own
    assert len(out) < len(textual_own)


def test_a_wide_character_is_never_split() -> None:
    strip = Strip([Segment("ab"), Segment("数据x")])
    cropped, x = partial.crop_left(strip, 0, 3)  # column 3 is the second half of 数
    assert x == 2 and cropped.text == "数据x"
    cropped, x = partial.crop_left(Strip([Segment("abcdef")]), 0, 3)
    assert x == 3 and cropped.text == "def"


# -- panes mark only the changed cells ------------------------------------------------


async def test_a_gpu_reading_repaints_only_its_cells(runs_root, monkeypatch) -> None:
    app = make_app(runs_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        pane = app.view.gpu_pane
        snap = app.snapshot
        marked: list[tuple] = []
        original = LinePane.refresh

        def spy(self, *regions, **kwargs):
            marked.append((regions, kwargs))
            return original(self, *regions, **kwargs)

        monkeypatch.setattr(LinePane, "refresh", spy)
        d1 = snap.gpus.devices[1]
        gpus = replace(
            snap.gpus, devices=(snap.gpus.devices[0], replace(d1, power_w=d1.power_w + 7))
        )
        row = 3  # the summary, GPU 0 and its health row (120 columns), then GPU 1
        before = pane._rows[row].plain
        pane.show(gpus, snap.system, snap.runs)
        after = pane._rows[row].plain
        assert len(marked) == 1
        (regions, kwargs) = marked[0]
        assert kwargs == {} and len(regions) == 1  # no layout pass, one region
        region = regions[0]
        assert region.y == row and region.height == 1  # GPU 1's row only
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert region.x == changed[0] and region.right == changed[-1] + 1
        assert region.width <= 5  # the power digits, not the row

        marked.clear()
        pane.show(gpus, snap.system, snap.runs)  # nothing new
        assert marked == []


def looks(strip: Strip) -> list[tuple]:
    """Text and what a terminal shows of each cell's style, run together."""
    cells = []
    for seg in strip:
        st = seg.style or Style()
        look = (st.color, st.bgcolor, st.bold, st.dim, st.italic, st.reverse, st.underline)
        cells.extend((ch, look) for ch in seg.text)
    return cells


async def test_rows_render_as_textual_renders_them(runs_root) -> None:
    """The quick path gives the same text and colours as Textual's own Content path."""
    app = make_app(runs_root)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("j", "enter")  # the failed run: red error rows
        await wait_for(pilot, lambda: app.view.selected.endswith("failed_oom"))
        await wait_for(pilot, lambda: app.snapshot.selected.run_dir == app.view.selected)
        await pilot.pause()
        checked = 0
        for pane in app.query(LinePane):
            style = pane.visual_style
            for row in pane._rows:
                quick = pane._quick_strip(row, pane.size.width, style)
                if quick is None:
                    continue
                own = Visual.to_strips(pane, visualize(pane, row), pane.size.width, 1, style)[0]
                assert looks(quick) == looks(own), (type(pane).__name__, row.plain)
                checked += 1
        assert checked >= 12


async def test_log_lines_render_as_textual_log_renders_them(runs_root) -> None:
    """The log's quick path gives Log's own segments, styles and selection offsets."""
    app = make_app(runs_root, gpus=None)
    async with app.run_test(size=(60, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.view.log_pane
        width = pane.size.width
        plain = ["x", "epoch 3/10 loss 1.25", "a" * (width - 1), "b" * width, "c" * 300]
        other = ["", "tab\there", "数据 loss", "bell\x07", "é"]
        pane._lines = plain + other
        style = pane.rich_style
        for index, line in enumerate(plain):
            quick = log_pane.quick_line(line, index, 0, width, style)
            own = Log._render_line(pane, index, 0, width)
            assert list(quick) == list(own), line
            assert quick.cell_length == own.cell_length == width
        for index, line in enumerate(other, start=len(plain)):
            assert log_pane.quick_line(line, index, 0, width, style) is None  # Log renders it
        assert log_pane.quick_line("x", 0, 3, width, style) is None  # scrolled sideways


# -- the log holds lines back for at most LOG_PERIOD ----------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


async def test_log_lines_are_held_back_then_shown_with_the_next_refresh(
    runs_root, monkeypatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(log_pane, "time", clock)
    app = make_app(runs_root, gpus=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.view.log_pane
        path = "/x/train.log"
        pane.show(LogView(path, ("a", "b", "c")))  # another log: at once
        assert pane.lines[-1] == "c" and pane.pending_in() is None
        clock.t += 0.5
        pane.show(LogView(path, ("a", "b", "c", "d")))
        assert pane.lines[-1] == "c"  # held back
        assert pane.pending_in() == 1.5
        clock.t += 1.5
        assert pane.pending_in() == 0
        pane.show(LogView(path, ("a", "b", "c", "d", "e")))
        assert list(pane.lines[-2:]) == ["d", "e"] and pane.pending_in() is None
        clock.t += 0.1
        pane.show(LogView("/y/train.log", ("other",)))  # switching runs is never held
        assert list(pane.lines) == ["other"]
        assert app.view.log_title.title == "log  train.log"


async def test_the_app_refreshes_sooner_when_the_log_holds_lines(runs_root) -> None:
    app = make_app(runs_root, gpus=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        first = app.snapshot
        log = runs_root.root / "live_exp" / "train.log"
        with log.open("a") as f:
            f.write("2026-12-02 12:00:00 | INFO     | one more line\n")
        app.request_refresh()
        await wait_for(pilot, lambda: app.snapshot is not first)
        # shown now, or held back and shown by a refresh within LOG_PERIOD, not in an hour
        await wait_for(
            pilot, lambda: app.view.log_pane.lines[-1].endswith("one more line"), timeout=5
        )


def test_gpu_history_buckets_are_slice_means_that_skip_gaps() -> None:
    from rgpu_tui.tui.widgets.gpus import bucket_means

    assert bucket_means((1.0, 2.0), 24) == [1.0, 2.0]  # short: as it is
    values = tuple(float(i) for i in range(48))
    assert bucket_means(values, 24) == [i * 2 + 0.5 for i in range(24)]
    gappy = (10.0, None, None, None, 30.0, 50.0)
    assert bucket_means(gappy, 3) == [10.0, None, 40.0]  # a lost GPU's gap stays a gap
