"""A pid is a run's only when that process works in the run's directory:
its cwd, its command line or its open files name the directory (core.run.run_process,
the one rule of status and stop). Real processes in real shapes: a trainer started as
libreyolo is (cwd the project, `project=P name=N`, train.log held open: its own status
writer, tests/support/status_trainer.py), a pulled copy of its run beside it, another
python of the user started in the same second, a resume (`model=RUN/weights/last.pt`)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support.status_trainer import start as start_trainer

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.launch.stop import stop_run
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.run.run_process import run_process, works_in

MUST_NOT_WAIT = dict(sleep=lambda s: pytest.fail("must not wait: nothing may be signalled"))


@pytest.fixture
def procs():
    out: list[subprocess.Popen] = []
    yield out
    for p in out:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_a_pulled_copy_beside_its_running_original_is_not_running(tmp_path: Path, procs):
    project = tmp_path / "runs"
    original = project / "exp"
    trainer = start_trainer(original, 3, 10)
    procs.append(trainer)
    copy = project / "exp-pulled"  # `rgpu-tui pull` or cp -r: the same status.json
    shutil.copytree(original, copy)
    assert json.loads((copy / "status.json").read_text())["pid"] == trainer.pid

    snap = RunsWatcher(str(project)).refresh(time.time())
    assert snap.run(str(original)).state == "running"
    copied = snap.run(str(copy))
    assert copied.state == "dead" and copied.pid_alive is False
    assert "works in another directory" in copied.error

    # stop aims by the same rule: the copy's stop signals nothing, the original runs on
    result = stop_run(str(copy), Settings(), **MUST_NOT_WAIT)
    assert not result.ok and result.signals_sent == ()
    assert trainer.poll() is None
    result = stop_run(str(original), Settings(), sleep=time.sleep)
    assert result.ok and result.signals_sent == ("SIGINT",) and result.final_state == "stopped"
    assert trainer.wait(10) == 130  # KeyboardInterrupt, as libreyolo ends


def test_a_python_of_the_user_in_the_started_at_window_is_never_signalled(
    tmp_path: Path, procs
) -> None:
    """The hostile case: status.json names another python process of the user whose start
    falls in started_at's window; it works elsewhere, so the run is DEAD and stop refuses."""
    elsewhere = tmp_path / "notebook"
    elsewhere.mkdir()
    code = "import time; print('ready', flush=True); time.sleep(60)"
    other = subprocess.Popen(
        [sys.executable, "-c", code], cwd=elsewhere, stdout=subprocess.PIPE, start_new_session=True
    )
    procs.append(other)
    assert other.stdout.readline() == b"ready\n"
    run = tmp_path / "runs" / "victim"
    run.mkdir(parents=True)
    started = psutil.Process(other.pid).create_time()
    (run / "status.json").write_text(
        json.dumps(
            {
                "state": "running",
                "pid": other.pid,
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started)),
            }
        )
    )
    (info,) = RunsWatcher(str(run.parent)).refresh(time.time()).runs
    assert info.state == "dead"
    result = stop_run(str(run), Settings(), **MUST_NOT_WAIT)
    assert not result.ok and "works in another directory" in result.error
    assert other.poll() is None  # never signalled


def test_each_of_cwd_argv_and_open_files_names_the_run(tmp_path: Path, procs) -> None:
    run = tmp_path / "runs" / "exp"
    (run / "weights").mkdir(parents=True)
    (run / "train.log").write_text("")
    sleep = "import sys, time; print('ready', flush=True); time.sleep(60)"

    def child(*args: str, cwd: Path = tmp_path, code: str = sleep) -> psutil.Process:
        p = subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, stdout=subprocess.PIPE)
        procs.append(p)
        assert p.stdout.readline() == b"ready\n"
        return psutil.Process(p.pid)

    assert works_in(child(cwd=run), str(run))  # its cwd
    assert works_in(child(cwd=run / "weights"), str(run))  # inside it
    assert works_in(child(f"model={run}/weights/last.pt", "resume=True"), str(run))  # a resume
    assert works_in(child("model=exp/weights/last.pt", cwd=run.parent), str(run))  # relative
    assert works_in(child(f"project={run.parent}", "name=exp"), str(run))  # libreyolo's pair
    holds = "import sys, time; f = open(sys.argv[1]); print('ready', flush=True); time.sleep(60)"
    log = str(run / "train.log")
    assert works_in(child(log, code=holds), str(run))  # named in argv too: open it unnamed
    opened = child(code=holds.replace("sys.argv[1]", repr(log)))
    assert works_in(opened, str(run))  # only its open train.log names the run
    # none of these: the run's parent, a sibling with the same prefix, nothing at all
    assert not works_in(child(cwd=run.parent), str(run))
    (run.parent / "exp2").mkdir()
    assert not works_in(child(cwd=run.parent / "exp2"), str(run))
    assert not works_in(child(f"project={run.parent}", "name=exp2"), str(run))
    assert not works_in(child(), str(run))
    # run_process applies it: the same live process is one run's, not another's
    p = child(cwd=run)
    assert run_process(p.pid, p.create_time() + 1, run_dir=str(run)).alive
    check = run_process(p.pid, p.create_time() + 1, run_dir=str(run.parent / "exp2"))
    assert not check.alive and "works in another directory" in check.reason
    p.send_signal(signal.SIGKILL)


def test_a_copy_reads_its_originals_files_once_not_every_refresh(
    tmp_path: Path, procs, monkeypatch
) -> None:
    """The copy's check reads the original's open files (psutil, /proc): a refresh a second
    must not do that again while nothing changed (PidWatch keeps the answer a while)."""
    from rgpu_tui.core.run import status as status_mod

    original = tmp_path / "runs" / "exp"
    trainer = start_trainer(original, 2, 10)
    procs.append(trainer)
    copy = tmp_path / "runs" / "exp-pulled"
    shutil.copytree(original, copy)
    calls = []
    real = status_mod.check_pid
    monkeypatch.setattr(status_mod, "check_pid", lambda *a: calls.append(a) or real(*a))
    watch = status_mod.PidWatch(str(copy))
    started = psutil.Process(trainer.pid).create_time()
    checks = [watch.check(trainer.pid, started) for _ in range(5)]
    assert all(not c.alive and c.elsewhere for c in checks)
    assert len(calls) == 1
    watch.check(trainer.pid, started + 1)  # status.json changed: read again
    assert len(calls) == 2
