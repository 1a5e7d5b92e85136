"""Resuming a run (core.launch.resume, `rgpu-tui resume`), without training: real processes stand
in for the trainer, and a fake `libreyolo` continues the run the way libreyolo does (in
the directory of the checkpoint it is given)."""

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
from support.checkpoints import epoch_checkpoint
from support.fifos import make_fifo, returns_within
from support.run_dir import iso
from support.waiting import wait_until

import rgpu_tui.core.launch.launch_spec as launch_spec_mod
from rgpu_tui.core.launch.resume import ResumeError, plan_resume, start_resume
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.launch_records import read_launches
from rgpu_tui.core.records.launch_runs import launch_state

PY = sys.executable

# A stand-in for `libreyolo train model=RUN/weights/last.pt resume=True ...`: it continues
# RUN (the checkpoint's run directory) as libreyolo does, records what it was given and how
# it was started, waits for $FAKE_GO (when set) before rewriting status.json, then completes.
FAKE_LIBREYOLO = """\
#!{python}
import json, os, stat, sys, time
from datetime import datetime, timezone
args = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
run = os.path.dirname(os.path.dirname(args["model"]))
go = os.environ.get("FAKE_GO")
while go and not os.path.exists(go):
    time.sleep(0.02)
seen = dict(argv=sys.argv, sid=os.getsid(0), pid=os.getpid(),
            stdin_is_char=stat.S_ISCHR(os.fstat(0).st_mode))
with open(os.path.join(run, "fake_argv.json"), "w") as f:
    json.dump(seen, f)
print("resuming", flush=True)
def status(state):
    st = dict(state=state, pid=os.getpid(), total_epochs=5, completed_epochs=3, start_epoch=3,
              started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    tmp = os.path.join(run, ".status.tmp")
    with open(tmp, "w") as f:
        json.dump(st, f)
    os.replace(tmp, os.path.join(run, "status.json"))
status("running")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
status("completed")
"""


@pytest.fixture
def fake_libreyolo(tmp_path: Path, monkeypatch) -> str:
    path = tmp_path / "bin" / "libreyolo"
    path.parent.mkdir()
    path.write_text(FAKE_LIBREYOLO.format(python=PY))
    path.chmod(0o755)
    # core.launch.resume asks core.launch.launch_spec for the executable (the one beside this
    # Python first)
    monkeypatch.setattr(launch_spec_mod, "libreyolo_executable", lambda: str(path))
    return str(path)


