"""A fixed runs root for the app tests: a running, a completed and a failed run.

Everything the screen shows is a duration relative to a fixed clock (T0 + 1 h),
so the screen is the same on every machine and every day. The running run's
pid is PID 1 (always alive, and the same number everywhere, so the wide GPU
rows that show pids do not change), and its started_at is PID 1's start time,
so the liveness check (pid alive, not reused) passes for real.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from e2e.test_hub_push import WRITE_TOKEN
from support.hub_server import HubServer
from support.run_dir import iso, write_status

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"


@dataclass
class RunsRoot:
    root: Path
    t0: float  # PID 1's start, whole seconds

    @property
    def now(self) -> float:
        return self.t0 + 3600

    def clock(self) -> float:
        return self.now


def _copy_sample(dst: Path) -> None:
    shutil.copytree(SAMPLE, dst, ignore=shutil.ignore_patterns("weights", "val"))
    for p in [dst, *dst.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)


def _write_status(run: Path, data: dict, mtime: float) -> None:
    """status.json, then every run file's mtime set to `mtime`."""
    write_status(run, data)
    for name in ("status.json", "metrics.jsonl", "train.log", "results.csv"):
        if (run / name).exists():
            os.utime(run / name, (mtime, mtime))


def _metrics_rows(n: int, epoch_s: float = 60.0) -> list[dict]:
    rows = []
    for e in range(1, n + 1):
        rows.append(
            {
                "epoch": e,
                "time": epoch_s,
                "train/loss": 20.0 / e,
                "validated": True,
                "is_best": True,
                "current_metric": 0.05 * e,
                "current_metric_name": "metrics/mAP50-95",
                "best_metric": 0.05 * e,
                "best_metric_name": "metrics/mAP50-95",
                "best_epoch": e,
                "train/box_loss": 8.0 / e,
                "metrics/mAP50-95": 0.05 * e,
                "metrics/mAP50": 0.09 * e,
                "lr/group0": 0.001 * e,
            }
        )
    return rows


def build_runs_root(base: Path) -> RunsRoot:
    t0 = float(int(psutil.Process(1).create_time()))
    root = base / "runs"
    root.mkdir()

    done = root / "sample_done"
    _copy_sample(done)
    st = json.loads((SAMPLE / "status.json").read_text())
    st.update(started_at=iso(t0 + 100), updated_at=iso(t0 + 106))
    _write_status(done, st, t0 + 106)

    failed = root / "failed_oom"
    failed.mkdir()
    rows = _metrics_rows(4)
    (failed / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (failed / "train.log").write_text(
        "2026-12-02 10:00:00 | INFO     | Epoch 4 - Average loss: 5.0000\n"
        "2026-12-02 10:00:05 | ERROR    | CUDA out of memory while allocating 2.00 GiB\n"
    )
    _write_status(
        failed,
        {
            "schema_version": 1,
            "pid": 4242,
            "model_family": "yolo9",
            "model_size": "s",
            "save_dir": "/elsewhere/failed_oom",
            "total_epochs": 10,
            "start_epoch": 1,
            "started_at": iso(t0 + 200),
            "state": "failed",
            "current_epoch": 5,
            "elapsed_seconds": 300.0,
            "error": {"type": "OutOfMemoryError", "message": "CUDA out of memory"},
            "progress": 0.0,
            "updated_at": iso(t0 + 500),
        },
        t0 + 500,
    )

    live = root / "live_exp"
    live.mkdir()
    rows = _metrics_rows(30)
    (live / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (live / "train.log").write_text(
        "".join(
            f"2026-12-02 11:{e:02d}:00 | INFO     | Epoch {e} - Average loss: {20.0 / e:.4f}\n"
            for e in range(1, 31)
        )
    )
    _write_status(
        live,
        {
            "schema_version": 1,
            "pid": 1,
            "model_family": "yolo9",
            "model_size": "t",
            "save_dir": str(live),
            "total_epochs": 100,
            "start_epoch": 1,
            "started_at": iso(t0),
            "state": "running",
            "current_epoch": 30,
            "completed_epochs": 30,
            "mean_epoch_seconds": 60.0,
            "eta_seconds": 4200.0,
            "best_metric": 1.5,
            "best_metric_name": "metrics/mAP50-95",
            "best_epoch": 30,
            "progress": 0.3,
            "updated_at": iso(t0 + 3590),
        },
        t0 + 3590,
    )
    return RunsRoot(root=root, t0=t0)


@pytest.fixture
def runs_root(tmp_path: Path) -> RunsRoot:
    return build_runs_root(tmp_path)


@pytest.fixture(autouse=True)
def pid_1_works_in_its_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """PID 1 stands for the running run's trainer (a pid the same on every machine, so the
    wide GPU rows do not change). A process counts as a run's only when it works in the
    run's directory (core.run.run_process.works_in: its cwd, argv or open files), which
    the machine's init never does for a temporary directory: for PID 1 alone that reading
    is given; every other process is read for real (tests/unit/launch/test_run_process_dir.py
    tests the rule on real processes)."""
    from rgpu_tui.core.run import run_process

    real = run_process.works_in
    monkeypatch.setattr(
        run_process, "works_in", lambda proc, run_dir: proc.pid == 1 or real(proc, run_dir)
    )


GIB = 1024**3


@pytest.fixture(autouse=True)
def steady_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed CPU, RAM, load and disk readings, so the screen is the same on every machine.

    The system code path is the real one; only what psutil, os and shutil answer is fixed.
    GPUs in these tests are always the simulated ones (--fake-gpus), never this machine's.
    """
    from rgpu_tui.core.machine import system

    monkeypatch.setattr(
        system.psutil,
        "cpu_percent",
        lambda interval=None, percpu=False: [40.0, 60.0] if percpu else 50.0,
    )
    monkeypatch.setattr(
        system.psutil,
        "virtual_memory",
        lambda: SimpleNamespace(total=24 * GIB, available=16 * GIB),
    )
    monkeypatch.setattr(system.psutil, "swap_memory", lambda: SimpleNamespace(total=0, used=0))
    monkeypatch.setattr(system.os, "getloadavg", lambda: (1.5, 1.25, 1.0))
    monkeypatch.setattr(
        system.shutil,
        "disk_usage",
        lambda path: SimpleNamespace(total=250 * GIB, used=170 * GIB, free=80 * GIB),
    )


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The local Hub server (alice, in org team, holds WRITE_TOKEN) as this process's
    HF_ENDPOINT and HF_TOKEN."""
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice", orgs=("team",))
    server.start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_TOKEN", WRITE_TOKEN)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    try:
        yield server
    finally:
        server.stop()
