"""The app raises the watcher's events (core.away.events) as notices: what changes while it
runs, once each; what it finds at start is on the screen already, not a notice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import psutil

from rgpu_tui.tui.app import RgpuApp

from .helpers import wait_for


def start_trainer(run_dir: Path) -> subprocess.Popen:
    """A python working in `run_dir` (its cwd, as a trainer: core.run.run_process)."""
    run_dir.mkdir(parents=True)
    code = "import time; time.sleep(600)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=run_dir)
    created = psutil.Process(proc.pid).create_time()
    doc = {
        "state": "running",
        "pid": proc.pid,
        "started_at": datetime.fromtimestamp(int(created), tz=timezone.utc).isoformat(),
        "total_epochs": 10,
        "completed_epochs": 4,
    }
    (run_dir / "status.json").write_text(json.dumps(doc))
    return proc


def event_notices(app) -> list[tuple[str, str, str]]:
    return [
        (str(n.title), str(n.message), n.severity)
        for n in app._notifications
        if str(n.title).startswith("run_")
    ]


async def test_a_run_that_dies_while_watched_is_one_error_notice(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "runs"
    old = root / "old"
    old.mkdir(parents=True)
    (old / "status.json").write_text(json.dumps({"state": "running", "pid": 4_000_000}))
    proc = start_trainer(root / "exp\x1b[31m1")
    try:
        app = RgpuApp(root=str(root), interval=0.1, fake_gpus=1)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None)
            assert event_notices(app) == []  # the dead run found at start: on screen only
            proc.kill()
            proc.wait()
            await wait_for(pilot, lambda: event_notices(app))
            stamp = app.snapshot.generated_at
            await wait_for(pilot, lambda: app.snapshot.generated_at > stamp + 0.3)
            [(title, message, severity)] = event_notices(app)
            assert title == "run_dead" and severity == "error"
            assert message.startswith("exp^[[31m1 is DEAD at epoch 4/10: process")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not os.path.exists(tmp_path / "state")  # the app keeps its events in memory
