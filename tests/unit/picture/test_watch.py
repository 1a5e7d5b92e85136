"""watch.RunsWatcher / RunWatcher: derived state, progress, ETA, selection, JSON."""

from __future__ import annotations

import builtins
import errno
import json
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
from support.run_dir import iso

from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.render.snapshot_text import snapshot_to_text

RUN_KEYS = {
    "run_dir",
    "name",
    "state",
    "status_state",
    "pid",
    "pid_alive",
    "current_epoch",
    "total_epochs",
    "progress",
    "eta_seconds",
    "elapsed_seconds",
    "mean_epoch_seconds",
    "best_metric",
    "best_metric_name",
    "best_epoch",
    "updated_at",
    "error",
}
TOP_KEYS = {"schema_version", "generated_at", "root", "runs", "selected"}
SELECTED_KEYS = {"run_dir", "metrics", "log_tail"}
METRICS_KEYS = {"columns", "last", "series"}


def only_run(root: Path, now: float, selected: str | None = None):
    snap = RunsWatcher(str(root)).refresh(now=now, selected=selected)
    assert len(snap.runs) == 1, snap.runs
    return snap.runs[0]


def metric_rows(n: int, start: int = 1) -> list[dict]:
    return [
        {"epoch": e, "train/loss": 10.0 / e, "metrics/mAP50-95": e / 100.0}
        for e in range(start, start + n)
    ]


# -- states ----------------------------------------------------------------------


def test_completed_sample_run(sample_run: Path) -> None:
    root = sample_run.parent
    snap = RunsWatcher(str(root)).refresh(now=time.time())
    assert snap.problem is None and snap.root_exists
    r = snap.runs[0]
    assert r.run_dir == str(sample_run)  # not save_dir (/root/runs/run1) from status.json
    assert r.name == "run1"
    assert (r.state, r.status_state) == ("completed", "completed")
    assert (r.current_epoch, r.total_epochs, r.progress) == (3, 3, 1.0)
    assert r.eta_seconds is None
    assert r.elapsed_seconds == pytest.approx(6.367)
    assert r.best_metric == pytest.approx(0.00025270239574564746)
    assert r.best_metric_name == "metrics/mAP50-95"
    assert r.best_epoch == 3
    assert r.model == "yolo9-t"
    assert r.pid == 15072 and r.pid_alive is None
    assert r.error is None and r.problem is None
    assert r.updated_at == "2026-12-02T15:19:35+00:00"
    # the times as numbers too (the run header formats them; it parses nothing)
    assert r.updated == datetime(2026, 12, 2, 15, 19, 35, tzinfo=timezone.utc).timestamp()
    assert r.started_at is not None and r.started_at < r.updated
    assert "started_at" not in snapshot_to_json(snap)["runs"][0]  # the JSON is as it was
    assert snap.selected is not None and snap.selected.run_dir == str(sample_run)
    assert snap.selected.log.lines[-1].endswith("Training complete in 0.00 hours")


def test_stale_save_dir_is_ignored(sample_run: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    shutil.move(str(sample_run), moved)
    status = json.loads((moved / "status.json").read_text())
    assert status["save_dir"] == "/root/runs/run1"
    r = only_run(moved, now=time.time())
    assert r.run_dir == str(moved)
    assert r.name == "renamed"
    assert r.state == "completed"


def test_failed_run_shows_error_and_progress_from_metrics(
    tmp_path: Path, write_status, write_metrics, dead_pid: int
) -> None:
    run = tmp_path / "runs" / "oom"
    write_metrics(run, metric_rows(4))
    write_status(
        run,
        state="failed",
        pid=dead_pid,
        total_epochs=10,
        started_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:10:00+00:00",
        error={"type": "RuntimeError", "message": "CUDA out of memory"},
    )  # libreyolo drops completed_epochs when it fails
    r = only_run(tmp_path / "runs", now=time.time())
    assert r.state == "failed"
    assert r.error == "RuntimeError: CUDA out of memory"
    assert r.current_epoch == 4
    assert r.progress == pytest.approx(0.4)
    assert r.eta_seconds is None
    assert r.pid_alive is None  # a final state does not look at the pid


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ("disk full", "disk full"),
        ({"type": "ValueError"}, "ValueError"),
        (None, "failed (status.json gives no error)"),
    ],
)
def test_failed_run_error_forms(tmp_path: Path, write_status, error, shown) -> None:
    write_status(tmp_path / "r", state="failed", total_epochs=5, error=error)
    assert only_run(tmp_path, now=time.time()).error == shown


