"""The watcher's autostop plan as the read path sees it: in the Snapshot (the app's line and
the fleet take it from there), re-read only when the file changes, gone with its watcher."""

from __future__ import annotations

import os
import subprocess
import sys

from rgpu_tui.core.model.snapshot import AutostopPlan
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.records.autostop_files import AutostopFiles, PlanReader, own_start_time


def _plan(files: AutostopFiles, pid: int, started: float | None, **extra) -> None:
    files.write_plan(
        {"pid": pid, "pid_started": started, "phase": "counting", "fires_at": 1.8e9,
         "message": "all weights on the Hub", **extra}
    )  # fmt: skip


def test_the_plan_of_a_live_watcher_is_in_the_snapshot(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "runs"
    root.mkdir()
    files = AutostopFiles.for_root(str(root))
    _plan(files, os.getpid(), own_start_time())
    collector = Collector(str(root), fake_gpus=0)
    try:
        snap = collector.refresh(now=1.7e9)
    finally:
        collector.close()
    assert snap.autostop == AutostopPlan("counting", "all weights on the Hub", 1.8e9)
    assert snapshot_to_json(snap)["autostop"] == {
        "phase": "counting",
        "message": "all weights on the Hub",
        "fires_at": "2027-01-15T08:00:00+00:00",
    }


def test_a_plan_is_read_again_only_when_it_changes_and_dies_with_its_watcher(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    files = AutostopFiles.for_root(str(tmp_path / "runs"))
    reader = PlanReader(files)
    assert reader.read() is None  # no watcher ever wrote one
    watcher = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        import psutil

        _plan(files, watcher.pid, psutil.Process(watcher.pid).create_time())
        reads = []
        real = AutostopFiles.read_plan
        monkeypatch.setattr(AutostopFiles, "read_plan", lambda self: reads.append(1) or real(self))
        assert reader.read().phase == "counting"
        assert reader.read().phase == "counting"
        assert len(reads) == 1  # unchanged file: not read again
        watcher.kill()
        watcher.wait()
        assert reader.read() is None  # its watcher is gone
        assert len(reads) == 1
    finally:
        watcher.kill()
        watcher.wait()
