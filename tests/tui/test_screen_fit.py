"""The screen used well at 80x24 and 120x40, under Pilot: help scrolls to
its last line and says how; the footer shows whole keys only; the runs list narrows at 80
columns so the log gets the width; the run header keeps "sim GPUs 0-1"; the metrics and the
log share the rows (no empty log rows while metrics are left out); the log says whether it
follows or is paused, and how many lines came since. tests/e2e/test_tmux_screen.py checks
the same in a real terminal."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace

import pytest
from support.screen_runs import LIVE, append_log, build_screen_root
from textual.containers import VerticalScroll

from rgpu_tui.core.base.config import Settings
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.help import WHERE, HelpScreen
from rgpu_tui.tui.widgets.footer import KEY, fitting
from rgpu_tui.tui.widgets.log_pane import compact
from rgpu_tui.tui.widgets.metrics import TALL_ROWS
from rgpu_tui.tui.widgets.run_header import top_row
from rgpu_tui.tui.widgets.run_panes import LOG_MIN, shared_rows
from rgpu_tui.tui.widgets.runs_list import run_line

from .helpers import make_app, rendered, wait_for

HELP_LAST = WHERE.split()[-1]  # "results.csv.": the help's last word


async def test_help_scrolls_to_its_last_line_at_80x24_and_says_how(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        box = app.screen.query_one(VerticalScroll)
        await wait_for(pilot, lambda: box.max_scroll_y > 0)
        assert box.region.height <= 24  # the box fits the screen; its text scrolls
        assert "↑/↓ pgup/pgdn: scroll" in box.border_subtitle
        assert app.focused is box  # the keys reach it
        await pilot.press("end")
        await wait_for(pilot, lambda: box.scroll_y == box.max_scroll_y)
        body = app.screen.query_one("#body")
        # the body's last row is inside the box's window
        assert body.virtual_region.bottom - box.scroll_y <= box.scrollable_content_region.height
        assert rendered(body).rstrip().endswith(HELP_LAST)
        await pilot.press("home")
        await wait_for(pilot, lambda: box.scroll_y == 0)


async def test_a_dialog_that_fits_does_not_offer_to_scroll(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(160, 60)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        box = app.screen.query_one(VerticalScroll)
        await pilot.pause()
        assert box.max_scroll_y == 0 and box.border_subtitle == "esc: close"


def test_fitting_keeps_whole_keys_in_order():
    assert fitting([8, 8, 11, 13, 10], 30) == [True, True, True, False, False]
    assert fitting([8, 13, 4], 14) == [True, False, True]  # a shorter later key still fits
    assert fitting([5], 4) == [False]


@pytest.mark.parametrize("width", [80, 100, 120])
async def test_the_footer_shows_whole_keys_only(runs_root, width):
    app = make_app(runs_root)
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        keys = list(app.screen.query(KEY))
        palette = next(k for k in keys if k.has_class("-command-palette"))
        shown = [k for k in keys if k.display and k is not palette]
        assert shown[0].key == "q" and shown[1].key == "question_mark"
        for key in shown:  # every shown key ends before the palette's
            assert key.region.right <= palette.region.x, key.description
        left_out = [k for k in keys if not k.display]
        if width == 80:
            assert {k.key for k in left_out} == {"g", "v"}  # `?` lists them, ctrl+p finds them
        if width == 120:
            assert not left_out


@pytest.mark.parametrize(("size", "list_w"), [((80, 24), 24), ((120, 40), 30), ((160, 48), 44)])
async def test_the_runs_list_narrows_at_80_columns_and_the_log_gets_the_width(
    runs_root, size, list_w
):
    app = make_app(runs_root)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        assert app.view.runs_list.outer_size.width == list_w
        assert app.view.log_pane.size.width == size[0] - list_w
        first = app.view.runs_list.get_option_at_index(0).prompt.plain
        assert first == ("RUN  live_exp" if size[0] < 100 else "RUN   30% live_exp")


async def test_the_header_keeps_its_simulated_gpus_at_80_columns(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        top = rendered(app.view.run_header).splitlines()[0]
        assert top.rstrip().endswith("epoch 30/100  sim GPUs 0-1"), top


def test_a_narrow_header_drops_the_model_then_shortens_the_name(runs_root):
    from rgpu_tui.core.picture.collect import Collector

    snap = Collector(str(runs_root.root), fake_gpus=2).refresh(runs_root.now)
    run = snap.selected_run
    wide = top_row(run, True, 80).plain
    assert wide == " RUN  live_exp  yolo9-t  epoch 30/100  sim GPUs 0-1"
    assert top_row(run, True, 46).plain == " RUN  live_exp  epoch 30/100  sim GPUs 0-1"
    narrow = top_row(run, True, 40).plain
    assert narrow == " RUN  live_…  epoch 30/100  sim GPUs 0-1" and len(narrow) == 40


def test_shared_rows():
    # a short log leaves its rows to the metrics: every metric shows
    assert shared_rows(avail=29, metrics=38, log=6, base=TALL_ROWS) == 23
    assert shared_rows(avail=29, metrics=10, log=6, base=TALL_ROWS) == 10
    # a full log: the metrics keep their base, the log the rest
    assert shared_rows(avail=29, metrics=38, log=200, base=TALL_ROWS) == TALL_ROWS
    assert shared_rows(avail=14, metrics=38, log=200, base=3) == 3
    # fewer metrics than the base: no empty metric rows
    assert shared_rows(avail=29, metrics=2, log=200, base=TALL_ROWS) == 2
    # the log keeps LOG_MIN rows, the metrics one
    assert shared_rows(avail=10, metrics=38, log=0, base=3) == 10 - LOG_MIN
    assert shared_rows(avail=3, metrics=38, log=0, base=3) == 1


def _log_rows(app) -> tuple[int, int]:
    """(rows of the log pane, rows that show a line)."""
    log = app.view.log_pane
    return log.size.height, min(len(log.lines) - int(log.scroll_y), log.size.height)


def _screen_app(root) -> RgpuApp:
    return RgpuApp(root=str(root), interval=3600.0, fake_gpus=2, settings=Settings())


async def test_at_120x40_the_log_has_no_empty_rows_while_metrics_are_left_out(tmp_path):
    """The first minutes of a run: 38 metrics, 6 log lines. The metrics grow into the rows
    the log leaves empty; as the log fills, they give them back (down to their 8)."""
    root = build_screen_root(tmp_path)
    app = _screen_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(
            pilot, lambda: app.snapshot is not None and len(app.view.log_pane.lines) == 6
        )
        await pilot.pause()
        metrics = app.view.metrics_pane
        height, used = _log_rows(app)
        pages = metrics._pages
        assert len(pages) > 1  # 38 metrics do not fit: some are left out
        assert height - used <= 1, (height, used)
        assert metrics.size.height == len(pages[0]) > TALL_ROWS
        assert metrics.border_title.startswith("metrics 1/")
        append_log(root, [f"line {i}" for i in range(40)])
        app.request_refresh()
        await wait_for(pilot, lambda: len(app.view.log_pane.lines) == 46)
        await wait_for(pilot, lambda: app.view.metrics_pane.size.height == TALL_ROWS)
        height, used = _log_rows(app)
        assert used == height  # a full log: every row shows a line


async def test_at_80x24_the_panes_share_the_rows(tmp_path):
    root = build_screen_root(tmp_path)
    app = _screen_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot, lambda: app.snapshot is not None and len(app.view.log_pane.lines) == 6
        )
        await pilot.pause()
        height, used = _log_rows(app)
        assert height - used <= 1 and used == 6
        assert app.view.metrics_pane.size.height > 3  # more than the 3 of a full log


async def _focus_log(pilot, app) -> None:
    await pilot.press("tab")
    await wait_for(pilot, lambda: app.focused is app.view.log_pane)


async def test_the_log_says_it_follows_or_is_paused_with_the_lines_since(tmp_path):
    root = build_screen_root(tmp_path)
    append_log(root, [f"early line {i}" for i in range(60)])
    app = _screen_app(root)
    async with app.run_test(size=(100, 30)) as pilot:
        title = app.view.log_title
        await wait_for(pilot, lambda: app.snapshot is not None and app.view.log_pane.lines)
        await wait_for(pilot, lambda: "following" in title.state)
        assert rendered(title).startswith("─ log  train.log ─ following ─")
        await _focus_log(pilot, app)
        assert title.has_class("-focused")
        await pilot.press("pageup")
        await wait_for(pilot, lambda: title.state == "paused")
        shown = rendered(title)
        assert "paused (end: follow)" in shown
        top = app.view.log_pane.scroll_y
        append_log(root, ["new one", "new two"])
        time.sleep(0.01)
        app.request_refresh()
        await wait_for(pilot, lambda: title.state == "paused, 2 new lines", timeout=15)
        assert app.view.log_pane.scroll_y == top  # it keeps its place
        assert app.view.log_pane.lines[-1].endswith("new two")
        await pilot.press("end")
        await wait_for(pilot, lambda: title.state == "following")
        assert app.view.log_pane.is_vertical_scroll_end
        # following again: new lines scroll into view, nothing is counted
        append_log(root, ["new three"])
        app.request_refresh()
        await wait_for(pilot, lambda: app.view.log_pane.lines[-1].endswith("new three"), timeout=15)
        await wait_for(pilot, lambda: app.view.log_pane.is_vertical_scroll_end)
        assert title.state == "following" and app.view.log_pane.unseen == 0


async def test_another_run_is_followed_from_its_end(tmp_path):
    """A log paused (scrolled back) and then another run chosen: the other run's log is
    followed from its end, not left where the first one was paused. Both logs are longer
    than the pane, and the pause is seen before the switch."""
    root = build_screen_root(tmp_path)
    append_log(root, [f"early line {i}" for i in range(60)])
    for run in root.iterdir():  # whichever run `j` reaches has a log longer than the pane
        if run.name != LIVE:
            with open(run / "train.log", "a") as f:
                f.writelines(f"{run.name} line {i}\n" for i in range(60))
    app = _screen_app(root)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.view.log_pane
        await wait_for(pilot, lambda: app.snapshot is not None and len(pane.lines) > 60)
        await _focus_log(pilot, app)
        await pilot.press("pageup")
        await wait_for(pilot, lambda: app.view.log_title.state == "paused")
        assert not pane.is_vertical_scroll_end
        await pilot.press("tab")  # back to the runs list; another run
        await pilot.press("j", "enter")
        await wait_for(pilot, lambda: app.snapshot.selected.run_dir != str(root / LIVE))
        await wait_for(pilot, lambda: app.view.log_title.state == "following")
        other = app.snapshot.selected.log
        await wait_for(pilot, lambda: pane.lines and pane.lines[-1] == compact(other.lines[-1]))
        assert pane.max_scroll_y > 0  # its log scrolls: following is not for free
        await wait_for(pilot, lambda: pane.is_vertical_scroll_end)
        assert app.view.log_title.state == "following" and pane.unseen == 0


def test_cut_words_cuts_between_words():
    from rich.text import Text

    from rgpu_tui.tui.widgets.lines import cut_words

    row = Text("$2.10/h  spent $3.06  run $3.06  $0.035/epoch  (c: cost)")
    assert cut_words(row, 80) is row
    assert cut_words(row, 40, sep="  ").plain == "$2.10/h  spent $3.06  run $3.06…"
    assert cut_words(row, 18, sep="  ").plain == "$2.10/h  spent…"  # no part fits: a word
    words = "No price set: pass --price-per-hour 3.48, or put price_per_hour in the file."
    for width in range(10, len(words)):
        cut = cut_words(Text(words), width).plain
        assert len(cut) <= width and cut.endswith("…")
        assert words[len(cut) - 1] == " ", (width, cut)  # a word ended there
    assert cut_words(Text("supercalifragilistic"), 8).plain == "superca…"  # one long word
    hint = "No price set: pass --price-per-hour 3.48 (c: every way to set it)"
    for width in range(20, len(hint)):  # never a parenthesis opened and left open
        cut = cut_words(Text(hint), width).plain
        assert cut.count("(") == cut.count(")"), (width, cut)
    assert cut_words(Text(hint), 55).plain == "No price set: pass --price-per-hour 3.48…"


def _screen_text(app) -> str:
    """The screen as text, as a terminal shows it (what `tmux capture-pane` gives)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      record=True, legacy_windows=False, safe_box=False)  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