def test_dead_run(tmp_path: Path, write_status, write_metrics, dead_pid: int) -> None:
    run = tmp_path / "r"
    write_metrics(run, metric_rows(2))
    write_status(
        run,
        state="running",
        pid=dead_pid,
        completed_epochs=2,
        total_epochs=10,
        mean_epoch_seconds=60.0,
        started_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:02:00+00:00",
    )
    r = only_run(tmp_path, now=time.time())
    assert (r.state, r.status_state) == ("dead", "running")
    assert r.pid == dead_pid and r.pid_alive is False
    assert r.error == f"process {dead_pid} is gone; status.json still says running"
    assert r.eta_seconds is None
    assert r.elapsed_seconds == 120.0  # updated_at - started_at, not now - started_at
    assert (r.current_epoch, r.progress) == (2, pytest.approx(0.2))


def test_pid_reused_by_a_younger_process_is_dead(
    tmp_path: Path, write_status, live_process: psutil.Process
) -> None:
    created = live_process.create_time()
    write_status(
        tmp_path / "r",
        state="running",
        pid=live_process.pid,
        total_epochs=10,
        started_at=iso(created - 3600),
    )
    r = only_run(tmp_path, now=created + 5)
    assert r.state == "dead" and r.pid_alive is False
    assert "newer process" in (r.error or "")


def test_pid_created_within_slack_is_running(
    tmp_path: Path, write_status, live_process: psutil.Process
) -> None:
    created = live_process.create_time()
    write_status(
        tmp_path / "r",
        state="running",
        pid=live_process.pid,
        total_epochs=10,
        started_at=iso(created - 3),  # within PID_REUSE_SLACK_S
        mtime=created + 10,
    )
    r = only_run(tmp_path, now=created + 20)
    assert r.state == "running" and r.pid_alive is True
    assert r.error is None


def test_zombie_trainer_is_dead(
    tmp_path: Path, write_status, zombie_process: psutil.Process
) -> None:
    created = zombie_process.create_time()
    write_status(
        tmp_path / "r",
        state="running",
        pid=zombie_process.pid,
        total_epochs=10,
        started_at=iso(created),
    )
    r = only_run(tmp_path, now=created + 5)
    assert r.state == "dead" and r.pid_alive is False
    assert "zombie" in (r.error or "")


def test_stalled_with_a_frozen_clock(
    tmp_path: Path, write_status, live_process: psutil.Process
) -> None:
    started = float(int(live_process.create_time()))
    mtime = started + 100
    write_status(
        tmp_path / "r",
        mtime=mtime,
        state="running",
        pid=live_process.pid,
        completed_epochs=1,
        total_epochs=10,
        started_at=iso(started),
    )
    watcher = RunsWatcher(str(tmp_path))
    assert watcher.refresh(now=mtime + 599).runs[0].state == "running"
    r = watcher.refresh(now=mtime + 601).runs[0]
    assert r.state == "stalled"
    assert r.pid_alive is True
    assert r.error == (
        f"no status update for 10m01s (limit 10m00s); process {live_process.pid} still alive"
    )


def test_long_epochs_extend_the_stall_limit(
    tmp_path: Path, write_status, live_process: psutil.Process
) -> None:
    started = float(int(live_process.create_time()))
    mtime = started + 100
    write_status(
        tmp_path / "r",
        mtime=mtime,
        state="running",
        pid=live_process.pid,
        completed_epochs=1,
        total_epochs=10,
        mean_epoch_seconds=400.0,  # limit = 3 x 400 = 1200 s
        started_at=iso(started),
    )
    watcher = RunsWatcher(str(tmp_path))
    assert watcher.refresh(now=mtime + 601).runs[0].state == "running"
    assert watcher.refresh(now=mtime + 1199).runs[0].state == "running"
    r = watcher.refresh(now=mtime + 1201).runs[0]
    assert r.state == "stalled"
    assert "limit 20m00s" in (r.error or "")


