"""End to end: real `libreyolo train` runs started and stopped by rgpu-tui's launcher.

Tiny CPU trainings (2 epochs, or stopped after the first), one at a time, on
the session's synthetic dataset. Marked ``training``; deselect with
``-m "not training"``. Every wait polls against a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.launch.launch import launch
from rgpu_tui.core.launch.launch_spec import make_spec
from rgpu_tui.core.launch.stop import stop_run
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.launch_records import LaunchRecord, read_launches
from rgpu_tui.core.records.launch_runs import (
    find_run_dir,
    launch_alive,
    launch_state,
    match_launches,
    runs_on_disk,
)

pytestmark = pytest.mark.training

TIMEOUT = 180.0  # generous for slow CI; a 2-epoch run takes about 10 s here
TRAIN_ARGS = ("pretrained=False", "workers=0", "amp=False", "eval_interval=1", "save_period=1")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
FAST_STOP = Settings(stop_term_after=10, stop_kill_after=20)


def _status(run_dir: str | Path) -> dict:
    try:
        return json.loads((Path(run_dir) / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _console(record: LaunchRecord) -> str:
    try:
        text = Path(record.console_log).read_text(errors="replace")
    except OSError as exc:
        return f"<console log unreadable: {exc}>"
    return "--- console log ---\n" + "\n".join(text.splitlines()[-30:])


def _started(record: LaunchRecord) -> str:
    """Wait for the run directory; fail with the console tail if the launch died."""

    def check():
        state = launch_state(record, time.time())
        if state.state == "died":
            pytest.fail(f"the launch died: {state.error}\n{_console(record)}")
        return state.run_dir if state.state == "started" else None

    return wait_until(check, "the run directory", TIMEOUT, details=lambda: _console(record))


def _ended(record: LaunchRecord) -> None:
    wait_until(
        lambda: not launch_alive(record),
        "the trainer to exit",
        TIMEOUT,
        details=lambda: _console(record),
    )


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """The runs root; every process launched under it is killed on teardown."""
    root = tmp_path / "runs"
    yield root
    for record in read_launches(str(root)):
        if launch_alive(record):
            try:
                os.killpg(record.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _spec(data: Path, project: Path, name: str, epochs: int, **kw):
    return make_spec(
        str(data),
        str(project),
        model=kw.pop("model", "yolo9-t"),
        epochs=epochs,
        batch=4,
        imgsz=128,
        device="cpu",
        name=name,
        extra=TRAIN_ARGS,
        **kw,
    )


def test_launch_completes_and_is_found(trained_dataset: Path, project: Path) -> None:
    record = launch(_spec(trained_dataset, project, "run", 2), env=ENV)
    assert launch_state(record, time.time()).state == "starting"
    run_dir = _started(record)
    assert run_dir == str(project / "run")
    assert os.getsid(record.pid) == record.pid  # its own session
    _ended(record)
    st = _status(run_dir)
    assert st.get("state") == "completed", _console(record)
    assert st["pid"] == record.pid
    assert find_run_dir(str(project), record.pid, "run", started_after=record.time) == run_dir
    # the launcher's reaper recorded the exit; the run is found from the records and the
    # runs on disk, without writing (only `rgpu-tui launch` records the run directory)
    wait_until(lambda: read_launches(str(project))[0].returncode == 0, "the exit record", 10)
    (saved,) = read_launches(str(project))
    assert saved.run_dir is None and saved.returncode == 0
    assert match_launches([saved], runs_on_disk(str(project)), str(project)) == {saved.id: run_dir}
    with pytest.raises(psutil.NoSuchProcess):  # reaped: no zombie
        psutil.Process(record.pid).status()
    log = Path(record.console_log).read_text()
    assert "Training complete" in log


LAUNCHER = """
import json, os, signal, sys, time
from rgpu_tui.core.launch.launch import launch
from rgpu_tui.core.launch.launch_spec import make_spec
# a terminal's process dies of SIGHUP; under nohup (a CI runner, say) it is ignored, and
# children inherit that: put it back so the trainer's own protection is what is tested
signal.signal(signal.SIGHUP, signal.SIG_DFL)
data, project = sys.argv[1], sys.argv[2]
spec = make_spec(data, project, model="yolo9-t", epochs=2, batch=4, imgsz=128, device="cpu",
                 name="orphan", extra=sys.argv[3:])
record = launch(spec)
print(json.dumps(record.to_json()), flush=True)
time.sleep(120)
"""


def test_a_run_survives_its_launcher_and_sighup(trained_dataset: Path, project: Path) -> None:
    """Launched from a process that then dies of SIGHUP with its whole session."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(trained_dataset), str(project), *TRAIN_ARGS],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=ENV,
        start_new_session=True,  # its own session: a terminal's, in effect
    )
    try:
        line = launcher.stdout.readline()
        assert line, "the launcher printed nothing"
        obj = json.loads(line)
        pid = obj["pid"]
        assert os.getsid(pid) == pid != os.getsid(launcher.pid)
        os.killpg(launcher.pid, signal.SIGHUP)  # the terminal went away
        assert launcher.wait(10) == -signal.SIGHUP
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    (record,) = read_launches(str(project))
    assert record.pid == pid
    run_dir = _started(record)
    _ended(record)
    assert _status(run_dir).get("state") == "completed", _console(record)