@pytest.fixture
def data_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "data dir: a" / "data.yaml"
    path.parent.mkdir()
    path.write_text("train: images/train\nval: images/val\nnc: 1\nnames: {0: a}\n")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "runs"
    root.mkdir()
    yield root
    for record in read_launches(str(root)):  # nothing outlives the test
        try:
            os.killpg(record.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _config(data: Path | str | None, device: str | None = "'0,1'") -> str:
    """A train_config.yaml as libreyolo's yaml.dump writes it (quoted where YAML needs)."""
    lines = ["size: t", "num_classes: 3"]
    if data is not None:
        lines.append(f"data: {json.dumps(str(data))}")
    lines += ["epochs: 5", "batch: 4"]
    if device is not None:
        lines.append(f"device: {device}")
    lines += ["workers: 0", "project: /elsewhere", "name: r", "exist_ok: false"]
    return "\n".join(lines) + "\n"


def make_run(
    project: Path,
    *,
    state: str = "running",
    pid: int | None = None,
    started_at: float | None = None,
    data: Path | str | None = None,
    device: str | None = "'0,1'",
    last_pt: bool = True,
    epochs_done: int = 2,
    name: str = "r",
) -> Path:
    """A run directory as libreyolo leaves it: status.json, metrics.jsonl for each epoch
    done, train_config.yaml, weights/last.pt."""
    run = project / name
    (run / "weights").mkdir(parents=True, exist_ok=True)
    status = {"state": state, "total_epochs": 5, "completed_epochs": epochs_done}
    if pid is not None:
        status["pid"] = pid
    status["started_at"] = iso(started_at if started_at is not None else time.time())
    (run / "status.json").write_text(json.dumps(status))
    with open(run / "metrics.jsonl", "w") as f:
        for epoch in range(1, epochs_done + 1):
            f.write(json.dumps({"epoch": epoch, "train/loss": 10.0 / epoch}) + "\n")
    (run / "train_config.yaml").write_text(_config(data, device))
    if last_pt:
        (run / "weights" / "last.pt").write_bytes(epoch_checkpoint(epochs_done, 5))
    return run


def _python_child(children, run_dir: Path | None = None) -> subprocess.Popen:
    """A `python` process (a trainer by its name), in its own session, working in
    `run_dir` (its cwd: core.run.run_process), until killed."""
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [PY, "-c", "import time; print('ready', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=run_dir,
    )
    children.append(proc)
    assert proc.stdout.readline() == b"ready\n"
    return proc


# -- the command ---------------------------------------------------------------------------


def test_the_command_takes_data_and_device_from_train_config(
    project: Path, data_yaml: Path, dead_pid: int
) -> None:
    run = make_run(project, pid=dead_pid, data=data_yaml, epochs_done=3)
    # status.json may lag the history (a kill between the two writes): the history counts
    (run / "status.json").write_text(
        json.dumps({"state": "running", "pid": dead_pid, "total_epochs": 5, "completed_epochs": 2})
    )
    plan = plan_resume(str(run), executable="/venv/bin/libreyolo")
    assert plan.argv == (
        "/venv/bin/libreyolo",
        "train",
        f"model={run}/weights/last.pt",
        "resume=True",
        f"data={data_yaml}",  # a path with a space and a colon, from quoted YAML
        "device=0,1",
    )
    assert (plan.state, plan.completed_epochs, plan.total_epochs) == ("dead", 3, 5)
    assert plan.run_dir == str(run) and plan.notices == ()
    # epochs, batch, workers, project, name: libreyolo restores them from the checkpoint
    assert not any(a.startswith(("epochs=", "workers=", "project=", "name=")) for a in plan.argv)


def test_given_data_and_device_win(project: Path, data_yaml: Path, tmp_path: Path) -> None:
    run = make_run(project, state="failed", data="/old/machine/data.yaml")
    with pytest.raises(ResumeError, match=r"/old/machine/data.yaml .* does not exist here.*--data"):
        plan_resume(str(run), executable="libreyolo")
    plan = plan_resume(str(run), data=str(data_yaml), device="cpu", executable="libreyolo")
    assert plan.argv[-2:] == (f"data={data_yaml}", "device=cpu") and plan.state == "failed"
    with pytest.raises(ResumeError, match="data: .*nowhere.yaml does not exist"):
        plan_resume(str(run), data=str(tmp_path / "nowhere.yaml"), executable="libreyolo")
    with pytest.raises(ResumeError, match="is not a device"):
        plan_resume(str(run), data=str(data_yaml), device="0 --help", executable="libreyolo")


def test_without_a_device_libreyolo_picks_and_it_is_said(
    project: Path, data_yaml: Path, dead_pid: int
) -> None:
    run = make_run(project, pid=dead_pid, data=data_yaml, device=None)
    plan = plan_resume(str(run), executable="libreyolo")
    assert plan.argv[-1] == f"data={data_yaml}"  # no device=: libreyolo's auto
    assert plan.notices == (
        "train_config.yaml names no device: libreyolo picks the device (auto); "
        "give it with --device",
    )


@pytest.mark.parametrize(
    "config, message",
    [
        (None, "train_config.yaml missing: give the dataset with --data"),
        ("size: t\nepochs: 5\n", "train_config.yaml names no dataset: give the dataset"),
        ("[1, 2", "train_config.yaml is not readable YAML"),
        ("- a\n- b\n", "train_config.yaml is not a mapping"),
    ],
)
def test_no_dataset_known_is_one_line(project: Path, dead_pid: int, config, message) -> None:
    run = make_run(project, pid=dead_pid)
    if config is None:
        (run / "train_config.yaml").unlink()
    else:
        (run / "train_config.yaml").write_text(config)
    with pytest.raises(ResumeError, match=message) as info:
        plan_resume(str(run), executable="libreyolo")
    assert "\n" not in str(info.value)


def test_the_hf_token_never_goes_on_the_command_line(project: Path, dead_pid: int) -> None:
    token = "hf_abcdefghijklmnopqrstuvwxyz"
    data = project / token / "data.yaml"
    data.parent.mkdir()
    data.write_text("nc: 1\n")
    run = make_run(project, pid=dead_pid, data=data)
    with pytest.raises(ResumeError, match="HF token must not be on the command line"):
        plan_resume(str(run), executable="libreyolo", environ={"HF_TOKEN": token})


# -- refusals --------------------------------------------------------------------------------


def test_refused_while_the_trainer_lives(project: Path, data_yaml: Path, children) -> None:
    proc = _python_child(children, project / "r")
    created = psutil.Process(proc.pid).create_time()
    run = make_run(project, pid=proc.pid, started_at=created, data=data_yaml)
    with pytest.raises(ResumeError, match=rf"r: still running \(pid {proc.pid}\): stop it first"):
        plan_resume(str(run), executable="libreyolo")
    proc.kill()
    proc.wait()
    assert plan_resume(str(run), executable="libreyolo").state == "dead"  # now DEAD


@pytest.fixture
def live_dir(project: Path) -> Path:
    return project / "r"  # where live_process works: make_run's run


def test_refused_while_a_live_pid_might_be_the_run(
    project: Path, data_yaml: Path, live_process: psutil.Process
) -> None:
    """status.json's pid is alive but stop_target would not call it the trainer (`sleep`):
    the app shows it running, so nothing is resumed, and the line says why."""
    run = make_run(project, pid=live_process.pid, data=data_yaml)
    with pytest.raises(ResumeError, match=r"process \d+ \(sleep\) is not python.*may be the run"):
        plan_resume(str(run), executable="libreyolo")


def test_refused_for_a_completed_run(project: Path, data_yaml: Path) -> None:
    run = make_run(project, state="completed", data=data_yaml, epochs_done=5)
    with pytest.raises(ResumeError, match="^r completed: nothing to resume$"):
        plan_resume(str(run), executable="libreyolo")


def test_refused_without_last_pt(project: Path, data_yaml: Path, dead_pid: int) -> None:
    run = make_run(project, pid=dead_pid, data=data_yaml, last_pt=False)
    with pytest.raises(ResumeError, match=r"^r: no checkpoint in weights/ \(last.pt, ") as e:
        plan_resume(str(run), executable="libreyolo")
    assert "\n" not in str(e.value)


def test_refused_when_last_pt_leaves_the_run_or_is_empty(
    project: Path, data_yaml: Path, dead_pid: int, tmp_path: Path
) -> None:
    run = make_run(project, pid=dead_pid, data=data_yaml, last_pt=False)
    outside = tmp_path / "elsewhere.pt"
    outside.write_bytes(b"x")
    (run / "weights" / "last.pt").symlink_to(outside)
    with pytest.raises(ResumeError, match="resolves to .*elsewhere.pt, outside the run"):
        plan_resume(str(run), executable="libreyolo")
    (run / "weights" / "last.pt").unlink()
    (run / "weights" / "epoch_2.pt").write_bytes(epoch_checkpoint(2))
    (run / "weights" / "last.pt").symlink_to("epoch_2.pt")  # inside the run: fine
    assert plan_resume(str(run), executable="libreyolo").state == "dead"
    (run / "weights" / "epoch_2.pt").write_bytes(b"")
    with pytest.raises(ResumeError, match="last.pt is empty"):
        plan_resume(str(run), executable="libreyolo")


@pytest.mark.parametrize("where", ["weights/last.pt", "status.json", "train_config.yaml"])
def test_a_fifo_never_blocks(project: Path, data_yaml: Path, dead_pid: int, where: str) -> None:
    run = make_run(project, pid=dead_pid, data=data_yaml)
    (run / where).unlink()
    fifo = make_fifo(run / where)

    def attempt() -> str:
        try:
            plan_resume(str(run), executable="libreyolo")
        except ResumeError as exc:
            return str(exc)
        return "resumed"

    said = returns_within(attempt, [fifo], what="plan_resume")
    assert f"{where.split('/')[-1]} is not a regular file" in said


def test_refused_for_what_is_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(ResumeError, match="is not a run directory"):
        plan_resume(str(tmp_path / "nowhere"), executable="libreyolo")


# -- starting it -------------------------------------------------------------------------------


def test_resume_starts_detached_and_recorded_like_a_launch(
    project: Path, data_yaml: Path, dead_pid: int, fake_libreyolo: str, tmp_path: Path
) -> None:
    run = make_run(project, pid=dead_pid, data=data_yaml, device="cpu")
    go = tmp_path / "go"
    env = {**os.environ, "FAKE_GO": str(go), "FAKE_SLEEP": "0.3"}
    plan, record = start_resume(str(run), env=env)
    assert record.argv == plan.argv and record.argv[0] == fake_libreyolo
    assert record.console_log.startswith(str(project / ".rgpu" / "console" / "r-"))
    assert (record.project, record.name) == (str(project), "r")
    (saved,) = read_launches(str(project))
    assert saved.pid == record.pid and saved.argv == record.argv

    # until it rewrites status.json it is "starting", and a second resume is refused
    assert launch_state(record, time.time()).state == "starting"
    with pytest.raises(ResumeError, match=rf"already being resumed \(pid {record.pid}"):
        plan_resume(str(run))
    go.touch()
    state = wait_until(
        lambda: (s := launch_state(record, time.time())).state == "started" and s,
        what="the resumed run to rewrite status.json",
    )
    assert state.run_dir == str(run)  # continued in place
    assert sorted(p.name for p in project.iterdir()) == [".rgpu", "r"]  # no r2
    seen = json.loads((run / "fake_argv.json").read_text())
    assert seen["argv"] == list(record.argv)
    assert seen["sid"] == seen["pid"] == record.pid  # its own session
    assert seen["stdin_is_char"]  # /dev/null
    wait_until(lambda: read_launches(str(project))[0].returncode == 0, what="the exit record")
    assert "resuming" in Path(record.console_log).read_text()
    with pytest.raises(ResumeError, match="completed: nothing to resume"):
        plan_resume(str(run))


def test_two_resumes_at_once_start_one(
    project: Path, data_yaml: Path, dead_pid: int, fake_libreyolo: str, tmp_path: Path
) -> None:
    """Two confirms in the app at the same moment (two worker threads): one resume starts,
    the other is refused as already being resumed."""
    import threading

    run = make_run(project, pid=dead_pid, data=data_yaml, device="cpu")
    env = {**os.environ, "FAKE_GO": str(tmp_path / "go")}  # never comes: stays starting
    barrier = threading.Barrier(4)
    results: list = []

    def attempt() -> None:
        barrier.wait()
        try:
            results.append(start_resume(str(run), env=env)[1].pid)
        except ResumeError as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=attempt) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    started = [r for r in results if isinstance(r, int)]
    assert len(started) == 1, results
    assert len(read_launches(str(project))) == 1
    assert all("already being resumed" in r for r in results if isinstance(r, str))