def test_eta_counts_down_and_elapsed_follows_now(
    tmp_path: Path, write_status, live_process: psutil.Process
) -> None:
    started = float(int(live_process.create_time()))
    mtime = started + 300
    run = tmp_path / "r"
    fields = dict(
        state="running",
        pid=live_process.pid,
        completed_epochs=4,
        total_epochs=10,
        mean_epoch_seconds=60.0,
        started_at=iso(started),
    )
    write_status(run, mtime=mtime, **fields)
    watcher = RunsWatcher(str(tmp_path))

    r = watcher.refresh(now=mtime).runs[0]
    assert r.state == "running"
    assert r.eta_seconds == pytest.approx(360.0)  # 6 epochs x 60 s
    assert r.elapsed_seconds == pytest.approx(300.0)
    assert r.progress == pytest.approx(0.4)

    r = watcher.refresh(now=mtime + 30).runs[0]
    assert r.eta_seconds == pytest.approx(330.0)
    assert r.elapsed_seconds == pytest.approx(330.0)

    r = watcher.refresh(now=mtime + 500).runs[0]  # overdue but not stalled
    assert r.state == "running"
    # never "ETA 0s" while it runs: no ETA, and how late it is (360 s said, 500 s gone)
    assert r.eta_seconds is None
    assert r.eta_overdue_seconds == pytest.approx(140.0)
    snap = watcher.refresh(now=mtime + 500)
    assert snapshot_to_json(snap)["runs"][0]["eta_overdue_seconds"] == pytest.approx(140.0)
    assert "eta overdue 2m20s" in snapshot_to_text(snap)

    write_status(run, mtime=mtime + 60, **dict(fields, completed_epochs=5))
    r = watcher.refresh(now=mtime + 70).runs[0]
    assert r.eta_seconds == pytest.approx(290.0)  # 5 x 60 - 10
    assert r.elapsed_seconds == pytest.approx(370.0)
    assert r.current_epoch == 5


def test_mean_epoch_derived_from_elapsed_when_missing(
    tmp_path: Path, write_status, live_process: psutil.Process
) -> None:
    started = float(int(live_process.create_time()))
    write_status(
        tmp_path / "r",
        mtime=started + 200,
        state="running",
        pid=live_process.pid,
        start_epoch=3,  # a resumed run: epochs 3 and 4 ran here
        completed_epochs=4,
        total_epochs=10,
        elapsed_seconds=200.0,
        started_at=iso(started),
    )
    r = only_run(tmp_path, now=started + 200)
    assert r.mean_epoch_seconds == pytest.approx(100.0)
    assert r.eta_seconds == pytest.approx(600.0)


def test_half_written_status_is_reported(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "status.json").write_text('{"state": "runn')
    r = only_run(tmp_path, now=time.time())
    assert r.state == "unknown"
    assert r.problem == "status.json is half-written or not JSON"


def test_results_csv_only_run_has_no_problem(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "results.csv").write_text("epoch,train/loss\n1,2.0\n2,1.0\n")
    snap = RunsWatcher(str(tmp_path)).refresh(now=time.time())
    r = snap.runs[0]
    assert r.state == "unknown" and r.problem is None
    assert r.current_epoch == 2
    assert snap.selected.metrics.source == "results.csv"
    assert snap.selected.log.problem == "no train.log yet (libreyolo starts it at epoch 1)"


# -- the root, discovery order, selection ----------------------------------------


def test_root_itself_is_a_run(sample_run: Path) -> None:
    snap = RunsWatcher(str(sample_run)).refresh(now=time.time(), selected=str(sample_run))
    assert [r.run_dir for r in snap.runs] == [str(sample_run)]
    assert snap.runs[0].name == "run1"
    assert snap.selected.run_dir == str(sample_run)