def test_stop_ends_a_running_run_as_stopped(trained_dataset: Path, project: Path) -> None:
    """libreyolo writes failed/KeyboardInterrupt on SIGINT and drops completed_epochs; the
    stop record makes it the user's stop: STOPPED, its epochs kept, no run_failed."""
    record = launch(_spec(trained_dataset, project, "stopme", 30), env=ENV)
    run_dir = _started(record)
    wait_until(lambda: _status(run_dir).get("current_epoch"), "the first epoch", TIMEOUT)
    seen: list[tuple[str, float | None]] = []
    result = stop_run(run_dir, FAST_STOP, on_progress=lambda p, s: seen.append((p, s)))
    assert result.ok, result.error
    # SIGINT alone ended it: no SIGTERM was due, so it ended within stop_term_after
    assert result.signals_sent == ("SIGINT",), (result, _console(record))
    assert result.target == f"process group {record.pid}"
    assert result.final_state == "stopped"
    st = _status(run_dir)
    assert st["state"] == "failed" and st["error"]["type"] == "KeyboardInterrupt"
    assert "completed_epochs" not in st  # libreyolo dropped it
    assert seen[0] == ("sigint", pytest.approx(10, abs=0.5)) and seen[-1] == ("ended", None)
    assert not launch_alive(record)
    (info,) = RunsWatcher(run_dir).refresh(time.time()).runs
    assert info.state == "stopped" and info.error is None
    assert info.completed_epochs and info.completed_epochs >= 1  # from metrics.jsonl
    assert info.progress == pytest.approx(info.completed_epochs / 30)


def test_arguments_arrive_literally(trained_dataset: Path, project: Path) -> None:
    weird = 'it\'s a "run"; echo pwned && $HOME `id` > x'
    record = launch(_spec(trained_dataset, project, weird, 30), env=ENV)
    assert f"name={weird}" in record.argv
    run_dir = _started(record)
    assert run_dir == str(project / weird)
    cmdline = psutil.Process(record.pid).cmdline()  # the real argv of the trainer
    assert cmdline[-len(record.argv) :] == list(record.argv)
    assert f"name={weird}" in cmdline
    assert read_launches(str(project))[0].argv == record.argv
    assert stop_run(run_dir, FAST_STOP).final_state == "stopped"


def test_a_clashing_name_resolves_to_name2(trained_dataset: Path, project: Path) -> None:
    old = project / "clash"
    old.mkdir(parents=True)
    (old / "status.json").write_text(
        json.dumps({"state": "completed", "pid": os.getpid(), "started_at": "2020-01-01T00:00:00Z"})
    )
    record = launch(_spec(trained_dataset, project, "clash", 30), env=ENV)
    run_dir = _started(record)
    assert run_dir == str(project / "clash2")
    assert find_run_dir(str(project), record.pid, "clash") == run_dir
    # its argv names project/clash; its open train.log names clash2: it is clash2's
    assert stop_run(run_dir, FAST_STOP).final_state == "stopped"


def test_a_bad_model_name_shows_the_console_error(trained_dataset: Path, project: Path) -> None:
    record = launch(_spec(trained_dataset, project, "bad", 2, model="yolo9-zz"), env=ENV)

    def died():
        state = launch_state(record, time.time())
        assert state.state != "started", "a run with a bad model started"
        return state if state.state == "died" else None

    state = wait_until(died, "the launch to die", TIMEOUT, details=lambda: _console(record))
    assert "Unknown model 'yolo9-zz'" in state.error, state
    assert state.tail and state.run_dir is None
    wait_until(lambda: read_launches(str(project))[0].returncode is not None, "the exit record", 10)
    (saved,) = read_launches(str(project))
    final = launch_state(saved, time.time())
    assert final.state == "died"
    assert final.error.startswith(f"exited with status {saved.returncode} before writing")


def _rgpu_tui() -> str:
    return str(Path(sys.executable).parent / "rgpu-tui")


def test_doctor_errors_block_the_launch(
    trained_dataset: Path, project: Path, tmp_path: Path, capsys
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(trained_dataset.parent, broken)
    shutil.rmtree(broken / "images")
    data = broken / "data.yaml"
    data.write_text(data.read_text().replace(str(trained_dataset.parent), str(broken)))
    from rgpu_tui.cli import main

    rc = main(["launch", "--project", str(project), "--", f"data={data}", "model=yolo9-t"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "config.path_not_found [train]" in err and "not launched" in err
    assert read_launches(str(project)) == []  # nothing was started


def test_demo_no_app_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("libreyolo")
    work = tmp_path / "demo"
    proc = subprocess.run(
        [_rgpu_tui(), "demo", "--no-app", "--epochs", "2", "--dir", str(work)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=TIMEOUT,
    )
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out = proc.stdout
        assert f"demo directory: {work}" in out
        assert "libreyolo doctor: 0 error(s)" in out
        run_dir = work / "runs" / "demo"
        assert f"run directory: {run_dir}" in out, out
        (record,) = read_launches(str(work / "runs"))
        assert "model=yolo9-t" in record.argv and "epochs=2" in record.argv
        assert "save_period=5" in record.argv and "device=cpu" in record.argv
        _ended(record)
        assert _status(run_dir).get("state") == "completed", _console(record)
        assert (work / "dataset" / "images" / "train").is_dir()
        assert len(list((work / "dataset" / "images" / "val").iterdir())) == 8
    finally:
        for record in read_launches(str(work / "runs")):
            if launch_alive(record):
                os.killpg(record.pid, signal.SIGKILL)
