"""The screen in a real tmux at 80x24 and 120x40: the `rgpu-tui` console
script on the first minutes of a run (tests/support/screen_runs.py: 38 metrics, a 6-line
log with one line wider than 80 columns), read with `tmux capture-pane`.

* 80x24, no price set: the footer and the no-price hint end on whole words; the run header
  keeps "sim GPUs 0-1"; the log shows 54 columns or more of a long line; `?` opens the help,
  which says how to scroll and scrolls to its last line (`end`); tab, pgup pause the log
  (its title counts the lines that come), `end` follows again; `q` exits 0.
* 120x40, $2.10/h: while metrics are left out (the box says "metrics 1/N"), the log has no
  more than a few empty rows.

The two screens are printed (`pytest -s`), to be read by eye.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.screen_runs import LONG_LINE, append_log, build_screen_root, start_trainer
from support.tmux import Tmux
from textual.binding import Binding

from e2e.test_tmux import _need_tmux, home, log_box, terminals  # noqa: F401 (fixtures)
from rgpu_tui.core.base.config import Settings, config_file_for
from rgpu_tui.tui.actions.local import LOCAL_KEYS
from rgpu_tui.tui.screens.help import WHERE
from rgpu_tui.tui.widgets.cost import no_price_forms

from .test_tmux import RGPU_TUI

UI_TIMEOUT = 30.0
LOADED = "Running validation for epoch 6"
HELP_LAST = WHERE.split()[-1]  # the help's last word
FOOTER_WORDS = {b.description for b in Binding.make_bindings(LOCAL_KEYS) if b.show}


def _start(term: Tmux, root: Path, env: dict, tmp_path: Path, *extra: str) -> str:
    argv = [str(RGPU_TUI), str(root), "--fake-gpus", "2", "--no-autostop", *extra]
    term.start_app(argv, tmp_path / f"rc-{term.width}", env={**env, "TERM": "xterm-256color"})
    return term.wait_for(lambda s: "runs (3)" in s and LOADED in s, "the app", UI_TIMEOUT)


def _footer_is_whole(screen: str) -> None:
    """The last row: whole "key Description" items, then the palette's key."""
    row = screen.rstrip("\n").splitlines()[-1]
    keys, bar, palette = row.partition("▏")
    assert bar and palette.strip() == "^p palette", row
    items = re.split(r"\s{2,}", keys.strip())
    for item in items:
        key, _, description = item.partition(" ")
        assert description in FOOTER_WORDS, f"{item!r} is cut: {row!r}"
    assert items[0] == "q Quit" and items[1] == "? Help"


def _whole_hint(row: str, forms: list[str]) -> None:
    text = row.strip()
    if text in forms:
        return
    cut = text.removesuffix("…")
    assert text.endswith("…") and any(f.startswith(cut) and f[len(cut)] == " " for f in forms), (
        f"the hint is cut mid-word: {text!r}"
    )


def _empty_log_rows(screen: str) -> int:
    return sum(1 for row in log_box(screen).splitlines() if not row.strip())


def test_80x24_whole_words_help_scrolls_and_the_log_gets_the_width(
    terminals,  # noqa: F811
    home,  # noqa: F811
    tmp_path,
    request,
):
    _need_tmux()
    trainer = start_trainer(tmp_path)
    request.addfinalizer(lambda: (trainer.kill(), trainer.wait()))
    root = build_screen_root(tmp_path, trainer.pid)
    term = terminals(80, 24)
    screen = _start(term, root, home, tmp_path)
    print(f"\n--- 80x24 ---\n{screen}")
    lines = screen.splitlines()

    _footer_is_whole(screen)
    environ = {"HOME": home["HOME"], "XDG_CONFIG_HOME": home["XDG_CONFIG_HOME"]}
    forms = no_price_forms(config_file_for(Settings(), environ))
    _whole_hint(lines[3], forms)  # under the GPU line and its two GPUs
    assert "--price-per-hour 3.48" in lines[3]

    header = next(line for line in lines if "epoch 7/50" in line)
    assert header.rstrip().endswith("sim GPUs 0-1"), header

    # the log: 56 of 80 columns; the long line shows 54 or more of them, and "…" at the cut
    row = next(line for line in lines if "Loaded 128 YOLO" in line)
    shown = row[row.index("Loaded 128 YOLO") - 9 :].rstrip()  # from its "HH:MM:SS "
    assert len(shown) >= 54 and shown.endswith("…"), row
    assert LONG_LINE.startswith(shown[9:-1]), row

    # help: taller than the screen, says how to scroll, scrolls to its last line
    term.send("?")
    screen = term.wait_for("─ help", "the help", UI_TIMEOUT)
    assert "pgup/pgdn: scroll" in screen and HELP_LAST not in screen
    term.send("End")
    screen = term.wait_for(HELP_LAST, "the help's last line", UI_TIMEOUT)
    assert "esc: close" in screen
    term.send("Escape")
    term.wait_for(lambda s: "─ help" not in s and LOADED in s, "the main screen", UI_TIMEOUT)

    # the log pauses when scrolled back, counts what comes, follows again on `end`
    term.wait_for("─ following ─", "the log following", UI_TIMEOUT)
    append_log(root, [f"more output {i}" for i in range(30)])
    term.wait_for("more output 29", "the new lines", UI_TIMEOUT)
    term.send("Tab")
    term.send("PageUp")
    term.wait_for("─ paused (end: follow) ─", "the log paused", UI_TIMEOUT)
    append_log(root, ["after the pause 1", "after the pause 2"])
    screen = term.wait_for("paused, 2 new lines", "the count", UI_TIMEOUT)
    assert "after the pause" not in screen  # it kept its place
    term.send("End")
    term.wait_for(
        lambda s: "─ following ─" in s and "after the pause 2" in s, "following", UI_TIMEOUT
    )
    term.send("q")
    assert term.wait_exit(UI_TIMEOUT) == 0


def test_120x40_no_empty_log_rows_while_metrics_are_left_out(
    terminals,  # noqa: F811
    home,  # noqa: F811
    tmp_path,
    request,
):
    _need_tmux()
    trainer = start_trainer(tmp_path)
    request.addfinalizer(lambda: (trainer.kill(), trainer.wait()))
    root = build_screen_root(tmp_path, trainer.pid)
    term = terminals(120, 40)
    _start(term, root, home, tmp_path, "--price-per-hour", "2.10")
    # 38 metrics: some are left out ("metrics 1/2"); the log's rows show lines
    screen = term.wait_for(
        lambda s: re.search(r"metrics 1/\d+ \(m: next\)", s) and _empty_log_rows(s) <= 3,
        "no more than 3 empty log rows while metrics are left out",
        UI_TIMEOUT,
    )
    print(f"\n--- 120x40 ---\n{screen}")
    assert "$2.10/h" in screen and "sim GPUs 0-1" in screen
    assert "─ log  train.log ─ following ─" in screen
    _footer_is_whole(screen)
    term.send("q")
    assert term.wait_exit(UI_TIMEOUT) == 0