def _three_runs(root: Path, write_status) -> dict[str, Path]:
    runs = {"a/r1": root / "a" / "r1", "b/c/r2": root / "b" / "c" / "r2", "r3": root / "r3"}
    base = time.time() - 10_000
    for i, (_, path) in enumerate(runs.items()):
        write_status(path, mtime=base + 100 * i, state="completed", total_epochs=1)
    return runs


def test_nested_runs_newest_activity_first(tmp_path: Path, write_status) -> None:
    runs = _three_runs(tmp_path, write_status)
    snap = RunsWatcher(str(tmp_path)).refresh(now=time.time())
    assert [r.name for r in snap.runs] == ["r3", "b/c/r2", "a/r1"]
    assert [r.run_dir for r in snap.runs] == [str(runs[n]) for n in ("r3", "b/c/r2", "a/r1")]

    # a new train.log line in a/r1 makes it the most active
    (runs["a/r1"] / "train.log").write_text("epoch 2\n")
    snap = RunsWatcher(str(tmp_path)).refresh(now=time.time())
    assert snap.runs[0].name == "a/r1"


def test_selected_run_switching_and_fallback(tmp_path: Path, write_status) -> None:
    runs = _three_runs(tmp_path, write_status)
    (runs["a/r1"] / "train.log").write_text("from r1\n")
    (runs["b/c/r2"] / "train.log").write_text("from r2\n")
    # keep r3 the newest by activity
    now = time.time()
    os.utime(runs["r3"] / "status.json", (now, now))
    watcher = RunsWatcher(str(tmp_path))

    snap = watcher.refresh(now=now)
    assert snap.selected.run_dir == str(runs["r3"])  # nothing chosen: the newest
    snap = watcher.refresh(now=now, selected=str(runs["a/r1"]))
    assert snap.selected.run_dir == str(runs["a/r1"])
    assert snap.selected.log.lines == ("from r1",)
    assert snap.selected_run.name == "a/r1"
    snap = watcher.refresh(now=now, selected=str(runs["b/c/r2"]))
    assert snap.selected.run_dir == str(runs["b/c/r2"])
    assert snap.selected.log.lines == ("from r2",)

    shutil.rmtree(runs["b/c/r2"])
    snap = watcher.refresh(now=now, selected=str(runs["b/c/r2"]))
    assert [r.name for r in snap.runs] == ["r3", "a/r1"]
    assert snap.selected.run_dir == str(runs["r3"])  # vanished: back to the newest

    snap = watcher.refresh(now=now, selected=str(tmp_path / "no" / "such"))
    assert snap.selected.run_dir == str(runs["r3"])


def test_empty_root_says_how_runs_get_there(tmp_path: Path) -> None:
    snap = RunsWatcher(str(tmp_path)).refresh(now=time.time())
    assert snap.root_exists is True
    assert snap.runs == () and snap.selected is None
    assert snap.problem is not None
    assert f"No runs under {tmp_path}" in snap.problem
    assert f"libreyolo train ... project={tmp_path}" in snap.problem


def test_missing_root_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    watcher = RunsWatcher(str(root))
    snap = watcher.refresh(now=time.time())
    assert snap.root_exists is False
    assert snap.runs == () and snap.selected is None
    assert snap.problem is not None and "does not exist" in snap.problem
    assert f"project={root}" in snap.problem
    data = snapshot_to_json(snap)
    assert data["root_exists"] is False and data["problem"] == snap.problem

    (root / "r").mkdir(parents=True)  # it appears later
    (root / "r" / "status.json").write_text('{"state": "completed"}')
    snap = watcher.refresh(now=time.time())
    assert snap.root_exists is True and [r.name for r in snap.runs] == ["r"]


def test_root_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "runs"
    path.write_text("")
    snap = RunsWatcher(str(path)).refresh(now=time.time())
    assert snap.runs == ()
    assert snap.root_exists
    assert snap.problem.startswith(f"{path} is a file, not a directory: ")  # not "... yet"


# -- JSON ---------------------------------------------------------------------------