async def test_readmes_frame_is_what_the_app_draws_at_80x24(runs_root):
    """README's "The screen": the tui fixture (three runs, a frozen clock), two simulated
    GPUs, $3.4828/h; CPU is read on the second refresh."""
    from support.docs import readme

    text = readme().split("## The screen", 1)[1]
    frame = text.split("```text\n", 1)[1].split("```", 1)[0].rstrip("\n")
    app = make_app(runs_root, settings=Settings(price_per_hour=3.4828))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        first = app.snapshot
        app.request_refresh()
        await wait_for(pilot, lambda: app.snapshot is not first)
        await wait_for(pilot, lambda: app.view.log_pane.is_vertical_scroll_end)
        await pilot.pause()
        assert _screen_text(app) == frame


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_a_long_launch_name_keeps_one_row_of_the_runs_list(runs_root, size):
    """A launch before its run directory ("NAME (launch)") whose name is longer than the
    list: its name is shortened in its middle and " (launch)" stays on the row; before,
    "(launch)" wrapped onto a second row."""
    root = runs_root.root
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    console = root / ".rgpu" / "console" / "l-long.log"
    console.parent.mkdir(parents=True)
    console.write_text("Error: data.yaml not found\n")
    name = "a_rather_long_experiment_name_for_yolo9"
    record = {
        "kind": "launch", "id": "l-long", "time": runs_root.now - 60, "pid": proc.pid,
        "create_time": runs_root.now - 60, "argv": ["libreyolo", "train", f"name={name}"],
        "command": f"libreyolo train name={name}", "cwd": str(root), "project": str(root),
        "name": name, "console_log": str(console),
    }  # fmt: skip
    (root / ".rgpu" / "launches.jsonl").write_text(json.dumps(record) + "\n")
    app = make_app(runs_root)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and len(app.snapshot.runs) == 4)
        runs = app.view.runs_list
        await wait_for(pilot, lambda: runs.option_count == 4)
        await pilot.pause()
        assert runs.virtual_size.height == 4  # one row a run
        width = runs.scrollable_content_region.width
        rows = [str(runs.get_option_at_index(i).prompt) for i in range(4)]
        launch = next(r for r in rows if r.startswith("FAIL") and "(launch)" in r)
        assert launch.endswith("9 (launch)") and " a_" in launch and "…" in launch, rows
        assert all(len(r) <= width for r in rows), (width, rows)
    # a name that fits without the percentage keeps whole (the percentage goes first)
    whole = run_line(replace(app.snapshot.runs[0], name="deep_metrics_line"), None, True, 22)
    assert whole.plain == "RUN  deep_metrics_line"
