"""A status.json that names a process which is not the run's: pid 1, an
rgpu-tui process of the user (a watcher, `python -m rgpu_tui`), a long-lived process that
started well before the run. `status` (the app, `snapshot`) and `stop` share one rule:
the run reads DEAD with why, `stop` signals nothing, and the process lives on.

rgpu-tui runs as a subprocess with a timeout; the processes named are real ones.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.cli_env import RGPU_TUI, clean_env, run_rgpu
from support.run_dir import iso, write_status
from support.waiting import wait_until


def running(pid: int, started_at: float) -> dict:
    """A running status.json naming `pid`, started at `started_at`."""
    return {"state": "running", "pid": pid, "started_at": iso(started_at), "total_epochs": 10}


def snapshot_run(tmp_path: Path, run: Path) -> dict:
    got = run_rgpu("snapshot", str(run), "--json", env=clean_env(tmp_path))
    assert got.returncode == 0, got.stderr
    [info] = json.loads(got.stdout)["runs"]
    return info


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen]]:
    made: list[subprocess.Popen] = []
    yield made
    for proc in made:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def started(proc: subprocess.Popen, procs: list) -> psutil.Process:
    """Popen returns once the child has exec'd: its name and argv are the program's."""
    procs.append(proc)
    return psutil.Process(proc.pid)


def _proc_status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def signals_while_stopped(proc: psutil.Process, action) -> tuple:
    """Run `action` with `proc` frozen (SIGSTOP): (what it returned, the signals `proc` got
    meanwhile). kill(2) makes a signal pending before it returns, and a stopped process
    cannot take it until it is continued, so once `action` returned, every signal it sent
    is in the pending masks (SIGKILL, or a fatal signal with no handler, ends it at once:
    reported as -1; SIGCONT wakes it: 0). No sleep: a condition read when the sender has
    ended."""
    os.kill(proc.pid, signal.SIGSTOP)
    wait_until(lambda: _proc_status(proc.pid)["State"].startswith("T"), "the process stopped")
    try:
        result = action()
    finally:
        try:
            status = _proc_status(proc.pid)
        except FileNotFoundError:
            status = None
        if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
            os.kill(proc.pid, signal.SIGCONT)
    if status is None or status["State"].startswith("Z"):
        return result, {-1}
    got = {0} if not status["State"].startswith("T") else set()
    mask = int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)
    return result, got | {n for n in range(1, 65) if mask >> (n - 1) & 1}


def test_pid_1_with_a_later_started_at_is_not_the_run(tmp_path: Path) -> None:
    """pid 1 with started_at "now" read RUN forever. Now the run started more than 10 min
    after pid 1 did is not pid 1's (a started_at 11 min after pid 1's start stands for
    "now" on a machine up for less than that too)."""
    later = max(time.time(), psutil.Process(1).create_time() + 660)
    run = write_status(tmp_path / "runs" / "exp", running(1, later))
    info = snapshot_run(tmp_path, run)
    assert info["state"] == "dead", info
    assert "pid 1 belongs to a process started at" in info["error"]
    assert "more than 10 min before the run started" in info["error"]
    got = run_rgpu("stop", str(run), env=clean_env(tmp_path))
    assert got.returncode == 1 and "nothing was signalled" in got.stderr


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_an_rgpu_tui_process_is_never_the_run_nor_signalled(tmp_path: Path, procs, how) -> None:
    """A status.json naming the user's own watcher, with its very start time: stop must not
    signal it (the watcher would end, and autostop with it), and the run is not RUN."""
    other = tmp_path / "other-root"
    other.mkdir()
    env = clean_env(tmp_path, XDG_STATE_HOME=str(tmp_path / "state"))
    argv = [str(RGPU_TUI)] if how == "console script" else [sys.executable, "-m", "rgpu_tui"]
    watcher = started(
        subprocess.Popen(
            [*argv, "watch", str(other), "--interval", "5"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ),
        procs,
    )  # fmt: skip
    run = write_status(tmp_path / "runs" / "exp", running(watcher.pid, watcher.create_time()))
    info = snapshot_run(tmp_path, run)
    assert info["state"] == "dead", info
    assert f"pid {watcher.pid} is rgpu-tui itself" in info["error"]
    got, signalled = signals_while_stopped(
        watcher, lambda: run_rgpu("stop", str(run), env=clean_env(tmp_path))
    )
    assert signalled == set()  # nothing was sent to it (read once stop had ended)
    assert got.returncode == 1, got
    assert f"pid {watcher.pid} is rgpu-tui itself" in got.stderr
    assert "nothing was signalled" in got.stderr
    assert procs[0].poll() is None and watcher.is_running()


def test_a_process_started_long_before_the_run_is_not_the_run(tmp_path: Path, procs) -> None:
    """A long-lived process (a shell, sshd: here a sleep) named with a started_at an hour
    after it started read RUN for as long as it lived; stop refused it all along."""
    sleeper = started(subprocess.Popen(["sleep", "60"]), procs)
    run = write_status(
        tmp_path / "runs" / "exp", running(sleeper.pid, sleeper.create_time() + 3600)
    )
    info = snapshot_run(tmp_path, run)
    assert info["state"] == "dead", info
    assert "more than 10 min before the run started" in info["error"]
    got, signalled = signals_while_stopped(
        sleeper, lambda: run_rgpu("stop", str(run), env=clean_env(tmp_path))
    )
    assert signalled == set()  # nothing was sent to it (read once stop had ended)
    assert got.returncode == 1 and "more than 10 min before the run started" in got.stderr
    assert procs[0].poll() is None


def test_the_app_s_own_process_spelled_in_status_json_reads_dead(tmp_path: Path) -> None:
    """`status` in this very process (the shared rule, in core): a run naming an rgpu-tui
    process started from `python -c` that imports rgpu_tui."""
    from rgpu_tui.core.run.run_process import is_rgpu_tui, run_process

    code = "import rgpu_tui.cli, sys; print('ready', flush=True); sys.stdin.read()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        # its argv is read once it runs: just after the fork it is still pytest's own
        assert proc.stdout.readline() == "ready\n"
        ps = psutil.Process(proc.pid)
        assert is_rgpu_tui(ps)
        check = run_process(proc.pid, ps.create_time())
        assert not check.alive and "is rgpu-tui itself" in check.reason
        assert not is_rgpu_tui(psutil.Process(os.getpid()))  # pytest is not rgpu-tui
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait(10)
