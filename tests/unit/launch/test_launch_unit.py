"""Launching, stopping and the preflights, without training (core.launch.launch_spec,
core.launch.launch, core.launch.stop, core.launch.doctor, core.launch.gpu_probe).

Real processes stand in for the trainer: small Python children, and a fake
`libreyolo` script that writes a status.json the way libreyolo does.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.run_dir import iso
from support.waiting import wait_until

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.launch.doctor import parse_doctor
from rgpu_tui.core.launch.gpu_probe import parse_probe, preflight_to_text
from rgpu_tui.core.launch.launch import append_line, launch, record_run_dir, spawn_detached
from rgpu_tui.core.launch.launch_spec import (
    LaunchError,
    LaunchSpec,
    build_argv,
    default_device,
    display_command,
    hf_status,
    make_spec,
    split_extra,
)
from rgpu_tui.core.launch.stop import stop_run
from rgpu_tui.core.records.launch_records import LaunchRecord, launches_path, read_launches
from rgpu_tui.core.records.launch_runs import (
    console_tail,
    error_from_tail,
    find_run_dir,
    launch_state,
    match_launches,
    runs_on_disk,
)

PY = sys.executable


# -- helpers ----------------------------------------------------------------------


@pytest.fixture
def data_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "data.yaml"
    path.parent.mkdir()
    path.write_text("train: images/train\nval: images/val\nnc: 1\nnames: {0: a}\n")
    return path


def _start_child(children, code: str, run_dir: Path | None = None) -> subprocess.Popen:
    """A Python child leading its own session, working in `run_dir` (its cwd, as a trainer
    works in its run: core.run.run_process); returns once it printed 'ready'."""
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [PY, "-c", code],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=run_dir,
    )
    children.append(proc)
    assert proc.stdout.readline().strip() == b"ready"
    return proc


SLEEPER = "import time; print('ready', flush=True); time.sleep(60)"
TRAPS_INT = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, lambda *a: None)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)
TRAPS_INT_TERM = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, lambda *a: None)\n"
    "signal.signal(signal.SIGTERM, lambda *a: None)\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


def _status_for(run_dir: Path, pid: int, started_at: float, state: str = "running") -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(
        json.dumps({"state": state, "pid": pid, "started_at": iso(started_at)})
    )
    return run_dir


class FakeClock:
    """now()/sleep() for stop_run: sleep advances the clock (and yields a little real time)."""

    def __init__(self, start: float = 1_000_000.0):
        self.t = start

    def now(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.t += dt
        time.sleep(0.004)


# -- the command ----------------------------------------------------------------------


def test_build_argv_fields_then_extra_literally() -> None:
    spec = LaunchSpec(
        data="/d/data.yaml",
        project="/runs",
        model="yolo9-t",
        epochs=3,
        batch=4,
        imgsz="128",
        device="0,1",
        name="my run",
        extra=("cache=ram", "name2=a; rm -rf /"),
    )
    argv = build_argv(spec, "/venv/bin/libreyolo")
    assert argv == [
        "/venv/bin/libreyolo",
        "train",
        "model=yolo9-t",
        "data=/d/data.yaml",
        "epochs=3",
        "batch=4",
        "imgsz=128",
        "device=0,1",
        "project=/runs",
        "name=my run",
        "cache=ram",
        "name2=a; rm -rf /",
    ]
    shown = display_command(argv)
    assert shlex.split(shown) == argv  # the display is exactly the argv
    assert "'name=my run'" in shown


def test_split_extra_like_a_shell() -> None:
    assert split_extra("cache=ram  'name=a b' \"x=it's\" y=\\;z") == (
        "cache=ram",
        "name=a b",
        "x=it's",
        "y=;z",
    )
    assert split_extra("") == ()
    assert split_extra(None) == ()
    assert split_extra(["a=1", "b=2 3"]) == ("a=1", "b=2 3")  # a list is taken as it is
    with pytest.raises(LaunchError, match="no closing quotation"):
        split_extra("name='unbalanced")


def test_default_device() -> None:
    assert default_device(0) == "cpu"
    assert default_device(None) == "cpu"
    assert default_device(1) == "0"
    assert default_device(4) == "0,1,2,3"


def test_make_spec_defaults(data_yaml: Path, tmp_path: Path) -> None:
    settings = Settings(model="yolo9-s")
    spec = make_spec(str(data_yaml), str(tmp_path / "runs"), settings=settings, gpu_count=2)
    assert spec.model == "yolo9-s"
    assert (spec.epochs, spec.batch, spec.imgsz, spec.device) == (100, -1, "640", "0,1")
    assert spec.name == "exp"
    assert spec.data == str(data_yaml) and os.path.isabs(spec.project)
    assert make_spec(str(data_yaml), str(tmp_path), gpu_count=0).device == "cpu"
    assert make_spec(str(data_yaml), str(tmp_path)).model == "LibreYOLO9s.pt"  # no settings
    assert make_spec(str(data_yaml), str(tmp_path), settings=Settings()).model == "LibreYOLO9s.pt"


def test_make_spec_relative_paths_become_absolute(
    data_yaml: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = make_spec("data/data.yaml", "runs", epochs="7", imgsz="480x640", extra="cache=ram")
    assert spec.data == str(data_yaml)
    assert spec.project == str(tmp_path / "runs")
    assert (spec.epochs, spec.imgsz, spec.extra) == (7, "480x640", ("cache=ram",))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"data": "/nonexistent/data.yaml"}, "does not exist"),
        ({"epochs": "many"}, "epochs: must be a whole number"),
        ({"epochs": 0}, "epochs: must be 1 or more"),
        ({"batch": 0}, "batch"),
        ({"imgsz": "big"}, "imgsz"),
        ({"name": "a/b"}, "not a directory name"),
        ({"extra": "epochs=5"}, "epochs has its own field"),
        ({"extra": "cache=ram cache=disk"}, "cache is given twice"),
        ({"extra": "stray"}, "'stray' is not key=value"),
    ],
)
def test_make_spec_refuses(data_yaml: Path, tmp_path: Path, kwargs, message) -> None:
    args = {"data": str(data_yaml), "project": str(tmp_path / "runs"), **kwargs}
    with pytest.raises(LaunchError, match=message):
        make_spec(**args)


def test_the_hf_token_never_goes_on_the_command_line(
    data_yaml: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secretsecret123")
    with pytest.raises(LaunchError, match="HF token must not be on the command line"):
        make_spec(str(data_yaml), str(tmp_path), extra="hub_token=hf_secretsecret123")


def test_make_spec_without_the_files_touches_none(tmp_path: Path, monkeypatch) -> None:
    """check_files=False (the launch form's keystroke check) stats nothing, the HF token
    check included (it once looked the libreyolo executable up on PATH), and still refuses
    what is wrong with the text; with the files checked, the same values are refused."""
    monkeypatch.setenv("HF_TOKEN", "hf_secretsecret123")
    project = tmp_path / "a-file"
    project.write_text("")
    args = {"data": str(tmp_path / "no" / "data.yaml"), "project": str(project)}
    with pytest.raises(LaunchError, match="does not exist"):
        make_spec(**args)

    def no_filesystem(*args, **kwargs):
        raise AssertionError(f"touched the filesystem: {args}")

    for name in ("stat", "lstat", "access", "listdir", "scandir"):
        monkeypatch.setattr(os, name, no_filesystem)
    spec = make_spec(**args, check_files=False)
    assert (spec.data, spec.project) == (args["data"], args["project"])
    with pytest.raises(LaunchError, match="HF token must not be on the command line"):
        make_spec(**args, extra="hub_token=hf_secretsecret123", check_files=False)
    with pytest.raises(LaunchError, match="epochs: must be a whole number"):
        make_spec(**args, epochs="many", check_files=False)


def test_hf_status_reports_a_bool_and_the_cache() -> None:
    st = hf_status({"HF_TOKEN": "hf_x", "HF_HOME": "/big/hf"})
    assert (st.token_set, st.home, st.home_from_env) == (True, "/big/hf", True)
    st = hf_status({"XDG_CACHE_HOME": "/c"})
    assert (st.token_set, st.home, st.home_from_env) == (False, "/c/huggingface", False)
    assert "hf_x" not in repr(hf_status({"HF_TOKEN": "hf_x"}))


# -- records ------------------------------------------------------------------------


def _launch_line(project: Path, id_: str, pid: int, t: float = 100.0) -> dict:
    return {
        "kind": "launch",
        "id": id_,
        "time": t,
        "pid": pid,
        "create_time": t - 0.5,
        "argv": ["libreyolo", "train", "name=x y"],
        "command": "libreyolo train 'name=x y'",
        "cwd": "/",
        "project": str(project),
        "name": "x y",
        "console_log": str(project / ".rgpu" / "console" / "x.log"),
        "hf_token_set": False,
        "hf_home": "/hf",
    }


def test_records_merge_and_tolerate_a_torn_last_line(tmp_path: Path) -> None:
    path = launches_path(str(tmp_path))
    append_line(path, _launch_line(tmp_path, "a", 11, 100.0))
    append_line(path, _launch_line(tmp_path, "b", 12, 200.0))
    record_run_dir(str(tmp_path), "a", "/runs/x y2")
    append_line(path, {"kind": "exit", "id": "a", "returncode": 0, "time": 150.0})
    append_line(path, {"kind": "run_dir", "id": "unknown", "run_dir": "/nowhere"})
    with open(path, "ab") as f:
        f.write(b"not json\n[1,2]\n")
        f.write(b'{"kind":"launch","id":"c","time":300,"pid":13,"argv":["lib')  # torn
    records = read_launches(str(tmp_path))
    assert [r.id for r in records] == ["a", "b"]
    a, b = records
    assert a.run_dir == "/runs/x y2" and a.returncode == 0 and a.exited_at == 150.0
    assert a.argv == ("libreyolo", "train", "name=x y")
    assert b.run_dir is None and b.returncode is None
    # every line written is one complete line
    assert open(path, "rb").read().count(b"\n") == 7


def test_read_launches_without_a_file(tmp_path: Path) -> None:
    assert read_launches(str(tmp_path / "nowhere")) == []


# -- finding the run directory ----------------------------------------------------------


def test_find_run_dir_matches_the_pid_not_the_name(tmp_path: Path) -> None:
    now = time.time()
    _status_for(tmp_path / "exp", pid=111, started_at=now - 3600)  # the clash
    _status_for(tmp_path / "exp2", pid=222, started_at=now)
    _status_for(tmp_path / "other", pid=333, started_at=now)
    (tmp_path / "exp3").mkdir()  # no status.json yet
    assert find_run_dir(str(tmp_path), 222, "exp") == str(tmp_path / "exp2")
    assert find_run_dir(str(tmp_path), 333, "exp") is None  # libreyolo never renames so
    assert find_run_dir(str(tmp_path), 333, None) == str(tmp_path / "other")  # no name: all
    assert find_run_dir(str(tmp_path), 444, "exp") is None
    # an old run that happens to carry the same pid is not the launch
    assert find_run_dir(str(tmp_path), 111, "exp", started_after=now - 10) is None
    assert find_run_dir(str(tmp_path), 111, "exp") == str(tmp_path / "exp")
    assert find_run_dir(str(tmp_path / "missing"), 1, "exp") is None


def test_find_run_dir_accepts_a_descendant_of_the_launched_pid(tmp_path: Path, children) -> None:
    """Multi-GPU libreyolo writes rank 0's pid: a grandchild of the launched process."""
    code = (
        "import subprocess, sys, time\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('ready', flush=True)\n"
        "print(c.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = _start_child(children, code)
    rank0 = int(parent.stdout.readline())
    _status_for(tmp_path / "ddp", pid=rank0, started_at=time.time())
    assert find_run_dir(str(tmp_path), parent.pid, "ddp") == str(tmp_path / "ddp")
    assert find_run_dir(str(tmp_path), os.getpid() + 999999, "ddp") is None


# -- spawning ----------------------------------------------------------------------------


def test_spawn_detached_reaps_and_reports_the_exit(tmp_path: Path) -> None:
    done = threading.Event()
    codes: list[int] = []
    fd = os.open(tmp_path / "console.log", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        proc = spawn_detached(
            [PY, "-c", "import os, sys; print('hi', os.getsid(0) == os.getpid()); sys.exit(3)"],
            fd,
            on_exit=lambda rc: (codes.append(rc), done.set()),
        )
    finally:
        os.close(fd)
    assert done.wait(10)
    assert codes == [3]
    assert (tmp_path / "console.log").read_text() == "hi True\n"  # its own session
    with pytest.raises(psutil.NoSuchProcess):  # reaped: no zombie left
        psutil.Process(proc.pid).status()


def test_spawn_detached_restores_sigint_the_launcher_ignores(tmp_path: Path) -> None:
    """A launcher run with SIGINT ignored (`cmd &` in a script) must not pass that on."""
    log = tmp_path / "console.log"
    done = threading.Event()
    codes: list[int] = []
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            proc = spawn_detached(
                [PY, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
                fd,
                on_exit=lambda rc: (codes.append(rc), done.set()),
            )
        finally:
            os.close(fd)
    finally:
        signal.signal(signal.SIGINT, old)
    try:
        wait_until(lambda: "ready" in log.read_text(), what="the child to start")
        assert psutil.Process(proc.pid).cmdline()[1:3] == [
            "-c",
            "import time; print('ready', flush=True); time.sleep(30)",
        ]
        os.killpg(proc.pid, signal.SIGINT)
        assert done.wait(10), "SIGINT did not stop the child"
    finally:
        if not done.is_set():
            os.killpg(proc.pid, signal.SIGKILL)
    assert codes == [-signal.SIGINT]  # KeyboardInterrupt, re-raised as the signal
    assert "KeyboardInterrupt" in log.read_text()


# -- launch() with a fake libreyolo -----------------------------------------------------

FAKE_LIBREYOLO = """\
#!{python}
# A stand-in for `libreyolo train`: libreyolo's NAME -> NAME2 rule, then status.json.
import json, os, sys, time
from datetime import datetime, timezone
args = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
mode = os.environ.get("FAKE_MODE", "ok")
print("setting up", flush=True)
if mode == "bad_model":
    print("2026-01-01 00:00:00 | ERROR    | Error [model_not_found]: Unknown model "
          + repr(args["model"]), file=sys.stderr, flush=True)
    print("2026-01-01 00:00:00 | INFO     |   Suggestion: Available: a, b", file=sys.stderr)
    sys.exit(4)
project, name = args["project"], args["name"]
run = os.path.join(project, name)
i = 2
while os.path.exists(run):
    run = os.path.join(project, name + str(i))
    i += 1
os.makedirs(run)
with open(os.path.join(run, "argv.json"), "w") as f:
    json.dump(sys.argv, f)
st = dict(state="running", pid=os.getpid(), save_dir=run,
          started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
tmp = os.path.join(run, ".status.tmp")
with open(tmp, "w") as f:
    json.dump(st, f)
os.replace(tmp, os.path.join(run, "status.json"))
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
st["state"] = "completed"
with open(tmp, "w") as f:
    json.dump(st, f)
os.replace(tmp, os.path.join(run, "status.json"))
"""


@pytest.fixture
def fake_libreyolo(tmp_path: Path) -> str:
    path = tmp_path / "bin" / "libreyolo"
    path.parent.mkdir()
    path.write_text(FAKE_LIBREYOLO.format(python=PY))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "runs"
    yield root
    for record in read_launches(str(root)):  # nothing outlives the test
        try:
            os.killpg(record.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _env(**extra) -> dict:
    return {**os.environ, **extra}


def test_launch_records_and_finds_the_renamed_run(
    fake_libreyolo: str, data_yaml: Path, project: Path
) -> None:
    weird = 'it\'s a "run"; echo pwned'
    (project / weird).mkdir(parents=True)  # a clash: the run goes to NAME2
    spec = make_spec(str(data_yaml), str(project), name=weird, extra=["note=a b; c"])
    record = launch(spec, env=_env(FAKE_SLEEP="0.5"), executable=fake_libreyolo)
    assert record.argv[0] == fake_libreyolo
    assert f"name={weird}" in record.argv and "note=a b; c" in record.argv
    assert shlex.split(record.command) == list(record.argv)
    assert record.create_time is not None and os.path.isfile(record.console_log)
    assert record.console_log.startswith(str(project / ".rgpu" / "console"))

    state = wait_until(
        lambda: (s := launch_state(record, time.time())).state == "started" and s,
        what="the run directory",
    )
    assert state.run_dir == str(project / (weird + "2"))
    got_argv = json.loads((project / (weird + "2") / "argv.json").read_text())
    assert got_argv == list(record.argv)  # every item arrived literally
    # the read path finds it from the records and the runs on disk, and writes nothing
    before = Path(launches_path(str(project))).read_bytes()
    (saved,) = read_launches(str(project))
    assert saved.run_dir is None and saved.pid == record.pid and saved.argv == record.argv
    matched = match_launches([saved], runs_on_disk(str(project)), str(project))
    assert matched == {saved.id: state.run_dir}
    assert Path(launches_path(str(project))).read_bytes() == before
    wait_until(lambda: read_launches(str(project))[0].returncode == 0, what="the exit record")
    assert "setting up" in Path(record.console_log).read_text()


def test_a_launch_that_dies_early_shows_the_console_error(
    fake_libreyolo: str, data_yaml: Path, project: Path
) -> None:
    spec = make_spec(str(data_yaml), str(project), model="yolo9-zz", name="bad")
    record = launch(spec, env=_env(FAKE_MODE="bad_model"), executable=fake_libreyolo)
    state = wait_until(
        lambda: (s := launch_state(record, time.time())).state == "died" and s,
        what="the launch to die",
    )
    assert state.run_dir is None
    assert "before writing status.json" in state.error
    assert "Unknown model 'yolo9-zz'" in state.error
    assert "| ERROR" not in state.error  # the log prefix is cut
    assert any("Suggestion" in line for line in state.tail)
    # once the reaper recorded the exit, the record carries the status
    wait_until(lambda: read_launches(str(project))[0].returncode == 4, what="the exit record")
    again = launch_state(read_launches(str(project))[0], time.time())
    assert again.state == "died" and again.error.startswith("exited with status 4")
    # nothing matches it, and nothing is written while looking
    before = Path(launches_path(str(project))).read_bytes()
    assert match_launches(read_launches(str(project)), runs_on_disk(str(project)), "x") == {}
    assert Path(launches_path(str(project))).read_bytes() == before
    # a "died" line, when one was written, is final: its state no longer needs the log
    append_line(
        launches_path(str(project)),
        {"kind": "died", "id": record.id, "error": again.error, "tail": list(again.tail)},
    )
    (saved,) = read_launches(str(project))
    assert saved.died_error == again.error and saved.died_tail == again.tail
    Path(saved.console_log).unlink()
    assert launch_state(saved, time.time()).tail == again.tail


def _record_of(proc, project: Path, console_log: Path) -> LaunchRecord:
    """The launch record of a running child, as launch() would write it."""
    return LaunchRecord(
        id="x",
        time=time.time(),
        pid=proc.pid,
        create_time=psutil.Process(proc.pid).create_time(),
        argv=(),
        command="",
        cwd="/",
        project=str(project),
        name="exp",
        console_log=str(console_log),
    )


def test_a_live_launch_without_status_json_is_starting(tmp_path: Path, children) -> None:
    proc = _start_child(children, SLEEPER)
    log = tmp_path / "c.log"
    log.write_text("downloading weights\x1b[0m\r 50%\r100%\n")
    record = _record_of(proc, tmp_path, log)
    state = launch_state(record, record.time + 3)
    assert state.state == "starting" and state.error is None
    assert state.tail == ("100%",) and state.console_log == str(log)
    assert state.elapsed == 3.0  # since the launch, on the clock given
    # same pid, another start time: not this launch any more
    other = LaunchRecord(**{**record.__dict__, "create_time": record.create_time - 3600})
    assert launch_state(other, time.time()).state == "died"


def test_console_tail_and_error_line(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text(
        "Usage: libreyolo train [OPTIONS]\n"
        "╭─ Error ──────────────╮\n"
        "│ No such option: --bogus-key     │\n"
        "╰──────────────────────╯\n" + "x" * 1000 + "\n\n"
    )
    tail = console_tail(str(log))
    assert len(tail[-1]) == 300  # long lines are cut
    assert error_from_tail(tail[:-1]) == "No such option: --bogus-key"
    assert error_from_tail(
        ["Traceback (most recent call last):", "  File x", "ValueError: bad"]
    ) == ("ValueError: bad")
    assert error_from_tail([]) is None
    assert console_tail(str(tmp_path / "missing")) == ()


# -- stopping ------------------------------------------------------------------------------


def test_stop_refuses_a_pid_whose_start_time_does_not_match(tmp_path: Path, children) -> None:
    proc = _start_child(children, SLEEPER, tmp_path / "run")
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=time.time() - 3600)
    result = stop_run(str(run), Settings(), sleep=lambda s: pytest.fail("must not wait"))
    assert not result.ok and result.signals_sent == ()
    assert "now belongs to a newer process" in result.error
    assert "nothing was signalled" in result.error
    assert result.final_state == "dead"
    assert proc.poll() is None  # still running: never signalled


def test_stop_a_gone_pid_and_a_missing_status(tmp_path: Path, dead_pid: int) -> None:
    run = _status_for(tmp_path / "run", pid=dead_pid, started_at=time.time())
    result = stop_run(str(run), Settings(), sleep=lambda s: pytest.fail("must not wait"))
    assert not result.ok and result.final_state == "dead"  # nothing left to stop: said so
    assert result.signals_sent == () and "run is not running (it reads dead)" in result.error
    result = stop_run(str(tmp_path / "nothing"), Settings())
    assert not result.ok and "no readable status.json" in result.error


def test_stop_a_run_that_is_not_running_sends_nothing(tmp_path: Path) -> None:
    """Not running: not stopped, and said so (the CLI exits 1: test_cli_stop)."""
    run = _status_for(tmp_path / "run", pid=os.getpid(), started_at=0, state="completed")
    result = stop_run(str(run), Settings())
    assert not result.ok and result.final_state == "completed" and result.signals_sent == ()
    assert result.error == "run is not running (it reads completed): nothing sent"


def test_stop_escalates_to_sigterm_when_sigint_is_trapped(tmp_path: Path, children) -> None:
    proc = _start_child(children, TRAPS_INT, tmp_path / "run")
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=time.time())
    clock = FakeClock()
    seen: list[tuple[str, float | None]] = []
    settings = Settings()  # the defaults: SIGTERM 30 s after SIGINT
    result = stop_run(str(run), settings, lambda p, s: seen.append((p, s)), clock.sleep, clock.now)
    assert result.ok, result.error
    assert result.signals_sent == ("SIGINT", "SIGTERM")
    assert result.target == f"process group {proc.pid}"
    assert 30 <= result.seconds < 31  # on the fake clock
    # status.json still says running and the pid is gone: the user's stop, not DEAD
    assert result.final_state == "stopped"
    assert proc.wait(5) == -signal.SIGTERM
    phases = [p for p, _ in seen]
    assert phases[0] == "sigint" and seen[0][1] == pytest.approx(30)
    assert phases[-1] == "ended" and "sigterm" in phases and "sigkill" not in phases
    # a countdown: one report per whole second
    sigint_lefts = [round(s) for p, s in seen if p == "sigint"]
    assert sigint_lefts == sorted(sigint_lefts, reverse=True) and len(sigint_lefts) >= 29


@pytest.mark.parametrize(
    ("settings", "kill_at"),
    [(Settings(stop_term_after=5, stop_kill_after=12), 12), (Settings(), 60)],
    ids=["set", "defaults"],
)
def test_stop_escalates_to_sigkill(tmp_path: Path, children, settings, kill_at) -> None:
    proc = _start_child(children, TRAPS_INT_TERM, tmp_path / "run")
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=time.time())
    clock = FakeClock()
    phases: list[str] = []
    result = stop_run(str(run), settings, lambda p, s: phases.append(p), clock.sleep, clock.now)
    assert result.ok, result.error
    assert result.signals_sent == ("SIGINT", "SIGTERM", "SIGKILL")
    assert kill_at <= result.seconds < kill_at + 1  # on the fake clock
    assert proc.wait(5) == -signal.SIGKILL
    assert phases.index("sigterm") < phases.index("sigkill") < phases.index("ended")


def test_a_run_still_starting_is_not_signalled(tmp_path: Path, children) -> None:
    """A launch whose trainer has not written status.json yet: stop sends nothing, says why
    in one line, and the process keeps running (the app refuses the same run as "still
    starting")."""
    run = tmp_path / "exp"
    run.mkdir()
    proc = _start_child(children, SLEEPER, run_dir=run)
    result = stop_run(str(run), Settings(), sleep=time.sleep)
    assert not result.ok and result.signals_sent == ()
    assert result.error == f"{run}: no readable status.json; nothing sent"
    time.sleep(0.2)
    assert proc.poll() is None  # no signal reached it


# -- libreyolo doctor -------------------------------------------------------------------------


def _doctor_json(findings, exit_code: int) -> bytes:
    counts = {s: sum(f["severity"] == s for f in findings) for s in ("error", "warning", "info")}
    return json.dumps(
        {
            "summary": {"errors": counts["error"], "warnings": counts["warning"]},
            "stats": {"splits": {"train": {"images": 16, "instances": 31}}},
            "findings": findings,
            "data": "/d/data.yaml",
            "exit_code": exit_code,
            "schema_version": 1,
        }
    ).encode()


def test_doctor_errors_block() -> None:
    findings = [
        {
            "check_id": "config.path_not_found",
            "severity": "error",
            "message": "'train' path(s) do not exist.",
            "split": "train",
            "paths": ["/d/images/train"],
        },
        {
            "check_id": "images.uniform",
            "severity": "warning",
            "message": "1 image(s) are a single flat color.",
            "split": "val",
            "paths": [f"/d/{i}.png" for i in range(5)],
        },
    ]
    report = parse_doctor(1, _doctor_json(findings, 1), b"progress bar noise")
    assert not report.ok
    assert report.errors == (
        "config.path_not_found [train]: 'train' path(s) do not exist. /d/images/train",
    )
    assert report.warnings == (
        "images.uniform [val]: 1 image(s) are a single flat color. "
        "/d/0.png, /d/1.png, /d/2.png (+2 more)",
    )
    assert "ERRORS (1)" in report.output and "1 error(s), 1 warning(s)" in report.output


def test_doctor_warnings_do_not_block() -> None:
    findings = [
        {"check_id": "balance.x", "severity": "warning", "message": "few", "split": "train"},
        {"check_id": "balance.y", "severity": "info", "message": "fyi"},
    ]
    report = parse_doctor(0, _doctor_json(findings, 0))
    assert report.ok and report.errors == () and report.warnings == ("balance.x [train]: few",)
    assert report.infos == ("balance.y: fyi",)


def test_doctor_cannot_read_the_dataset() -> None:
    out = json.dumps(
        {"schema_version": 1, "error": "data_not_found", "message": "Dataset 'x' not found.\n  - /"}
    )
    report = parse_doctor(3, out.encode())
    assert not report.ok and report.errors == ("data_not_found: Dataset 'x' not found. - /",)


def test_doctor_output_that_is_not_json() -> None:
    report = parse_doctor(2, b"", b"Usage: libreyolo doctor\nError: No such option: --bad\n")
    assert not report.ok
    assert report.errors == (
        "libreyolo doctor failed (exit 2): Usage: libreyolo doctor Error: No such option: --bad",
    )


# -- GPU preflight -----------------------------------------------------------------------------


def _lines(*events: dict) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


TORCH_OK = {
    "event": "torch",
    "version": "2.5.1+cu124",
    "cuda": "12.4",
    "available": True,
    "count": 2,
    "arch_list": ["sm_50", "sm_80", "sm_90"],
}


def test_preflight_without_torch() -> None:
    out = _lines({"event": "no_torch", "error": "ModuleNotFoundError: No module named 'torch'"})
    report = parse_probe(0, out, "", python="/venv/bin/python")
    assert not report.ok and report.torch_version is None and not report.cuda_available
    assert report.verdict == (
        "torch is not installed for /venv/bin/python: install it with "
        "`/venv/bin/python -m pip install 'rgpu-tui[train]'`"
    )


def test_preflight_cuda_not_available() -> None:
    out = _lines(
        {
            "event": "torch",
            "version": "2.14.1+cu130",
            "cuda": "13.0",
            "available": False,
            "count": 0,
            "error": "RuntimeError: Found no NVIDIA driver on your system. Please check that you "
            "have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/",
        },
        {"event": "done"},
    )
    report = parse_probe(0, out)
    assert not report.ok and report.torch_version == "2.14.1+cu130" and not report.cuda_available
    assert report.verdict == (
        "CUDA is not available: Found no NVIDIA driver on your system "
        "(torch 2.14.1+cu130, built for CUDA 13.0)"
    )
    cpu = parse_probe(0, _lines({**TORCH_OK, "cuda": None, "available": False, "count": 0}))
    assert cpu.verdict.startswith("CUDA is not available: torch 2.5.1+cu124 is a CPU-only build")


def test_preflight_no_kernel_image() -> None:
    err = "AcceleratorError: CUDA error: no kernel image is available for execution on the device"
    out = _lines(
        {**TORCH_OK, "count": 1},
        {
            "event": "device",
            "index": 0,
            "ok": False,
            "name": "NVIDIA B200",
            "capability": "sm_100",
            "error": err,
        },
        {"event": "done"},
    )
    report = parse_probe(0, out)
    assert not report.ok and report.cuda_available
    assert report.devices[0].error == err and report.devices[0].name == "NVIDIA B200"
    assert report.verdict == (
        "torch 2.5.1+cu124 cannot run on GPU 0 (NVIDIA B200, sm_100): no kernel image is "
        "available for execution on the device; this wheel was built for sm_50 sm_80 sm_90: "
        "install a torch build that supports this GPU"
    )
    assert "\n" not in report.verdict


def test_preflight_success_with_two_gpus() -> None:
    out = _lines(
        TORCH_OK,
        {"event": "device", "index": 0, "ok": True, "name": "NVIDIA H100", "ms": 0.81},
        {"event": "device", "index": 1, "ok": True, "name": "NVIDIA H100", "ms": 0.79},
        {"event": "done"},
    )
    report = parse_probe(0, "torch noise on stdout\n" + out, "a UserWarning on stderr")
    assert report.ok and report.cuda_available and report.cuda_version == "12.4"
    assert [(d.index, d.ok, d.ms) for d in report.devices] == [(0, True, 0.81), (1, True, 0.79)]
    assert report.verdict == (
        "OK: torch 2.5.1+cu124 (CUDA 12.4) ran a 2000x2000 matmul on 2 GPU(s) "
        "(NVIDIA H100; 0.8 ms, 0.8 ms)"
    )
    text = preflight_to_text(report)
    assert "GPU 1: NVIDIA H100: matmul 0.8 ms" in text
    assert json.loads(json.dumps(report.to_json()))["devices"][1]["name"] == "NVIDIA H100"


def test_preflight_crash_and_hang() -> None:
    crashed = parse_probe(
        -11, _lines(TORCH_OK, {"event": "device", "index": 0, "ok": True, "name": "A", "ms": 1})
    )
    assert not crashed.ok
    assert crashed.verdict == "the GPU check crashed (exit -11) at GPU 1: no error output"
    hung = parse_probe(None, b"", b"", timeout=120)
    assert hung.verdict == "the GPU check did not finish in 120 s (importing torch hung)"
    boom = parse_probe(1, b"", b"Traceback...\nImportError: libcudart.so.12: cannot open\n")
    assert boom.verdict.endswith("before torch loaded: ImportError: libcudart.so.12: cannot open")


def test_cli_preflight_here(capsys) -> None:
    """The real probe in this environment (`rgpu-tui preflight --json`): it must say what
    it found in one line, not crash; exit 1 unless every GPU ran the matmul."""
    from rgpu_tui.cli import main

    rc = main(["preflight", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] and "\n" not in report["verdict"]
    assert rc == (0 if report["ok"] else 1)
    if report["torch_version"] is None:
        assert "torch is not installed" in report["verdict"]
    elif not report["cuda_available"]:
        assert report["verdict"].startswith("CUDA is not available")
        assert not report["ok"] and report["devices"] == []


# -- the commands ----------------------------------------------------------------------------


def test_cli_launch_with_a_fake_libreyolo(
    fake_libreyolo: str, data_yaml: Path, project: Path, monkeypatch, capsys
) -> None:
    import rgpu_tui.core.launch.launch_spec as launch_spec_mod
    from rgpu_tui.cli import main

    monkeypatch.setattr(launch_spec_mod, "libreyolo_executable", lambda: fake_libreyolo)
    monkeypatch.setenv("FAKE_SLEEP", "0.2")
    monkeypatch.setenv("HF_TOKEN", "hf_secretsecret123")
    argv = ["launch", "--project", str(project), "--name", "a b", "--no-doctor", "--json", "--"]
    rc = main([*argv, f"data={data_yaml}", "epochs=3", "device=cpu", "note=x;y"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["state"] == "started" and out["run_dir"] == str(project / "a b")
    assert out["hf_token_set"] is True
    assert "hf_secret" not in json.dumps(out)
    assert "hf_secret" not in Path(launches_path(str(project))).read_text()
    assert out["launch"]["argv"][2:] == [
        "model=LibreYOLO9s.pt",  # nothing configured: the default model
        f"data={data_yaml}",
        "epochs=3",
        "batch=-1",
        "imgsz=640",
        "device=cpu",
        f"project={project}",
        "name=a b",
        "note=x;y",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--", "epochs=3"], "give the dataset: data=/path/to/data.yaml"),
        (["--", "data=/nonexistent.yaml"], "does not exist"),
        (["--name", "a", "--", "data=/x", "name=b"], "name is given both"),
        (["--", "data=/x", "data=/y"], "data is given twice"),
    ],
)
def test_cli_launch_refuses(args, message, capsys) -> None:
    from rgpu_tui.cli import main

    assert main(["launch", "--no-doctor", *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_stop(tmp_path: Path, children, capsys) -> None:
    from rgpu_tui.cli import main

    proc = _start_child(children, SLEEPER, tmp_path / "run")
    run = _status_for(tmp_path / "run", pid=proc.pid, started_at=time.time())
    assert main(["stop", str(run)]) == 0
    out = capsys.readouterr()
    assert "SIGINT sent; SIGTERM in 30 s" in out.err
    assert out.out.startswith("stopped: stopped after ") and f"group {proc.pid}" in out.out
    # a second stop: the run is not running any more; said so, exit 1, nothing sent
    assert main(["stop", str(run), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["signals_sent"] == [] and doc["final_state"] == "stopped"
    assert main(["stop", str(run)]) == 1
    assert "run is not running (it reads stopped): nothing sent" in capsys.readouterr().err
    assert main(["stop", str(tmp_path / "nowhere")]) == 2


def test_cli_demo_without_libreyolo(tmp_path: Path, monkeypatch, capsys) -> None:
    import rgpu_tui.core.launch.demo as demo_mod
    from rgpu_tui.cli import main

    monkeypatch.setattr(demo_mod, "libreyolo_executable", lambda: None)
    assert main(["demo", "--no-app", "--dir", str(tmp_path)]) == 1
    assert "pip install 'rgpu-tui[train]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing made, nothing launched


def test_demo_dataset_is_dark_and_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image

    from rgpu_tui.core.launch.demo import demo_dataset

    data = Path(demo_dataset(str(tmp_path / "a")))
    again = Path(demo_dataset(str(tmp_path / "b")))
    assert "nc: 3" in data.read_text()
    train = sorted((data.parent / "images" / "train").iterdir())
    val = sorted((data.parent / "images" / "val").iterdir())
    assert (len(train), len(val)) == (16, 8)
    assert Image.open(train[0]).size == (128, 128)
    corners = [Image.open(p).getpixel((127, 127)) for p in train]
    assert sum(max(c) <= 50 for c in corners) >= len(corners) // 2  # dark backgrounds
    assert train[0].read_bytes() == (again.parent / "images" / "train" / train[0].name).read_bytes()


def test_dataset_pngs_show_what_their_labels_say(tmp_path: Path) -> None:
    """The PNGs are written without PIL (rgpu-tui installed apart from training has none):
    PIL reads them, and the last box of each label file is painted in its class colour,
    edge to edge, on the flat background."""
    pytest.importorskip("PIL")
    from PIL import Image

    from rgpu_tui.core.launch.synthetic_dataset import make_dataset

    colours = [(220, 40, 40), (40, 200, 60), (50, 70, 230)]
    size = 97
    data = make_dataset(tmp_path, n_train=6, n_val=2, imgsz=size, seed=3)

    def pixels(label: str) -> tuple[int, int, int, int, int]:
        """A label line as (class, left, top, right, bottom) in pixels, edges included."""
        cls, xc, yc, w, h = (float(v) for v in label.split())
        left, top = round((xc - w / 2) * size), round((yc - h / 2) * size)
        return int(cls), left, top, left + round(w * size) - 1, top + round(h * size) - 1

    for png in sorted((data.parent / "images").rglob("*.png")):
        img = Image.open(png)
        assert (img.format, img.mode, img.size) == ("PNG", "RGB", (size, size))
        label = data.parent / "labels" / png.parent.name / (png.stem + ".txt")
        boxes = [pixels(line) for line in label.read_text().splitlines()]
        cls, left, top, right, bottom = boxes[-1]  # painted last: nothing covers it
        for corner in ((left, top), (right, bottom), (left, bottom), (right, top)):
            assert img.getpixel(corner) == colours[cls], (png.name, corner)
        outside = {
            img.getpixel((x, y))
            for x in range(size)
            for y in range(size)
            if not any(x0 <= x <= x1 and y0 <= y <= y1 for _c, x0, y0, x1, y1 in boxes)
        }
        assert len(outside) == 1 and not outside & set(colours)  # one flat background


def test_free_name_is_libreyolos_next_directory(tmp_path, monkeypatch):
    """libreyolo 1.6.0 trains into NAME, else the first free NAME2, NAME3, ... (its
    trainer's _get_save_dir); exist_ok=True keeps NAME; a flood of them is not walked."""
    from rgpu_tui.core.launch import launch_spec

    assert launch_spec.free_name(str(tmp_path), "exp") == "exp"
    (tmp_path / "exp").mkdir()
    assert launch_spec.free_name(str(tmp_path), "exp") == "exp2"
    (tmp_path / "exp2").mkdir()
    (tmp_path / "exp4").mkdir()
    assert launch_spec.free_name(str(tmp_path), "exp") == "exp3"
    assert launch_spec.free_name(str(tmp_path), "exp", ["exist_ok=True"]) == "exp"
    assert launch_spec.free_name(str(tmp_path), "exp", ["exist_ok=False"]) == "exp3"
    monkeypatch.setattr(launch_spec, "NAME_TRIES", 1)
    assert launch_spec.free_name(str(tmp_path), "exp") is None  # exp2 taken, 1 try
