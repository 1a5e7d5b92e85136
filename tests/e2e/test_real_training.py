"""End to end: a real (tiny, CPU) libreyolo training run watched by rgpu-tui's core.

Slow (tens of seconds per test): marked ``training``; deselect with ``-m "not training"``.
Every wait polls against a deadline; there are no fixed sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.training import Training

pytestmark = pytest.mark.training

POLL = 0.2
FIRST_EPOCH_TIMEOUT = 180.0  # startup is ~7 s and an epoch ~2 s here; generous for slow CI
FINISH_TIMEOUT = 300.0


# ------------------------------------------------------------------ helpers
def _same_path(a: str | os.PathLike[str] | None, b: str | os.PathLike[str]) -> bool:
    return a is not None and os.path.realpath(a) == os.path.realpath(b)


def _run_entry(snap: dict[str, Any], run_dir: Path) -> dict[str, Any] | None:
    for run in snap.get("runs") or []:
        if _same_path(run.get("run_dir"), run_dir):
            return run
    return None


def _brief(snap: dict[str, Any]) -> str:
    """The snapshot, for assertion messages, without the bulky metric series."""
    snap = dict(snap)
    sel = snap.get("selected")
    if isinstance(sel, dict):
        sel = dict(sel)
        metrics = sel.get("metrics")
        if isinstance(metrics, dict):
            series = metrics.get("series")
            sel["metrics"] = {
                **metrics,
                "series": f"<{type(series).__name__} of {len(series or ())}>",
            }
        snap["selected"] = sel
    return json.dumps(snap, indent=1, default=str)[:6000]


def _watcher(root: Path):
    from rgpu_tui.core.model.snapshot_json import snapshot_to_json
    from rgpu_tui.core.picture.watch import RunsWatcher

    watcher = RunsWatcher(str(root))

    def refresh(selected: str | None = None) -> dict[str, Any]:
        snap = snapshot_to_json(watcher.refresh(now=time.time(), selected=selected))
        # the dict must be plain JSON
        return json.loads(json.dumps(snap))

    return refresh


def _rgpu_tui_exe() -> Path:
    return Path(sys.executable).parent / "rgpu-tui"


# ---------------------------------------------------------------- libreyolo
@pytest.mark.parametrize("live_training", [2], indirect=True)
def test_libreyolo_run_files(live_training: Training) -> None:
    """The fixture itself, and the libreyolo 1.6 file contract the core relies on.

    Fails here (rather than in the rgpu-tui tests below) when libreyolo changed.
    """
    t = live_training
    st = t.wait_for_epochs(1, FIRST_EPOCH_TIMEOUT)
    assert st["state"] == "running", st
    assert st["pid"] == t.pid, st
    for key in (
        "current_epoch",
        "total_epochs",
        "started_at",
        "updated_at",
        "mean_epoch_seconds",
        "eta_seconds",
        "best_metric",
        "best_epoch",
        "progress",
    ):
        assert key in st, f"status.json while running lacks {key!r}: {sorted(st)}"
    assert t.metrics_lines() >= 1
    assert (t.run_dir / "train.log").is_file()

    t.wait_ok(FINISH_TIMEOUT)
    st = t.status()
    assert st is not None
    assert st["state"] == "completed", st
    assert st["completed_epochs"] == st["total_epochs"] == t.epochs, st
    assert t.metrics_lines() == t.epochs
    lines = (t.run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in lines] == list(range(1, t.epochs + 1))
    for name in (
        "results.csv",
        "summary.json",
        "weights/best.pt",
        "weights/last.pt",
        f"weights/epoch_{t.epochs}.pt",
    ):
        assert (t.run_dir / name).is_file(), name


# ------------------------------------------------------------------ rgpu-tui
def test_snapshot_follows_live_training(live_training: Training) -> None:
    t = live_training
    run_dir = t.run_dir
    refresh = _watcher(t.project)

    # 1. while it runs
    def running() -> dict[str, Any] | None:
        snap = refresh()
        run = _run_entry(snap, run_dir)
        if (
            run is not None
            and run.get("state") == "running"
            and (run.get("current_epoch") or 0) >= 1
            and run["current_epoch"] < (run.get("total_epochs") or 0)
        ):
            return snap
        return None

    snap = t.wait_until(running, FIRST_EPOCH_TIMEOUT, "a 'running' snapshot with an epoch done")
    run = _run_entry(snap, run_dir)
    assert run is not None
    msg = _brief(snap)
    assert snap["schema_version"] >= 1, msg
    assert run["status_state"] == "running", msg
    assert run["pid"] == t.pid, msg
    assert run["pid_alive"] is True, msg
    assert run["total_epochs"] == t.epochs, msg
    assert 0 < run["progress"] < 1, msg
    assert run["eta_seconds"] > 0, msg
    assert run["mean_epoch_seconds"] > 0, msg
    assert run["elapsed_seconds"] > 0, msg
    assert run["error"] in (None, ""), msg
    sel = snap["selected"]
    assert sel is not None and _same_path(sel["run_dir"], run_dir), msg
    assert sel["metrics"]["series"], msg
    assert sel["metrics"]["columns"], msg
    assert sel["metrics"]["last"]["epoch"] >= 1, msg
    assert sel["log_tail"], msg

    # 2. after it finishes
    t.wait_ok(FINISH_TIMEOUT)
    snap = refresh()
    run = _run_entry(snap, run_dir)
    msg = _brief(snap)
    assert run is not None, msg
    assert run["state"] == "completed", msg
    assert run["status_state"] == "completed", msg
    assert run["progress"] == 1.0, msg
    assert run["current_epoch"] == run["total_epochs"] == t.epochs, msg
    assert run["best_epoch"] is not None and 1 <= run["best_epoch"] <= t.epochs, msg
    assert run["best_metric"] is not None, msg
    assert not run["pid_alive"], msg
    sel = snap["selected"]
    assert sel is not None and _same_path(sel["run_dir"], run_dir), msg
    assert sel["metrics"]["last"]["epoch"] == t.epochs, msg
    assert sel["log_tail"], msg

    # 3. the CLI, pointed at the run dir, agrees
    proc = subprocess.run(
        [str(_rgpu_tui_exe()), "snapshot", str(run_dir), "--json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, (
        f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    try:
        cli = json.loads(proc.stdout)
    except ValueError as exc:
        pytest.fail(f"rgpu-tui snapshot --json printed invalid JSON ({exc}):\n{proc.stdout[:2000]}")
    cli_run = _run_entry(cli, run_dir)
    assert cli_run is not None, _brief(cli)
    for key in (
        "name",
        "state",
        "status_state",
        "pid",
        "current_epoch",
        "total_epochs",
        "progress",
        "best_metric",
        "best_metric_name",
        "best_epoch",
        "updated_at",
    ):
        assert cli_run[key] == run[key], f"{key}: cli {cli_run[key]!r} != api {run[key]!r}"
    assert cli["selected"] is not None and _same_path(cli["selected"]["run_dir"], run_dir)
    assert cli["selected"]["metrics"]["last"]["epoch"] == t.epochs


def test_killed_training_is_dead(live_training: Training) -> None:
    t = live_training
    run_dir = t.run_dir
    t.wait_for_epochs(1, FIRST_EPOCH_TIMEOUT)
    refresh = _watcher(t.project)

    snap = refresh()
    run = _run_entry(snap, run_dir)
    if t.returncode is not None or run is None or run["state"] != "running":
        pytest.fail(f"expected a running run before the kill\n{t!r}\n{_brief(snap)}")
    assert run["pid_alive"] is True, _brief(snap)

    os.killpg(t.pid, signal.SIGKILL)
    # Reap it: a real watcher is not the trainer's parent, so it never sees a zombie.
    assert t.wait(30) == -signal.SIGKILL
    status = t.status()
    assert status is not None and status["state"] == "running", status  # libreyolo had no chance

    for _ in range(2):
        snap = refresh()
        run = _run_entry(snap, run_dir)
        if run is not None and run["state"] == "dead":
            break
        time.sleep(POLL)
    msg = _brief(snap)
    assert run is not None, msg
    assert run["state"] == "dead", msg
    assert run["status_state"] == "running", msg
    assert run["pid_alive"] is False, msg
    assert run["pid"] == t.pid, msg
