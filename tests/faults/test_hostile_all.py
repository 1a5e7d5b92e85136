"""Issue 13's last check: the app, fed ONE runs root holding every hostile case at once
(escape sequences in every string, a non-UTF-8 name, FIFOs where run files should be,
values out of every range, JSON nested too deep, an artifact symlinked out of the run),
keeps refreshing, shows every sane run, quits on q, and its raw terminal output holds
no byte sequence taken from a run file's control characters."""

from __future__ import annotations

import os
import time
from pathlib import Path

from support.cli_env import RGPU_TUI, clean_env
from support.fifos import FifoReleaser
from support.hostile import HOSTILE_NAME, RAW_SEQUENCES, make_hostile_root
from support.hostile_files import EXPECTED, hostile_root
from support.pty_app import PtyApp
from support.waiting import wait_until


def _after_a_quiet_spell(app: PtyApp, quiet: float = 0.3) -> int:
    """The output's length once nothing was written for `quiet` seconds (a frame ended)."""
    while True:
        seen = len(app.output())
        time.sleep(quiet)
        if len(app.output()) == seen:
            return seen


def test_the_app_over_every_hostile_case_at_once(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    fifos = hostile_root(root)  # FIFOs and values out of range (support.hostile_files)
    make_hostile_root(root)  # escapes, a non-UTF-8 name; the escape-laden run is newest
    os.symlink("/etc/passwd", root / HOSTILE_NAME / "train_config.yaml")
    argv = [str(RGPU_TUI), str(root), "--fake-gpus", "2"]
    app = PtyApp(argv, clean_env(tmp_path, TERM="xterm"), cols=120, rows=50)
    releaser = FifoReleaser(fifos)  # only if a reader blocks: the test fails, not hangs
    try:
        wait_until(lambda: b"Training complete" in app.output(), "the first frame", 30)
        # the simulated GPUs change every second: three more frames, each after a quiet
        # spell, mean the refreshes go on (a failed refresh changes nothing on the screen)
        for n in range(3):
            seen = _after_a_quiet_spell(app)
            wait_until(lambda seen=seen: len(app.output()) > seen, f"frame {n + 2}", 30)
        assert app.quit() == 0
        out = app.output()
    finally:
        releaser.start()
        app.close()
        releaser.stop()
    assert releaser.released == 0, "a reader was stuck on a FIFO"
    for raw in RAW_SEQUENCES:
        assert raw not in out, f"{raw!r} reached the terminal"
    assert b"refresh failed" not in out and b"Traceback" not in out
    # every run is listed (the list shows names; the sane ones without a problem)
    for name in EXPECTED:
        assert name.encode() in out, f"run {name} not on the screen"
    assert b"evil^[]0;PWNED^G" in out
