"""`stop` signals only the run's trainer (core.launch.stop_target): status.json's pid is untrusted.

Real processes stand in for the trainer and for the unrelated processes a status.json
may name: a `sleep` (not python), python children whose start is outside the window
around started_at, this very process, its parent, pid 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.launch.stop import stop_run
from rgpu_tui.core.launch.stop_target import START_AFTER_S, START_BEFORE_S, verify

from .test_launch_unit import SLEEPER, _start_child, _status_for

MUST_NOT_WAIT = dict(sleep=lambda s: pytest.fail("must not wait: nothing may be signalled"))


def created(pid: int) -> float:
    return psutil.Process(pid).create_time()


def refused(result, proc: subprocess.Popen, *words: str) -> None:
    assert not result.ok and result.signals_sent == ()
    assert result.error.startswith("not stopped: ") and "nothing was signalled" in result.error
    assert "\n" not in result.error
    for word in words:
        assert word in result.error
    assert proc.poll() is None  # never signalled


def test_a_sleeping_process_that_is_not_python_is_refused(tmp_path: Path, children) -> None:
    # Popen returns once exec succeeded: the child is `sleep` from the start
    (tmp_path / "run").mkdir()
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True, cwd=tmp_path / "run")
    children.append(proc)
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=created(proc.pid))
    result = stop_run(str(run), Settings(), **MUST_NOT_WAIT)
    refused(result, proc, f"process {proc.pid} (sleep) is not python, libreyolo or torchrun")


@pytest.mark.parametrize(
    "offset, words",
    [
        (START_BEFORE_S + 3600, ("more than 10 min before the run started",)),  # in the future
        (START_BEFORE_S + 30, ("more than 10 min before the run started",)),
        (-(START_AFTER_S + 30), ("now belongs to a newer process",)),
    ],
    ids=["started_at-in-the-future", "10.5-min-before", "35-s-after"],
)
def test_a_python_process_started_outside_the_window_is_refused(
    tmp_path: Path, children, offset: float, words
) -> None:
    """status.json's started_at = the process's start + offset: the process started more
    than 10 min before it, or more than START_AFTER_S after it."""
    proc = _start_child(children, SLEEPER, tmp_path / "run")
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=created(proc.pid) + offset)
    result = stop_run(str(run), Settings(), **MUST_NOT_WAIT)
    refused(result, proc, *words)


@pytest.mark.parametrize("offset", [START_BEFORE_S - 30, 0.0, -(START_AFTER_S - 10)])
def test_a_python_trainer_started_within_the_window_is_stopped(
    tmp_path: Path, children, offset: float
) -> None:
    proc = _start_child(children, SLEEPER, tmp_path / "run")
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=created(proc.pid) + offset)
    result = stop_run(str(run), Settings(), sleep=time.sleep)
    assert result.ok, result.error
    assert result.signals_sent == ("SIGINT",) and result.target == f"process group {proc.pid}"
    assert proc.wait(5) == -signal.SIGINT


@pytest.mark.parametrize(
    "who, words",
    [
        ("init", "pid 1 is the machine's init"),
        ("me", "is this program"),
        ("my parent", "this program"),  # an ancestor, or the leader of our group or session
        ("my group", "leads this program's process group or session"),
    ],
)
def test_never_pid_1_this_program_or_its_ancestors(who: str, words: str) -> None:
    """Asked of verify(), which signals nothing: a regression must not SIGINT the test
    runner's parent or the container's init."""
    pid = {"init": 1, "me": os.getpid(), "my parent": os.getppid(), "my group": os.getpgrp()}[who]
    started = created(pid) if psutil.pid_exists(pid) else time.time()
    why = verify(pid, started, None)
    assert isinstance(why, str) and words in why


def test_a_child_in_this_process_group_is_signalled_alone(tmp_path: Path, children) -> None:
    """A trainer that shares this program's process group (no own session): its pid alone
    is signalled, never the group (which holds this program)."""
    (tmp_path / "run").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SLEEPER],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path / "run",
    )
    children.append(proc)
    assert proc.stdout.readline().strip() == b"ready"
    assert os.getpgid(proc.pid) == os.getpgrp()
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=created(proc.pid))
    result = stop_run(str(run), Settings(), sleep=time.sleep)
    assert result.ok and result.target == f"process {proc.pid}"
    assert proc.wait(5) == -signal.SIGINT


def test_cli_stop_refuses_in_one_line_and_exits_1(tmp_path: Path, children) -> None:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    children.append(proc)
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=created(proc.pid) + 7200)
    cli = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "stop", str(run)],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert cli.returncode == 1 and cli.stdout == ""
    [line] = cli.stderr.splitlines()
    assert line.startswith(f"rgpu-tui: not stopped: pid {proc.pid} belongs to a process started")
    assert proc.poll() is None
