"""Trainers that died: a pid reused by another process, a SIGKILLed trainer (zombie or
reaped) reads DEAD within two refreshes, in the Collector, the CLI and the app.

Run: .venv/bin/pytest tests/faults -q
"""

from __future__ import annotations

import json
import os
import signal
import time

import psutil
import pytest
from support.cli_env import clean_env, run_rgpu
from support.run_dir import iso, make_run
from tui.helpers import rendered, wait_for

from faults.helpers import only_run, status_doc
from rgpu_tui.tui.app import RgpuApp

# -- dead trainers ---------------------------------------------------------------------


def test_reused_pid_is_dead(tmp_path, collector, spawn) -> None:
    """Fault: status.json says running, and its pid now belongs to a process started after
    the run did (the trainer died and the pid was reused): DEAD, also in the CLI."""
    younger = spawn()
    started = psutil.Process(younger.pid).create_time() - 3600  # the run began an hour ago
    make_run(
        tmp_path / "runs",
        "exp",
        status=status_doc(pid=younger.pid, started_at=iso(started)),
        epochs=3,
    )
    r = only_run(collector(tmp_path / "runs").refresh(time.time()))
    assert (r.state, r.pid_alive) == ("dead", False)
    assert (
        r.error
        == f"pid {younger.pid} now belongs to a newer process; status.json still says running"
    )

    proc = run_rgpu(
        "snapshot",
        "--json",
        "--fake-gpus",
        "1",
        str(tmp_path / "runs"),
        env=clean_env(tmp_path, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config")),
    )
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(proc.stdout)["runs"]
    assert (run["state"], run["status_state"], run["pid_alive"]) == ("dead", "running", False)


@pytest.mark.parametrize("reaped", [False, True], ids=["zombie", "reaped"])
def test_sigkilled_trainer_is_dead_within_two_refreshes(tmp_path, collector, spawn, reaped):
    """Fault: the trainer is SIGKILLed (OOM killer, kill -9): status.json keeps saying
    running, and the run reads DEAD within two refreshes."""
    trainer = spawn(cwd=tmp_path / "runs" / "exp")
    created = psutil.Process(trainer.pid).create_time()
    make_run(
        tmp_path / "runs",
        "exp",
        status=status_doc(pid=trainer.pid, started_at=iso(created)),
        epochs=3,
    )
    c = collector(tmp_path / "runs")
    assert only_run(c.refresh(time.time())).state == "running"

    os.kill(trainer.pid, signal.SIGKILL)
    if reaped:  # by its parent, as a shell in tmux does
        trainer.wait()
    else:  # the kill has landed; the process stays a zombie (not reaped)
        os.waitid(os.P_PID, trainer.pid, os.WEXITED | os.WNOWAIT)
        assert psutil.Process(trainer.pid).status() == psutil.STATUS_ZOMBIE
    states = [only_run(c.refresh(time.time())) for _ in range(2)]
    assert states[-1].state == "dead", [r.state for r in states]
    assert states[-1].pid_alive is False
    assert states[-1].error.endswith("; status.json still says running")
    assert f"process {trainer.pid}" in states[-1].error


async def test_sigkilled_trainer_reads_dead_in_the_app(tmp_path, spawn) -> None:
    """Fault: the trainer SIGKILLed while the app watches it: the runs list says DEAD and the
    header says why."""
    trainer = spawn(cwd=tmp_path / "runs" / "exp")
    created = psutil.Process(trainer.pid).create_time()
    make_run(
        tmp_path / "runs",
        "exp",
        status=status_doc(pid=trainer.pid, started_at=iso(created)),
        epochs=3,
    )
    app = RgpuApp(root=str(tmp_path / "runs"), interval=0.05, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert app.view.runs_list.get_option_at_index(0).prompt.plain.startswith("RUN")
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        await wait_for(
            pilot, lambda: app.view.runs_list.get_option_at_index(0).prompt.plain.startswith("DEAD")
        )
        await wait_for(pilot, lambda: "still says running" in rendered(app.view.run_header))
        assert f"process {trainer.pid} is gone" in rendered(app.view.run_header)
