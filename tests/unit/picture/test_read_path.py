"""A refresh only reads: `rgpu-tui snapshot` and the app's refresh over a
project with launch records change no file, not even launches.jsonl.

The project holds a launch whose run directory was recorded, a multi-GPU-like launch whose
status.json is written by a child of the launched pid (no run directory recorded: the
refresh must find it, and used to record it), one still starting and one that died.
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
from support.cli_env import RGPU_TUI, clean_env
from support.run_dir import iso

from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.records.records import append_json_line

# writes status.json (its own pid: rank 0) into argv[1], says so, then trains forever
RANK0 = """\
import json, os, sys, time
from datetime import datetime, timezone
run = sys.argv[1]
os.makedirs(run)
now = datetime.now(timezone.utc).isoformat(timespec="seconds")
st = {"state": "running", "pid": os.getpid(), "started_at": now, "updated_at": now,
      "total_epochs": 10, "completed_epochs": 0}
with open(os.path.join(run, ".st.tmp"), "w") as f:
    json.dump(st, f)
os.replace(os.path.join(run, ".st.tmp"), os.path.join(run, "status.json"))
print("ready", flush=True)
time.sleep(300)
"""
# the launched process: starts rank 0 and waits
LAUNCHED = """\
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
time.sleep(300)
"""


def tree(root: Path) -> dict[str, tuple]:
    """Every path under root: its kind, size and mtime (directories included)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def launch_line(project: Path, launch_id: str, name: str, pid: int, at: float) -> dict:
    try:
        created = psutil.Process(pid).create_time()
    except psutil.Error:
        created = at
    console = project / ".rgpu" / "console" / f"{launch_id}.log"
    return {
        "kind": "launch",
        "id": launch_id,
        "time": at,
        "pid": pid,
        "create_time": created,
        "argv": ["libreyolo", "train", f"name={name}"],
        "command": f"libreyolo train name={name}",
        "cwd": str(project),
        "project": str(project),
        "name": name,
        "console_log": str(console),
    }


@pytest.fixture
def project(tmp_path: Path, dead_pid: int) -> Iterator[Path]:
    project = tmp_path / "runs"
    records = project / ".rgpu" / "launches.jsonl"
    console = project / ".rgpu" / "console"
    console.mkdir(parents=True)
    started: list[subprocess.Popen] = []
    t0 = time.time() - 5
    try:
        # 1. finished, its run directory recorded by `rgpu-tui launch`
        done = project / "done"
        (done / "weights").mkdir(parents=True)
        (done / "status.json").write_text(
            json.dumps({"state": "completed", "pid": dead_pid, "started_at": iso(t0 - 3600)})
        )
        (done / "metrics.jsonl").write_text('{"epoch": 1, "is_best": true, "best_metric": 0.1}\n')
        (done / "train.log").write_text("epoch 1\n")
        (done / "weights" / "best.pt").write_bytes(b"PK weights")
        append_json_line(str(records), launch_line(project, "l-done", "done", dead_pid, t0 - 3600))
        append_json_line(str(records), {"kind": "run_dir", "id": "l-done", "run_dir": str(done)})
        # 2. rank 0, a child of the launched pid, writes status.json; no run_dir recorded
        launched = subprocess.Popen(
            [sys.executable, "-c", LAUNCHED, RANK0, str(project / "ddp")],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(launched)
        append_json_line(str(records), launch_line(project, "l-ddp", "ddp", launched.pid, t0))
        assert launched.stdout.readline() == "ready\n"  # status.json is there
        # 3. still starting: alive, no status.json yet
        waiting = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
        )
        started.append(waiting)
        (console / "l-wait.log").write_text("downloading weights\n")
        append_json_line(str(records), launch_line(project, "l-wait", "wait", waiting.pid, t0))
        # 4. died before writing status.json
        died = subprocess.Popen([sys.executable, "-c", "pass"])
        died.wait()
        (console / "l-bad.log").write_text("Error: data.yaml not found\n")
        append_json_line(str(records), launch_line(project, "l-bad", "bad", died.pid, t0))
        yield project
    finally:
        for proc in started:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(10)


def test_snapshot_changes_no_file(project: Path, tmp_path: Path) -> None:
    before = tree(project)
    proc = subprocess.run(
        [str(RGPU_TUI), "snapshot", str(project), "--json", "--fake-gpus", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    runs = {r["name"]: r for r in json.loads(proc.stdout)["runs"]}
    # the rank-0 run is found as the launch's run (not shown as a launch still waiting)
    assert set(runs) == {"done", "ddp", "wait (launch)", "bad (launch)"}
    assert runs["ddp"]["state"] == "running"
    assert runs["wait (launch)"]["state"] == "starting"
    assert runs["bad (launch)"]["state"] == "failed"
    assert "data.yaml not found" in runs["bad (launch)"]["error"]
    assert tree(project) == before


def test_the_apps_refresh_changes_no_file(project: Path) -> None:
    before = tree(project)
    collector = Collector(str(project), fake_gpus=1)
    try:
        snap = collector.refresh(time.time())
        for run in snap.runs:  # each run selected once: metrics, log, checkpoints, pushes
            collector.refresh(time.time(), selected=run.run_dir)
        assert {r.name for r in snap.runs} == {"done", "ddp", "wait (launch)", "bad (launch)"}
    finally:
        collector.close()
    assert tree(project) == before


def test_an_ended_multi_gpu_launch_is_its_run_not_a_failed_launch(tmp_path: Path) -> None:
    """Nothing recorded where it went, the launched process and rank 0 have both exited:
    the refresh still takes the run started after the launch as its own (it used to
    depend on a refresh having recorded the run directory while the process lived)."""
    project = tmp_path / "runs"
    pids = []
    for _ in range(2):
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        pids.append(proc.pid)
    launched, rank0 = pids
    at = time.time() - 600
    (project / "exp").mkdir(parents=True)
    (project / "exp" / "status.json").write_text(
        json.dumps({"state": "completed", "pid": rank0, "started_at": iso(at + 40)})
    )
    records = project / ".rgpu" / "launches.jsonl"
    append_json_line(str(records), launch_line(project, "l1", "exp", launched, at))
    collector = Collector(str(project), fake_gpus=0)
    try:
        names = [r.name for r in collector.refresh(time.time()).runs]
    finally:
        collector.close()
    assert names == ["exp"]