# -- the command line ------------------------------------------------------------------------------


def test_cli_resume(
    project: Path, data_yaml: Path, dead_pid: int, fake_libreyolo: str, capsys
) -> None:
    from rgpu_tui.cli import main

    run = make_run(project, pid=dead_pid, data=data_yaml, device="cpu")
    assert main(["resume", str(run), "--json", "--wait", "30"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "started" and out["resumed_in"] == out["run_dir"] == str(run)
    assert out["command"] == out["plan"]["command"]
    assert out["launch"]["argv"][1:] == [
        "train",
        f"model={run}/weights/last.pt",
        "resume=True",
        f"data={data_yaml}",
        "device=cpu",
    ]
    assert os.path.isfile(out["console_log"]) and out["pid"] == out["launch"]["pid"]
    wait_until(lambda: json.loads((run / "status.json").read_text())["state"] == "completed")

    assert main(["resume", str(run)]) == 1
    err = capsys.readouterr().err
    assert err == "rgpu-tui: not resumed: r completed: nothing to resume\n"
    assert main(["resume", str(run), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "state": "refused",
        "error": "r completed: nothing to resume",
    }


def test_cli_resume_prints_like_launch(
    project: Path, data_yaml: Path, dead_pid: int, fake_libreyolo: str, capsys
) -> None:
    from rgpu_tui.cli import main

    run = make_run(project, state="failed", data=data_yaml, device="cpu")
    assert main(["resume", str(run), "--wait", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("resumed: pid ")
    assert lines[0].endswith(
        "(failed after epoch 2/5) from weights/last.pt (epoch 2): no epoch is trained again"
    )
    assert lines[1] == f"command: {fake_libreyolo} train model={run}/weights/last.pt " + (
        f"resume=True 'data={data_yaml}' device=cpu"
    )
    assert lines[2].startswith(f"console log: {project}/.rgpu/console/r-")
    assert lines[-1] == f"run directory: {run}"


# -- what the app shows of a resumed run --------------------------------------------------------


def test_a_resumed_run_shows_the_true_epoch_progress_and_eta(
    tmp_path: Path, write_status, write_metrics, children
) -> None:
    """libreyolo's status.json counts a resumed run's epochs from the resume point
    (completed_epochs 3, progress 0.6 for a 5-epoch run resumed after epoch 2, once done);
    the history has every epoch, and the run reads 5/5."""
    run = tmp_path / "runs" / "r"
    me = psutil.Process(_python_child(children, run).pid)  # the trainer, working in its run
    now = time.time()
    write_metrics(run, [{"epoch": e, "train/loss": 10.0 / e} for e in range(1, 4)])
    write_status(
        run,
        mtime=now - 2,
        state="running",
        pid=me.pid,
        started_at=iso(me.create_time()),
        total_epochs=5,
        completed_epochs=1,  # counted from the resume point (epoch 3)
        start_epoch=3,
        progress=0.2,
        mean_epoch_seconds=10.0,
    )
    watcher = RunsWatcher(str(run.parent))
    (info,) = watcher.refresh(now=now).runs
    assert (info.state, info.current_epoch, info.total_epochs) == ("running", 3, 5)
    assert info.progress == pytest.approx(0.6)
    assert info.eta_seconds == pytest.approx(10.0 * 2 - 2, abs=0.5)  # 2 epochs left

    write_metrics(run, [{"epoch": e, "train/loss": 10.0 / e} for e in (4, 5)])
    write_status(
        run,
        state="completed",
        pid=me.pid,
        total_epochs=5,
        completed_epochs=3,
        start_epoch=3,
        progress=0.6,
        elapsed_seconds=30.0,
    )
    (info,) = watcher.refresh(now=now + 60).runs
    assert (info.state, info.current_epoch, info.total_epochs) == ("completed", 5, 5)
    assert info.progress == 1.0 and info.eta_seconds is None
    assert info.mean_epoch_seconds == pytest.approx(10.0)  # 30 s over the 3 epochs it ran


def test_cli_resume_prints_a_hostile_run_name_inert(
    project: Path, data_yaml: Path, dead_pid: int, capsys
) -> None:
    from rgpu_tui.cli import main

    name = "r\x1b]0;pwned\x07\x1b[2J"
    run = make_run(project, pid=dead_pid, data=data_yaml, last_pt=False, name=name)
    assert main(["resume", str(run)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert err.startswith("rgpu-tui: not resumed: r^[]0;pwned") and err.count("\n") == 1
