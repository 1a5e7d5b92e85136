"""The demo's runs on disk: the demo says what its runs use (measured),
and `rgpu-tui demo --clear` removes them, only them, never while one trains.

The runs are laid out as `rgpu-tui demo` leaves them: launch records under
<work>/runs/.rgpu (the demo's name, its dataset), a console log each, run folders with
weights. The demo's processes are real (ended ones, and a live one for "still training");
`--clear` runs as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support.cli_env import clean_env

from rgpu_tui.core.launch import demo as steps
from rgpu_tui.core.launch.demo_runs import disk_bytes
from rgpu_tui.core.records.launch_records import read_launches

MB = 1_000_000


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def demo_run(work: Path, name: str, weights_mb: int, pid: int | None = None, **record) -> Path:
    """A demo run as `rgpu-tui demo` leaves it: its launch record, console log and weights
    (real bytes: they use blocks on disk)."""
    runs = work / "runs"
    console = runs / ".rgpu" / "console" / f"{name}.log"
    console.parent.mkdir(parents=True, exist_ok=True)
    console.write_text("training\n")
    run = runs / name
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "best.pt").write_bytes(os.urandom(weights_mb * MB))
    (run / "status.json").write_text(json.dumps({"state": "completed", "total_epochs": 40}))
    pid = pid or dead_pid()
    data = work / "dataset" / "data.yaml"
    argv = ["libreyolo", "train", f"data={data}", f"project={runs}", "name=demo", "epochs=40"]
    rec = {
        "kind": "launch", "id": name, "time": time.time() - 60, "pid": pid,
        "create_time": psutil.Process(pid).create_time() if psutil.pid_exists(pid) else 0.0,
        "argv": argv, "command": " ".join(argv), "cwd": str(work), "project": str(runs),
        "name": "demo", "console_log": str(console), "run_dir": str(run), **record,
    }  # fmt: skip
    with open(runs / ".rgpu" / "launches.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    return run


def clear(tmp_path: Path, work: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "demo", "--dir", str(work), "--clear"],
        capture_output=True, text=True, timeout=60, env=clean_env(tmp_path),
    )  # fmt: skip


def test_the_demo_runs_are_measured_and_said(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    first = demo_run(work, "demo", 3)
    demo_run(work, "demo2", 2)
    runs = steps.runs_of(str(work))
    assert runs.run_dirs == (str(first), str(work / "runs" / "demo2"))
    assert 5 * MB <= runs.bytes < 6 * MB  # the weights, status.json, console logs: as du
    assert runs.bytes == sum(disk_bytes(d) for d in runs.run_dirs) + sum(
        disk_bytes(str(p)) for p in (work / "runs" / ".rgpu" / "console").iterdir()
    )
    line = steps.runs_line(runs, "earlier demo runs")
    assert line == (
        f"2 earlier demo runs in {work / 'runs'}: 5.0 MB on disk "
        "(`rgpu-tui demo --clear` removes the demo runs once none is training)"
    )
    [record] = read_launches(str(work / "runs"))[-1:]
    demo = steps.Demo(str(work), str(work / "dataset" / "data.yaml"), str(work / "runs"), record)
    assert steps.after_app_lines(demo) == [line.replace("earlier ", "")]  # the app closed


def test_clear_removes_the_demo_runs_and_only_them(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    (work / "dataset").mkdir(parents=True)
    (work / "dataset" / "data.yaml").write_text("kept\n")
    demo_run(work, "demo", 3)
    demo_run(work, "demo2", 2)
    got = clear(tmp_path, work)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith(f"removed 2 demo runs from {work / 'runs'}: 5.")
    assert got.stdout.endswith(" MB\n") and got.stdout.count("\n") == 1
    assert sorted(p.name for p in work.iterdir()) == ["dataset"]  # the dataset stays
    got = clear(tmp_path, work)
    assert got.returncode == 0 and got.stdout == (
        f"no demo runs in {work / 'runs'}: nothing to remove\n"
    )


def test_clear_never_removes_what_no_demo_launch_made(tmp_path: Path) -> None:
    """`--dir ~` by mistake: a runs folder of the user's own (a run named demo included,
    a symlinked one, a record of another launch) is not the demo's."""
    work = tmp_path / "home"
    mine = work / "runs" / "demo"
    (mine / "weights").mkdir(parents=True)
    (mine / "weights" / "best.pt").write_bytes(b"the user's own")
    elsewhere = demo_run(tmp_path / "other", "demo", 1)
    (work / "runs" / "demo3").symlink_to(elsewhere)
    got = clear(tmp_path, work)
    assert got.returncode == 0 and "no demo runs" in got.stdout
    assert (mine / "weights" / "best.pt").read_bytes() == b"the user's own"
    assert (elsewhere / "weights" / "best.pt").exists()
    # a demo record naming a symlink (to a run elsewhere): not a demo run of this folder
    record = json.loads((tmp_path / "other" / "runs" / ".rgpu" / "launches.jsonl").read_text())
    data = work / "dataset" / "data.yaml"
    record.update(project=str(work / "runs"), run_dir=str(work / "runs" / "demo3"))
    record.update(argv=["libreyolo", "train", f"data={data}", "name=demo"])
    (work / "runs" / ".rgpu").mkdir()
    (work / "runs" / ".rgpu" / "launches.jsonl").write_text(json.dumps(record) + "\n")
    got = clear(tmp_path, work)
    assert got.returncode == 0 and "no demo runs" in got.stdout
    assert (elsewhere / "weights" / "best.pt").exists()
    # a demo run beside a launch of the user's own (named demo, on their data): the demo run
    # goes; their run and the records stay
    demo_run(work, "demo2", 1)
    other = json.loads((work / "runs" / ".rgpu" / "launches.jsonl").read_text().splitlines()[-1])
    argv = ["libreyolo", "train", "data=/data/mine.yaml", "name=demo"]  # named demo too
    other.update(id="x", run_dir=str(mine), argv=argv)
    with open(work / "runs" / ".rgpu" / "launches.jsonl", "a") as f:
        f.write(json.dumps(other) + "\n")
    got = clear(tmp_path, work)
    assert got.returncode == 0 and "removed 1 demo run from" in got.stdout, got.stdout
    assert not (work / "runs" / "demo2").exists() and mine.is_dir()
    assert len(read_launches(str(work / "runs"))) == 3  # the records stay with their runs


def test_clear_refuses_while_a_demo_run_trains(tmp_path: Path, procs) -> None:
    work = tmp_path / "demo"
    demo_run(work, "demo", 1)
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    procs.append(trainer)
    training = demo_run(work, "demo2", 1, pid=trainer.pid)
    got = clear(tmp_path, work)
    assert got.returncode == 1 and got.stdout == ""
    assert got.stderr == (
        f"rgpu-tui: a demo run is still training (pid {trainer.pid}): stop it first "
        f"(rgpu-tui stop {training}); nothing removed\n"
    )
    assert (work / "runs" / "demo").is_dir() and training.is_dir()


@pytest.fixture
def procs():
    made: list[subprocess.Popen] = []
    yield made
    for proc in made:
        proc.kill()
        proc.wait()
