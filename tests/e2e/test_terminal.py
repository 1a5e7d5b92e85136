"""The app and the terminal, end to end: a word that is not a command and a missing terminal
are refused at once (in a real pseudo-terminal, with the CPU the refusal used), and SIGTERM
or SIGHUP give a real tmux its terminal back (no alternate screen, no mouse reporting).

Each child is waited for with os.wait4 against a deadline, so its CPU time (user + system)
is read from the kernel: a refusal must end, not spin. The numbers are printed (`-s`).
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.tmux import Tmux, tmux_executable

from rgpu_tui.core.base.invocation import command_for

EXIT_DEADLINE_S = 30.0  # generous on a loaded box; the refusal itself takes well under 1 s


def _need_tmux() -> None:
    if tmux_executable() is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("tmux is not installed -- in CI the tmux tests must run", pytrace=False)
    pytest.skip("tmux is not installed")


def _run_in_pty(argv, cwd: Path, env: dict, *, stdin_tty=True, stdout_tty=True, stderr=None):
    """Run argv with a pty on the streams asked for (the others /dev/null; stderr a file
    object when given); wait for its exit. Returns (exit status, what it wrote to the pty,
    CPU seconds it used); kills it and fails after EXIT_DEADLINE_S."""
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=slave if stdin_tty else subprocess.DEVNULL,
        stdout=slave if stdout_tty else subprocess.DEVNULL,
        stderr=slave if stderr is None else stderr,
        start_new_session=True,
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + EXIT_DEADLINE_S
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    out += os.read(master, 65536)
                except OSError:  # EIO: every writer closed its side
                    pass
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                cpu = psutil.Process(proc.pid).cpu_times()
                proc.kill()
                proc.wait()
                pytest.fail(
                    f"{argv[1:]} did not exit within {EXIT_DEADLINE_S:g} s; it used "
                    f"{cpu.user + cpu.system:.1f} s of CPU; it wrote {bytes(out[-400:])!r}"
                )
        while True:  # what is still in the pty
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    cpu_s = usage.ru_utime + usage.ru_stime
    print(f"{argv[1:]} exit {proc.returncode}, CPU {cpu_s:.2f} s")
    return proc.returncode, out.decode("utf-8", "replace"), cpu_s


def _refusal_lines(out: str) -> list[str]:
    return [line for line in out.replace("\r", "").splitlines() if line.strip()]


def test_an_unknown_word_is_refused_in_a_terminal(tmp_path) -> None:
    """`rgpu-tui doctor` (not a command, no such path) in a real terminal: exit 2 at once,
    one line with the commands and a hint; the app does not open (no alternate screen)."""
    env = clean_env(tmp_path)
    rc, out, cpu = _run_in_pty([str(RGPU_TUI), "doctor"], tmp_path, env)
    assert rc == 2, out
    lines = _refusal_lines(out)
    assert len(lines) == 1, lines
    assert "'doctor' is neither a command nor an existing path" in lines[0]
    assert "libreyolo doctor" in lines[0] and "commands: snapshot, cost" in lines[0]
    assert "`./doctor` opens it as a runs root" in lines[0]
    assert "\x1b[?1049h" not in out  # never entered the alternate screen
    assert not (tmp_path / "doctor").exists()
    rc, out, _ = _run_in_pty([str(RGPU_TUI), "lauch"], tmp_path, env)
    cmd = command_for(str(RGPU_TUI), env.get("PATH"))  # as this shell finds it
    assert rc == 2 and f"did you mean `{cmd} launch`?" in out, out
    assert cpu < 10.0  # a Python start and one line; the spinning app used a whole core


@pytest.mark.parametrize(
    "stdin_tty,stdout_tty,missing",
    [
        pytest.param(False, True, "stdin is not one", id="stdin-devnull"),
        pytest.param(True, False, "stdout is not one", id="stdout-devnull"),
    ],
)
def test_no_terminal_exits_at_once(tmp_path, stdin_tty, stdout_tty, missing) -> None:
    """The app with stdin (or stdout) on /dev/null, the rest a terminal (a job started
    from a script): exit 2 with one line naming snapshot and watch, instead of an app
    that spins a core waiting for keys that never come."""
    root = tmp_path / "runs"
    root.mkdir()
    env = clean_env(tmp_path)
    argv = [str(RGPU_TUI), str(root), "--fake-gpus", "1"]
    rc, out, cpu = _run_in_pty(argv, tmp_path, env, stdin_tty=stdin_tty, stdout_tty=stdout_tty)
    assert rc == 2, out
    lines = _refusal_lines(out)
    assert len(lines) == 1, lines
    assert "the app needs a terminal" in lines[0] and missing in lines[0]
    cmd = command_for(str(RGPU_TUI), env.get("PATH"))  # as this shell finds it
    assert f"`{cmd} snapshot`" in lines[0] and f"`{cmd} watch`" in lines[0]
    assert "\x1b[?1049h" not in out
    assert cpu < 10.0


def test_no_terminal_on_stderr_alone_exits_at_once(tmp_path) -> None:
    """Stdin and stdout a terminal, stderr a file (`rgpu-tui 2>err.log`):
    Textual draws on stderr, so the app cannot start either; the one line goes to that
    file, the terminal gets nothing (no alternate screen), and it exits 2 at once."""
    root = tmp_path / "runs"
    root.mkdir()
    env = clean_env(tmp_path)
    argv = [str(RGPU_TUI), str(root), "--fake-gpus", "1"]
    with open(tmp_path / "err.log", "w+b") as err:
        rc, out, cpu = _run_in_pty(argv, tmp_path, env, stderr=err)
        err.seek(0)
        said = err.read().decode()
    assert rc == 2, (out, said)
    lines = _refusal_lines(said)
    assert len(lines) == 1, lines
    assert "the app needs a terminal, and stderr is not one" in lines[0]
    assert "`rgpu-tui snapshot`" in lines[0] and "`rgpu-tui watch`" in lines[0]
    assert "\x1b[?1049h" not in out and not out.strip(), out
    assert cpu < 10.0


def test_dot_slash_word_and_an_existing_word_open_the_app(tmp_path) -> None:
    """`./doctor` forces a path; a bare word naming an existing directory opens as before."""
    _need_tmux()
    (tmp_path / "existing").mkdir()
    env = clean_env(tmp_path)
    for word, title in (("./doctor", "runs (0)"), ("existing", "runs (0)")):
        with Tmux(80, 24) as term:
            rc_file = tmp_path / f"rc-{word.strip('./')}"
            term.start_app(
                [str(RGPU_TUI), word, "--fake-gpus", "1"], rc_file, env=env, cwd=tmp_path
            )
            term.wait_for(title)
            term.send("q")
            assert term.wait_exit() == 0


# -- the terminal given back ---------------------------------------------------------------


def _pane_modes(term: Tmux) -> dict[str, str]:
    names = ("alternate_on", "mouse_any_flag", "mouse_button_flag", "mouse_sgr_flag")
    out = term.tmux(
        "display-message", "-p", "-t", term.session, " ".join(f"#{{{n}}}" for n in names)
    )
    return dict(zip(names, out.split(), strict=True))


def _app_pid(term: Tmux) -> int:
    """The rgpu-tui process under the exit-status wrapper."""
    wrapper = psutil.Process(term.pane_pid())
    deadline = time.monotonic() + EXIT_DEADLINE_S
    while time.monotonic() < deadline:
        children = wrapper.children()
        if children:
            return children[0].pid
        time.sleep(0.05)
    raise AssertionError("no rgpu-tui under the wrapper")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_gives_the_terminal_back(tmp_path, sig) -> None:
    """`kill PID` (or a hang-up) while the app runs in tmux: the app exits 128+N after
    leaving the alternate screen and turning mouse reporting off."""
    _need_tmux()
    root = tmp_path / "runs"
    root.mkdir()
    env = clean_env(tmp_path)
    with Tmux(80, 24) as term:
        term.start_app([str(RGPU_TUI), str(root), "--fake-gpus", "1"], tmp_path / "rc", env=env)
        term.wait_for("runs (0)")
        modes = _pane_modes(term)
        assert modes["alternate_on"] == "1" and modes["mouse_any_flag"] == "1", modes
        os.kill(_app_pid(term), sig)
        assert term.wait_exit() == 128 + int(sig)
        modes = _pane_modes(term)
        assert set(modes.values()) == {"0"}, modes


# -- keys that answer, in a real terminal ----------------------------------------------------


def _failed_launch(root: Path) -> None:
    """A launch recorded by `rgpu-tui launch` whose process died before status.json."""
    import json
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    console = root / ".rgpu" / "console" / "l-bad.log"
    console.parent.mkdir(parents=True)
    console.write_text("Error: data.yaml not found\n")
    now = time.time()
    record = {
        "kind": "launch", "id": "l-bad", "time": now - 5, "pid": proc.pid,
        "create_time": now - 5, "argv": ["libreyolo", "train", "name=bad"],
        "command": "libreyolo train name=bad", "cwd": str(root), "project": str(root),
        "name": "bad", "console_log": str(console),
    }  # fmt: skip
    (root / ".rgpu" / "launches.jsonl").write_text(json.dumps(record) + "\n")


def test_keys_answer_in_tmux(tmp_path) -> None:
    """At 80x24: `r` on a launch that never started says so (not its .rgpu/launch path),
    `a` with no autostop says there is nothing to cancel, ctrl+p finds an action by name
    and runs it."""
    _need_tmux()
    root = tmp_path / "runs"
    root.mkdir()
    _failed_launch(root)
    env = clean_env(tmp_path)
    with Tmux(80, 24) as term:
        term.start_app([str(RGPU_TUI), str(root), "--fake-gpus", "1"], tmp_path / "rc", env=env)
        term.wait_for("bad (launch)")
        term.send("r")
        screen = term.wait_for("never started training")
        assert ".rgpu" not in screen
        term.send("a")
        term.wait_for("No autostop to cancel")
        term.send("C-p")
        term.wait_for("Search for commands")
        term.type("GPU check")
        term.wait_for("GPU check (g)")
        term.send("Enter")  # the check's dialog, then its report
        term.wait_for(lambda s: "python:" in s and "esc: close" in s, "the GPU check's report")
        term.send("Escape")
        term.wait_for(lambda s: "esc: close" not in s, "the report closed")
        term.send("q")  # not with the escape: ESC q at once reads as alt+q
        assert term.wait_exit() == 0
