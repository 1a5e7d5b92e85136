"""A run launched from the app, SIGKILLed after epoch 22, resumed from epoch_20.pt and
killed again after epoch 23, as its files and records lie on disk (with
dead processes): the tests of one run's attempts and of one list of runs everywhere."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.run_dir import iso

EPOCH_S = 2.4


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _line(path: Path, obj: dict) -> None:
    with open(path, "a") as out:
        out.write(json.dumps(obj) + "\n")


def _launch(project: Path, rid: str, at: float, pid: int, argv: list[str], end: float) -> dict:
    console = project / ".rgpu" / "console" / f"exp-{rid}.log"
    console.write_text("training\n")
    os.utime(console, (end, end))
    return {
        "kind": "launch",
        "id": rid,
        "time": at,
        "pid": pid,
        "create_time": at,
        "argv": argv,
        "command": " ".join(argv),
        "cwd": str(project),
        "project": str(project),
        "name": "exp",
        "console_log": str(console),
    }


def killed_and_resumed(project: Path, t0: float, *, exits: bool = True) -> Path:
    """project/exp: epochs 1-22 by the launch (t0 .. t0+53, killed), 21-23 by the resume
    (launched t0+58, status.json started t0+60, last status t0+70, killed t0+75).
    `exits`: the launcher recorded both exits (the app was open); else only the console
    logs tell when they ended."""
    run = project / "exp"
    (run / "weights").mkdir(parents=True)
    (project / ".rgpu" / "console").mkdir(parents=True)
    rows = [{"epoch": e, "time": EPOCH_S, "train/loss": 10.0 / e} for e in range(1, 23)]
    rows += [{"epoch": e, "time": EPOCH_S, "train/loss": 9.0 / e} for e in (21, 22, 23)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    launched, resumed = dead_pid(), dead_pid()
    status = {
        "state": "running",
        "pid": resumed,
        "total_epochs": 30,
        "start_epoch": 21,
        "completed_epochs": 23,
        "current_epoch": 23,
        "started_at": iso(t0 + 60),
        "updated_at": iso(t0 + 70),
        "elapsed_seconds": 10.0,
        "mean_epoch_seconds": EPOCH_S,
    }
    (run / "status.json").write_text(json.dumps(status))
    records = project / ".rgpu" / "launches.jsonl"
    argv = ["libreyolo", "train", "model=yolo9-t", f"project={project}", "name=exp"]
    _line(records, _launch(project, "l1", t0, launched, argv, t0 + 53))
    resume = ["libreyolo", "train", f"model={run}/weights/epoch_20.pt", "resume=True"]
    _line(records, _launch(project, "r1", t0 + 58, resumed, resume, t0 + 75))
    if exits:
        _line(records, {"kind": "exit", "id": "l1", "returncode": -9, "time": t0 + 53})
        _line(records, {"kind": "exit", "id": "r1", "returncode": -9, "time": t0 + 75})
    for path in run.rglob("*"):
        os.utime(path, (t0 + 75, t0 + 75))
    return run


def killed_and_resumed_twice(project: Path, t0: float) -> Path:
    """killed_and_resumed (with exits), then resumed again from epoch_23.pt: launched t0+80,
    status.json started t0+82, completed at t0+118 (libreyolo's elapsed 36 s), epochs 24-30;
    its exit recorded at t0+119. Its time: 53 + 17 + 38 = 108 s over three attempts."""
    run = killed_and_resumed(project, t0)
    rows = [{"epoch": e, "time": EPOCH_S, "train/loss": 8.0 / e} for e in range(24, 31)]
    with open(run / "metrics.jsonl", "a") as out:
        out.write("".join(json.dumps(r) + "\n" for r in rows))
    pid = dead_pid()
    status = {
        "state": "completed",
        "pid": pid,
        "total_epochs": 30,
        "start_epoch": 24,
        "completed_epochs": 30,
        "current_epoch": 30,
        "started_at": iso(t0 + 82),
        "updated_at": iso(t0 + 118),
        "elapsed_seconds": 36.0,
        "mean_epoch_seconds": EPOCH_S,
    }
    (run / "status.json").write_text(json.dumps(status))
    records = project / ".rgpu" / "launches.jsonl"
    resume = ["libreyolo", "train", f"model={run}/weights/epoch_23.pt", "resume=True"]
    _line(records, _launch(project, "r2", t0 + 80, pid, resume, t0 + 119))
    _line(records, {"kind": "exit", "id": "r2", "returncode": 0, "time": t0 + 119})
    for path in run.rglob("*"):
        os.utime(path, (t0 + 119, t0 + 119))
    return run
