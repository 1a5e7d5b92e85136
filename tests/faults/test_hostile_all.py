"""Every hostile case at once: the app, fed ONE runs root holding every hostile case at once
(escape sequences in every string, a non-UTF-8 name, FIFOs where run files should be,
values out of every range, JSON nested too deep, an artifact symlinked out of the run),
keeps refreshing, shows every sane run, quits on q, and its raw terminal output holds
no byte sequence taken from a run file's control characters."""

from __future__ import annotations

import os
from pathlib import Path

from support.cli_env import RGPU_TUI, clean_env
from support.fifos import FifoReleaser
from support.hostile import HOSTILE_NAME, RAW_SEQUENCES, make_hostile_root
from support.hostile_files import EXPECTED, hostile_root
from support.pty_app import PtyApp
from support.waiting import wait_until

# The terminal's answer to Textual's query for synchronized output (DECRQM 2026: "set"):
# from then on each frame the app draws is wrapped in ESC[?2026h ... ESC[?2026l (FRAME_END).
SYNC_SUPPORTED = b"\x1b[?2026;1$y"
FRAME_END = b"\x1b[?2026l"


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
        os.write(app.fd, SYNC_SUPPORTED)  # as a terminal answers: frames are now counted
        first = wait_until(lambda: app.output().count(FRAME_END), "a counted frame", 30)
        # the simulated GPUs change every second: three more frames mean the refreshes go
        # on (a failed refresh changes nothing on the screen)
        wait_until(lambda: app.output().count(FRAME_END) >= first + 3, "three more frames", 30)
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
