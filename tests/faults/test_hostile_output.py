"""Hostile text reaches no terminal raw, and odd output channels break no command,
at the system level:

- the app in a real pseudo-terminal on a root whose run files hold OSC 0 / OSC 52 /
  ESC[2J / ESC[6n / C1 sequences: its raw output never holds those byte sequences, and the
  screen shows them as ``^[`` text;
- the same app in tmux with ``set-clipboard on``: the pane title does not change and no
  tmux buffer (clipboard) is created;
- ``rgpu-tui snapshot`` as a subprocess, under PYTHONIOENCODING=utf-8, with a directory
  name that is not UTF-8 and holds a newline: no control byte but newlines, no crash, the
  name escaped on its one row; ``--json`` valid and holding the original strings;
- every sub-command that prints, writing into a pipe whose reader is gone (closed before
  the command starts, so the EPIPE is certain): its own exit status, no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_env import RGPU_TUI
from support.cli_env import clean_env as _env
from support.hostile import (
    BAD_BYTES_NAME,
    ERROR_MESSAGE,
    ERROR_TYPE,
    HOSTILE_NAME,
    LOG_LINES,
    RAW_SEQUENCES,
    make_hostile_root,
    unsafe_bytes,
)
from support.pty_app import PtyApp
from support.tmux import Tmux, tmux_executable
from support.waiting import wait_until


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    return make_hostile_root(tmp_path / "runs")


# -- the app in a pseudo-terminal ----------------------------------------------------------


def test_the_app_writes_no_control_sequence_from_a_run(hostile_root: Path, tmp_path) -> None:
    argv = [str(RGPU_TUI), str(hostile_root), "--fake-gpus", "1"]
    env = _env(tmp_path, TERM="xterm-256color")
    app = PtyApp(argv, env, cols=120, rows=40)
    try:
        # the log's first frame holds its last lines, the hostile ones among them
        wait_until(lambda: b"Training complete" in app.output(), "the log on the screen", 30)
        assert app.quit() == 0
        out = app.output()
    finally:
        app.close()
    for raw in RAW_SEQUENCES:
        assert raw not in out, f"{raw!r} reached the terminal"
    # shown as visible text instead: the log's lines, the header's name and error
    for shown in (b"^[]52;c;ZWNobyBwd25lZA==^G", b"clear^[[2J", b"ask^[[6n", b"c1\\x9b31m"):
        assert shown in out, shown
    assert b"evil^[]0;PWNED^G" in out


GATE = (
    "import os, sys, time\n"
    "while not os.path.exists(sys.argv[1]):\n"
    "    time.sleep(0.05)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def test_in_tmux_the_title_and_the_clipboard_stay(hostile_root: Path, tmp_path) -> None:
    if tmux_executable() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is not installed -- in CI the tmux tests must run", pytrace=False)
        pytest.skip("tmux is not installed")
    go = tmp_path / "go"
    argv = [sys.executable, "-c", GATE, str(go), str(RGPU_TUI), str(hostile_root)]
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
    }
    with Tmux(120, 40) as term:
        # the app waits for `go`: OSC 52 from a program makes a tmux buffer only with
        # set-clipboard on, which is set before the app writes anything
        term.start_app([*argv, "--fake-gpus", "1"], tmp_path / "rc", env=env)
        term.tmux("set-option", "-s", "set-clipboard", "on")
        term.tmux("set-option", "-g", "allow-rename", "on")
        title = term.tmux("display-message", "-p", "-t", term.session, "#{pane_title}")
        go.touch()

        def pane_title() -> str:
            return term.tmux("display-message", "-p", "-t", term.session, "#{pane_title}")

        # the first frame with the log (or, were the sequences written raw, a new title)
        term.wait_for(lambda screen: "Training complete" in screen or pane_title() != title)
        shown = pane_title()
        assert "PWNED" not in shown and shown == title
        assert term.tmux("list-buffers") == ""
        screen = term.wait_for("evil^[]0;PWNED^G", "the run's name, visibly")
        assert "ask^[[6n" in screen  # the log's last line
        term.send("q")
        assert term.wait_exit() == 0


# -- rgpu-tui snapshot: text and JSON --------------------------------------------------------


def _run(args: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(RGPU_TUI), *args], env=env, capture_output=True, timeout=120, **kwargs
    )


def test_snapshot_text_is_inert_and_a_bad_name_prints(hostile_root: Path, tmp_path) -> None:
    env = _env(tmp_path, PYTHONIOENCODING="utf-8")
    proc = _run(["snapshot", str(hostile_root)], env)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b""
    assert unsafe_bytes(proc.stdout) == []
    text = proc.stdout.decode()
    assert "evil^[]0;PWNED^G" in text
    assert "    ^[]52;c;ZWNobyBwd25lZA==^G" in text.splitlines()
    # the non-UTF-8 name with a newline: escaped, on its one row of the table
    [row] = [line for line in text.splitlines() if "bad\\xffname" in line]
    assert row.startswith("completed") and "bad\\xffname^Jsecond line" in row


def test_snapshot_json_is_valid_and_keeps_the_originals(hostile_root: Path, tmp_path) -> None:
    env = _env(tmp_path, PYTHONIOENCODING="utf-8")
    proc = _run(["snapshot", str(hostile_root), "--json"], env)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    proc.stdout.decode("ascii")  # json escapes every control character and non-ASCII
    data = json.loads(proc.stdout)
    run = next(r for r in data["runs"] if r["name"] == HOSTILE_NAME)
    assert run["error"] == f"{ERROR_TYPE}: {ERROR_MESSAGE}"
    assert data["selected"]["log_tail"][-len(LOG_LINES) :] == list(LOG_LINES)
    # the non-UTF-8 name is a lone surrogate ("\udcff") that gives the bytes back
    assert BAD_BYTES_NAME in [os.fsencode(r["name"]) for r in data["runs"]]


def test_a_bad_path_argument_gives_one_escaped_line(hostile_root: Path, tmp_path) -> None:
    """A PATH that is not UTF-8 and holds ESC, with PYTHONIOENCODING=utf-8: one escaped
    line on stderr, no UnicodeEncodeError."""
    bad = os.path.join(os.fsencode(tmp_path), b"missing\xff\x1b]0;X\x07")
    env = _env(tmp_path, PYTHONIOENCODING="utf-8")
    proc = subprocess.run(
        [os.fsencode(RGPU_TUI), b"snapshot", bad], env=env, capture_output=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    [line] = proc.stderr.decode().splitlines()
    assert "missing\\xff^[]0;X^G: no such file or directory" in line


# -- a reader that went away ------------------------------------------------------------------


def _into_closed_pipe(args: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run with stdout a pipe whose reader is already closed; (exit status, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [str(RGPU_TUI), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


def test_snapshot_and_cost_into_a_closed_pipe_end_quietly(hostile_root: Path, tmp_path) -> None:
    env = _env(tmp_path)
    for args in (
        ["snapshot", str(hostile_root)],
        ["snapshot", str(hostile_root), "--json"],
        ["cost", str(hostile_root), "--price-per-hour", "2"],
        ["cost", str(hostile_root), "--json"],
        ["launch", "--help"],
    ):
        rc, err = _into_closed_pipe(args, env)
        assert (rc, err) == (0, b""), (args, err.decode(errors="replace"))


def test_actions_into_a_closed_pipe_keep_their_status(hostile_root: Path, tmp_path) -> None:
    env = _env(tmp_path)
    run = str(hostile_root / HOSTILE_NAME)
    # stop: a failed run is not running: its one-line error on stderr, status 1
    rc, err = _into_closed_pipe(["stop", run], env)
    assert rc == 1 and b"Traceback" not in err and b"BrokenPipe" not in err, err
    assert b"is not running (it reads failed): nothing sent" in err, err
    # push --json without a Hub repo: the JSON result, then its one-line error, status 1
    rc, err = _into_closed_pipe(["push", run, "--json"], env)
    assert rc == 1 and b"Traceback" not in err and b"BrokenPipe" not in err, err
    assert err.decode().startswith("rgpu-tui: push failed: "), err
    # preflight that cannot finish in time (a stand-in torch whose import hangs, and the
    # shortest timeout preflight takes): its report, status 1
    hanging = tmp_path / "hanging_torch"
    hanging.mkdir()
    (hanging / "torch.py").write_text("import time\ntime.sleep(600)\n")
    env["PYTHONPATH"] = str(hanging)
    rc, err = _into_closed_pipe(["preflight", "--timeout", "5"], env)
    assert (rc, err) == (1, b""), err.decode(errors="replace")


def test_an_error_into_a_closed_stderr_ends_quietly(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [str(RGPU_TUI), "snapshot", str(tmp_path / "missing")],
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=write_end,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stdout) == (2, b"")  # 120 when Python's exit flush fails