def test_snapshot_json_has_every_key_and_no_nan(sample_run: Path) -> None:
    with open(sample_run / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"epoch": 4, "train/loss": float("nan"), "odd": float("inf")}) + "\n")
    snap = RunsWatcher(str(sample_run.parent)).refresh(now=1_800_000_000.0)
    data = snapshot_to_json(snap)
    text = json.dumps(data, allow_nan=False)  # raises on NaN/inf
    assert json.loads(text) == data

    assert TOP_KEYS <= set(data)
    assert data["schema_version"] == 1
    assert data["generated_at"] == "2027-01-15T08:00:00+00:00"
    assert data["root"] == str(sample_run.parent)
    assert len(data["runs"]) == 1
    assert RUN_KEYS <= set(data["runs"][0])
    run = data["runs"][0]
    assert (run["state"], run["current_epoch"], run["total_epochs"]) == ("completed", 4, 3)
    sel = data["selected"]
    assert SELECTED_KEYS <= set(sel)
    assert METRICS_KEYS <= set(sel["metrics"])
    assert sel["run_dir"] == str(sample_run)
    assert "train/loss" in sel["metrics"]["columns"]
    assert sel["metrics"]["series"]["train/loss"][-1] is None  # the NaN
    assert sel["metrics"]["last"]["odd"] is None  # the inf
    assert sel["metrics"]["series"]["train/loss"][0] == pytest.approx(19.603766441345215)
    assert sel["log_tail"][-1].endswith("Training complete in 0.00 hours")


def test_snapshot_json_caps_series_and_log_tail(
    tmp_path: Path, write_status, write_metrics
) -> None:
    run = tmp_path / "r"
    write_metrics(run, metric_rows(300))
    write_status(run, state="completed", completed_epochs=300, total_epochs=300)
    (run / "train.log").write_text("".join(f"log line {i}\n" for i in range(500)))
    data = snapshot_to_json(RunsWatcher(str(tmp_path)).refresh(now=time.time()))
    series = data["selected"]["metrics"]["series"]
    assert set(series) == {"train/loss", "metrics/mAP50-95"}
    # every column: the newest 120 epochs of the 300, oldest first
    assert series["metrics/mAP50-95"] == [e / 100.0 for e in range(181, 301)]
    assert series["train/loss"] == [10.0 / e for e in range(181, 301)]
    # the newest 50 lines of the 500
    assert data["selected"]["log_tail"] == [f"log line {i}" for i in range(450, 500)]
    assert data["selected"]["metrics"]["stats"]["train/loss"]["min"] == pytest.approx(10 / 300)


def test_snapshot_text_names_runs_and_states(sample_run: Path, write_status) -> None:
    write_status(sample_run.parent / "broken", state="failed", error={"type": "E", "message": "m"})
    text = snapshot_to_text(RunsWatcher(str(sample_run.parent)).refresh(now=time.time()))
    assert "run1" in text and "completed" in text
    assert "broken" in text and "failed" in text and "E: m" in text


def test_unreadable_files_are_reported_in_the_snapshot(sample_run: Path, monkeypatch) -> None:
    status_path = str(sample_run / "status.json")
    log_path = str(sample_run / "train.log")
    real_open, real_os_open = builtins.open, os.open

    def deny(path: str):
        return PermissionError(errno.EACCES, "Permission denied", path)

    def fake_open(file, *args, **kwargs):
        if os.fspath(file) == status_path:
            raise deny(status_path)
        return real_open(file, *args, **kwargs)

    def fake_os_open(file, flags, *args, **kwargs):
        if os.fspath(file) in (log_path, status_path):  # readers open through safeio
            raise deny(os.fspath(file))
        return real_os_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    snap = RunsWatcher(str(sample_run)).refresh(now=time.time())
    r = snap.runs[0]
    assert r.state == "unknown"
    assert r.problem == "status.json unreadable: permission denied"
    assert r.current_epoch == 3  # the metrics history is still readable
    assert snap.selected.log.lines == ()
    assert snap.selected.log.problem == "train.log unreadable: permission denied"
    data = snapshot_to_json(snap)
    assert data["runs"][0]["problem"] == "status.json unreadable: permission denied"
    assert data["selected"]["log_problem"] == "train.log unreadable: permission denied"
