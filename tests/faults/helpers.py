"""What the fault-injection tests share: running status documents for this process, ageing
a tree, the one run of a snapshot. The run files themselves are built by
tests/support/run_dir.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
from support.run_dir import iso

from rgpu_tui.core.base.config import Settings

HUB_SETTINGS = Settings(hub_repo="alice/ckpts")
LOG_MISSING = "no train.log yet (libreyolo starts it at epoch 1)"
HALF_WRITTEN = "status.json is half-written or not JSON"


def status_doc(state: str = "running", epoch: int = 3, total: int = 10, **extra) -> dict:
    doc = {
        "schema_version": 1,
        "state": state,
        "pid": os.getpid(),
        "started_at": iso(psutil.Process().create_time()),
        "total_epochs": total,
        "start_epoch": 1,
        "current_epoch": epoch,
        "completed_epochs": epoch,
        "mean_epoch_seconds": 60.0,
        "updated_at": iso(time.time()),
    }
    doc.update(extra)
    return doc


def alive(proc) -> dict:
    """status.json's pid and started_at for a live trainer."""
    return {"pid": proc.pid, "started_at": iso(psutil.Process(proc.pid).create_time())}


def age(path: Path, seconds: float = 3600.0) -> None:
    """Set every mtime under `path` (and its own) `seconds` into the past."""
    then = time.time() - seconds
    for p in [*path.rglob("*"), path]:
        os.utime(p, (then, then))


def only_run(snap):
    [run] = snap.runs
    return run
