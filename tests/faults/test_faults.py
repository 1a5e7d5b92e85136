"""Faults injected into the whole system: the Collector (what the screen and
`rgpu-tui snapshot` show), the CLI as a subprocess, and the app under Pilot.

Each test names the fault it injects and asserts what the user sees: the last good
value kept and a sentence saying why, a clear one-line error, no stray files, and the
next refresh or push recovering. The readers themselves have their own unit tests
(tests/unit); these check that the faults do not escape them.

Run: .venv/bin/pytest tests/faults -q   (-s prints the 200-run refresh time)
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import psutil
import pynvml
import pytest
from e2e.test_hub_push import (
    BAD_TOKEN,
    WRITE_TOKEN,
    rewrite_in_place,
)
from e2e.test_hub_push import make_run as make_hub_run
from support.checkpoints import checkpoint_bytes
from tui.helpers import rendered, wait_for

from rgpu_tui import cli
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub import staging
from rgpu_tui.core.hub.push import PushRequest, push, staging_dir
from rgpu_tui.core.machine.gpu import INIT_RETRY_S, GpuMonitor
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.records.push_records import pushes_path, read_pushes
from rgpu_tui.core.render.snapshot_text import snapshot_to_text
from rgpu_tui.core.run.tail import MAX_LOG_LINE
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.widgets.run_header import push_text

HUB_SETTINGS = Settings(hub_repo="alice/ckpts")
LOG_MISSING = "no train.log yet (libreyolo starts it at epoch 1)"
HALF_WRITTEN = "status.json is half-written or not JSON"


# -- building runs ----------------------------------------------------------------


def iso(ts: float) -> str:
    """ISO-8601 with an offset, whole seconds, as libreyolo writes it."""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).isoformat()


def metric_row(epoch: int) -> dict:
    return {
        "epoch": epoch,
        "train/loss": round(10.0 / epoch, 4),
        "metrics/mAP50-95": round(0.05 * epoch, 4),
        "best_metric": round(0.05 * epoch, 4),
        "best_metric_name": "metrics/mAP50-95",
        "best_epoch": epoch,
    }


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


def write_status(run: Path, doc: dict, mtime: float | None = None) -> None:
    """Atomically, as libreyolo does (a new inode each time)."""
    tmp = run / ".status.json.tmp"
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, run / "status.json")
    if mtime is not None:
        os.utime(run / "status.json", (mtime, mtime))


def make_run(
    root: Path,
    name: str,
    *,
    status: dict | None = None,
    epochs: int = 3,
    log: list[str] | None = None,
) -> Path:
    run = root / name
    run.mkdir(parents=True, exist_ok=True)
    if status is not None:
        write_status(run, status)
    if epochs:
        (run / "metrics.jsonl").write_text(
            "".join(json.dumps(metric_row(e)) + "\n" for e in range(1, epochs + 1))
        )
    if log is not None:
        (run / "train.log").write_text("".join(line + "\n" for line in log))
    return run


def age(path: Path, seconds: float = 3600.0) -> None:
    """Set every mtime under `path` (and its own) `seconds` into the past."""
    then = time.time() - seconds
    for p in [*path.rglob("*"), path]:
        os.utime(p, (then, then))


def only_run(snap):
    [run] = snap.runs
    return run


def run_cli(*args: str, home: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    return subprocess.run(
        [sys.executable, "-m", "rgpu_tui", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- torn and half-written files ---------------------------------------------------


def test_torn_metrics_line_waits_for_its_newline(tmp_path, collector) -> None:
    """Fault: metrics.jsonl read while its last line is half-written (torn)."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(epoch=3), epochs=3)
    c = collector(tmp_path / "runs")
    snap = c.refresh(time.time())
    assert snap.selected.metrics.rows == 3

    line = json.dumps(metric_row(4)) + "\n"
    with open(run / "metrics.jsonl", "a") as f:
        f.write(line[:25])  # torn mid-row
    snap = c.refresh(time.time())
    m = snap.selected.metrics
    assert (m.rows, m.last["epoch"], m.malformed_lines, m.problem) == (3, 3, 0, None)
    assert m.column("train/loss").values == (10.0, 5.0, 3.3333)
    assert only_run(snap).current_epoch == 3
    json.dumps(snapshot_to_json(snap))  # the torn state serialises

    with open(run / "metrics.jsonl", "a") as f:
        f.write(line[25:])
    m = c.refresh(time.time()).selected.metrics
    assert (m.rows, m.last["epoch"], m.malformed_lines) == (4, 4, 0)
    assert m.column("train/loss").values == (10.0, 5.0, 3.3333, 2.5)


def test_status_json_rewritten_in_place_keeps_the_last_good_value_and_says_why(
    tmp_path, collector, spawn
) -> None:
    """Fault: status.json replaced by a non-atomic writer (truncate, partial write, then
    the rest) while it is read: the last good value stays, the run says why, then recovers."""
    run = make_run(tmp_path / "runs", "exp", status=None, epochs=0)
    trainer = alive(spawn(cwd=run))
    write_status(run, status_doc(epoch=5, **trainer), mtime=time.time() - 30)
    c = collector(tmp_path / "runs")
    good = only_run(c.refresh(time.time()))
    assert (good.state, good.current_epoch, good.problem) == ("running", 5, None)

    new = json.dumps(status_doc(epoch=6, **trainer)).encode()
    with open(run / "status.json", "r+b", buffering=0) as f:
        f.truncate(0)  # the writer has just opened it with "w"
        r = only_run(c.refresh(time.time()))
        assert (r.state, r.current_epoch, r.total_epochs, r.problem) == (
            "running", 5, 10, HALF_WRITTEN,
        )  # fmt: skip
        f.write(new[: len(new) // 2])  # part of the new content
        snap = c.refresh(time.time())
        r = only_run(snap)
        assert (r.state, r.current_epoch, r.problem) == ("running", 5, HALF_WRITTEN)
        assert snapshot_to_json(snap)["runs"][0]["problem"] == HALF_WRITTEN
        assert f"({HALF_WRITTEN})" in snapshot_to_text(snap)
        f.write(new[len(new) // 2 :])  # the writer finishes
    r = only_run(c.refresh(time.time()))
    assert (r.state, r.current_epoch, r.problem) == ("running", 6, None)


async def test_half_written_status_json_in_the_app_header(tmp_path, spawn) -> None:
    """Fault: status.json half-written while the app refreshes: the header keeps the epoch
    and says why; once written whole the note goes away."""
    root = tmp_path / "runs"
    run = make_run(root, "exp", status=None, epochs=0)
    trainer = alive(spawn(cwd=run))
    write_status(run, status_doc(epoch=5, **trainer), mtime=time.time() - 30)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert "epoch 5/10" in rendered(app.view.run_header)
        (run / "status.json").write_bytes(json.dumps(status_doc(epoch=6, **trainer)).encode()[:40])
        app.request_refresh()
        await wait_for(pilot, lambda: HALF_WRITTEN in rendered(app.view.run_header))
        header = rendered(app.view.run_header)
        assert "RUN" in header and "epoch 5/10" in header
        assert app.refresh_error is None
        (run / "status.json").write_text(json.dumps(status_doc(epoch=6, **trainer)))
        app.request_refresh()
        await wait_for(pilot, lambda: "epoch 6/10" in rendered(app.view.run_header))
        assert HALF_WRITTEN not in rendered(app.view.run_header)


# -- the log ---------------------------------------------------------------------------


def test_a_10_mb_single_line_in_the_log(tmp_path, collector) -> None:
    """Fault: one 10 MB line (no newline for 10 MB) appended to train.log: the tail cuts it
    at 4096 characters, memory stays flat, and the lines around it are shown."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=["epoch 1", "epoch 2"])
    c = collector(tmp_path / "runs")
    assert c.refresh(time.time()).selected.log.lines == ("epoch 1", "epoch 2")

    with open(run / "train.log", "ab") as f:
        f.write(b"x" * (10 * 1024 * 1024) + b"\nafter the long line\n")
    tracemalloc.start()
    try:
        snap = c.refresh(time.time())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = snap.selected.log.lines
    assert lines[:2] == ("epoch 1", "epoch 2")
    assert lines[2] == "x" * MAX_LOG_LINE
    assert lines[3:] == ("after the long line",)
    assert peak < 3 * 1024 * 1024, peak  # read in batches, never the whole line
    assert snap.selected.log.problem is None

    # a 10 MB line still being written is not shown until its newline arrives
    with open(run / "train.log", "ab") as f:
        f.write(b"y" * (10 * 1024 * 1024))
    assert c.refresh(time.time()).selected.log.lines[-1] == "after the long line"
    with open(run / "train.log", "ab") as f:
        f.write(b"y\nlast\n")
    assert c.refresh(time.time()).selected.log.lines[-2:] == ("y" * MAX_LOG_LINE, "last")


def test_a_10_mb_single_line_in_metrics_jsonl_is_skipped_and_counted(tmp_path, collector):
    """Fault: a 10 MB line in metrics.jsonl: skipped as malformed, the rows after it count."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), epochs=2)
    c = collector(tmp_path / "runs")
    c.refresh(time.time())
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b'{"epoch": 3, "junk": "' + b"z" * (10 * 1024 * 1024) + b'"}\n')
        f.write((json.dumps(metric_row(3)) + "\n").encode())
    m = c.refresh(time.time()).selected.metrics
    assert (m.rows, m.last["epoch"], m.malformed_lines) == (3, 3, 1)
    assert "junk" not in m.columns


def test_non_utf8_log_is_shown_with_replacement_characters(tmp_path, collector, capsys):
    """Fault: train.log holding bytes that are not UTF-8 (latin-1 text, binary junk) and a
    UTF-8 character torn between two writes."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=None)
    (run / "train.log").write_bytes(
        b"epoch 1 ok\n"
        b"caf\xe9 au lait \xff\xfe\n"  # latin-1 and a BOM-like pair
        b"\x80\x81\x00binary\n" + "ünïcödé ok\n".encode()
    )
    c = collector(tmp_path / "runs")
    snap = c.refresh(time.time())
    assert snap.selected.log.lines == (
        "epoch 1 ok",
        "caf\ufffd au lait \ufffd\ufffd",
        "\ufffd\ufffd\x00binary",
        "ünïcödé ok",
    )
    assert snap.selected.log.problem is None

    été = "été\n".encode()
    with open(run / "train.log", "ab") as f:
        f.write(été[:1])  # torn inside the first character
    c.refresh(time.time())
    with open(run / "train.log", "ab") as f:
        f.write(été[1:])
    assert c.refresh(time.time()).selected.log.lines[-1] == "été"

    # what `rgpu-tui snapshot --json` prints for it is valid JSON with the same text
    assert cli.main(["snapshot", "--json", "--fake-gpus", "1", str(tmp_path / "runs")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"]["log_tail"][1] == "caf\ufffd au lait \ufffd\ufffd"
    assert out["selected"]["log_tail"][-1] == "été"


def test_log_truncated_then_recreated_then_removed(tmp_path, collector) -> None:
    """Fault: train.log truncated in place, deleted and created again, deleted: the tail
    starts over each time and never shows stale lines (the new content is read while it is
    still shorter than the old, as at a 1 s refresh)."""
    old = [f"2026-12-02 10:00:0{i} | INFO     | old line {i}" for i in range(3)]
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=old)
    log = run / "train.log"
    c = collector(tmp_path / "runs")
    assert c.refresh(time.time()).selected.log.lines == tuple(old)

    with open(log, "r+b") as f:  # truncated in place (same inode)
        f.truncate(0)
    assert c.refresh(time.time()).selected.log.lines == ()
    with open(log, "ab") as f:
        f.write(b"new 1\n")
    assert c.refresh(time.time()).selected.log.lines == ("new 1",)
    with open(log, "ab") as f:
        f.write(b"new 2\n")
    assert c.refresh(time.time()).selected.log.lines == ("new 1", "new 2")

    log.unlink()  # deleted: the tail empties and says why
    view = c.refresh(time.time()).selected.log
    assert (view.lines, view.problem) == ((), LOG_MISSING)
    log.write_text("again\n")  # created again (ext4 may hand it the same inode)
    view = c.refresh(time.time()).selected.log
    assert (view.lines, view.problem) == (("again",), None)


def test_log_truncated_or_recreated_and_grown_past_the_old_size_between_two_refreshes(
    tmp_path, collector
):
    """Fault: train.log truncated in place (`> train.log`), or deleted and created again,
    and written past its old size before the next refresh."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=["old 1", "old 2"])
    log = run / "train.log"
    c = collector(tmp_path / "runs")
    assert c.refresh(time.time()).selected.log.lines == ("old 1", "old 2")
    with open(log, "r+b") as f:
        f.truncate(0)
        f.write(b"".join(b"restarted line %d\n" % i for i in range(10)))
    lines = c.refresh(time.time()).selected.log.lines
    assert lines == tuple(f"restarted line {i}" for i in range(10))

    log.unlink()
    log.write_text("".join(f"recreated line {i}\n" for i in range(20)))
    lines = c.refresh(time.time()).selected.log.lines
    assert lines == tuple(f"recreated line {i}" for i in range(20))


# -- directories disappearing -----------------------------------------------------------


def three_done_runs(root: Path) -> None:
    """newest, middle, oldest (by activity), each with a one-line log."""
    now = time.time()
    for i, name in enumerate(["newest", "middle", "oldest"]):
        run = make_run(root, name, status=status_doc("completed", 3, 3), log=[f"log of {name}"])
        then = now - 100 * (i + 1)
        for p in run.iterdir():
            os.utime(p, (then, then))


async def select_middle_then_delete_it(app: RgpuApp, pilot, root: Path) -> None:
    await wait_for(pilot, lambda: app.snapshot is not None)
    await pilot.press("j", "enter")
    await wait_for(pilot, lambda: "middle" in rendered(app.view.run_header))
    assert app.view.log_pane.lines[-1] == "log of middle"
    shutil.rmtree(root / "middle")
    app.request_refresh()
    await wait_for(pilot, lambda: len(app.snapshot.runs) == 2)
    await pilot.pause()


async def test_selected_run_directory_deleted_while_the_app_runs(tmp_path) -> None:
    """Fault: the selected run's directory is deleted (rm -rf) while the app shows it:
    the app keeps running, the selection falls back to the newest run, no error."""
    root = tmp_path / "runs"
    three_done_runs(root)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await select_middle_then_delete_it(app, pilot, root)
        assert app.is_running and app.refresh_error is None
        assert app.view.selected == str(root / "newest")
        assert app.snapshot.selected.run_dir == str(root / "newest")
        assert "newest" in rendered(app.view.run_header)
        assert app.view.log_pane.lines[-1] == "log of newest"
        assert [app.view.runs_list.get_option_at_index(i).id for i in range(2)] == [
            str(root / "newest"),
            str(root / "oldest"),
        ]
        app.request_refresh()  # later refreshes go on
        await wait_for(pilot, lambda: app.snapshot.selected.run_dir == str(root / "newest"))
        assert app.refresh_error is None


async def test_after_the_selected_run_is_deleted_the_list_highlights_the_fallback(tmp_path):
    """Fault: the selected run's directory deleted: the runs list highlights the run the
    header now shows, and j moves on from it."""
    root = tmp_path / "runs"
    three_done_runs(root)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await select_middle_then_delete_it(app, pilot, root)
        assert app.view.runs_list.highlighted == 0  # newest, the run the header shows
        await pilot.press("j", "enter")
        await wait_for(pilot, lambda: "oldest" in rendered(app.view.run_header), timeout=3)


def test_run_directory_deleted_between_listing_and_reading(tmp_path, collector) -> None:
    """Fault: a run directory removed in the middle of a refresh (after the runs were listed,
    before their files were read): no exception, the run's last good values stay this once,
    and the next refresh drops it."""
    root = tmp_path / "runs"
    victim = make_run(root, "victim", status=status_doc(epoch=4), log=["victim log"])
    make_run(root, "other", status=status_doc("completed", 3, 3))
    age(root / "other")
    c = collector(root)
    snap = c.refresh(time.time(), selected=str(victim))
    assert snap.selected.run_dir == str(victim)

    scan = c.runs.finder.scan

    def scan_then_delete():
        found = scan()
        shutil.rmtree(victim)
        return found

    c.runs.finder.scan = scan_then_delete
    snap = c.refresh(time.time(), selected=str(victim))
    gone = snap.run(str(victim))
    assert gone.current_epoch == 4 and gone.problem == "no status.json"
    assert snap.selected.log.problem == LOG_MISSING
    json.dumps(snapshot_to_json(snap))

    c.runs.finder.scan = scan
    snap = c.refresh(time.time(), selected=str(victim))
    assert [r.name for r in snap.runs] == ["other"]
    assert snap.selected.run_dir == str(root / "other")


def test_runs_root_deleted(tmp_path, collector) -> None:
    """Fault: the whole runs root removed while watched, then created again."""
    root = tmp_path / "runs"
    make_run(root, "exp", status=status_doc())
    c = collector(root)
    assert len(c.refresh(time.time()).runs) == 1
    shutil.rmtree(root)
    snap = c.refresh(time.time())
    assert (snap.runs, snap.selected, snap.root_exists) == ((), None, False)
    assert snap.problem.startswith(f"{root} does not exist yet")
    make_run(root, "exp2", status=status_doc())
    assert [r.name for r in c.refresh(time.time()).runs] == ["exp2"]


# -- permissions ----------------------------------------------------------------------


def deny(monkeypatch, path: Path) -> None:
    """Opening `path` raises PermissionError, as for a 0600 file of another user (the tests
    run as root, which chmod cannot stop)."""
    import builtins

    target = str(path)
    real_open, real_os_open = builtins.open, os.open

    def refuse(file):
        if isinstance(file, (str, bytes, os.PathLike)) and os.fsdecode(file) == target:
            raise PermissionError(errno.EACCES, "Permission denied", target)

    def fake_open(file, *args, **kwargs):
        refuse(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(file, *args, **kwargs):
        refuse(file)
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)


def test_permission_denied_on_status_json(tmp_path, collector, monkeypatch, capsys, spawn) -> None:
    """Fault: status.json cannot be opened (permission denied): the run keeps its last good
    values and says why; a run never read says '?' and why; both recover."""
    root = tmp_path / "runs"
    seen = make_run(root, "seen", status=None, epochs=2)
    trainer = alive(spawn(cwd=seen))
    write_status(seen, status_doc(epoch=2, **trainer), mtime=time.time() - 30)
    c = collector(root)
    assert only_run(c.refresh(time.time())).current_epoch == 2

    write_status(seen, status_doc(epoch=3, **trainer))  # rewritten: now unreadable to us
    with monkeypatch.context() as m:
        deny(m, seen / "status.json")
        r = only_run(c.refresh(time.time()))
        assert (r.state, r.current_epoch, r.problem) == (
            "running", 2, "status.json unreadable: permission denied",
        )  # fmt: skip

        # a run whose status.json was never readable: state unknown, its metrics still shown
        fresh_trainer = alive(spawn(cwd=root / "fresh"))
        fresh = make_run(root, "fresh", status=status_doc(epoch=2, **fresh_trainer), epochs=2)
        deny(m, fresh / "status.json")
        assert cli.main(["snapshot", "--fake-gpus", "1", str(fresh)]) == 0
        out = capsys.readouterr().out
        assert "(status.json unreadable: permission denied)" in out
        [line] = [ln for ln in out.splitlines() if ln.split()[1:2] == ["fresh"]]
        assert line.startswith("unknown ")
        assert "train/loss" in out

    # readable again: both recover
    snap = c.refresh(time.time())
    assert (snap.run(str(seen)).current_epoch, snap.run(str(seen)).problem) == (3, None)
    assert (snap.run(str(fresh)).state, snap.run(str(fresh)).problem) == ("running", None)


# -- GPUs ------------------------------------------------------------------------------


class FakeNvml:
    """The few pynvml calls the monitor needs, over `n` boards; `lost` holds the indexes
    NVML has lost (every query on them raises pynvml's GpuIsLost)."""

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVMLError = pynvml.NVMLError
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost

    def __init__(self, n: int):
        self.util = [50] * n
        self.lost: set[int] = set()

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.util)

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetHandleByIndex(self, index):
        if index in self.lost:
            raise pynvml.NVMLError_GpuIsLost()
        return index

    def _board(self, handle):
        if handle in self.lost:
            raise pynvml.NVMLError_GpuIsLost()
        return handle

    def nvmlDeviceGetName(self, h):
        return f"NVIDIA H100 #{self._board(h)}"

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{self._board(h):08d}"

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=self.util[self._board(h)], memory=10)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._board(h)
        return SimpleNamespace(used=1024**3, total=80 * 1024**3, free=79 * 1024**3)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 60 + self._board(h)


def test_nvml_loses_a_gpu_mid_run_the_others_keep_updating(tmp_path, collector, spawn) -> None:
    """Fault: NVML loses GPU 1 of 3 during a run (GpuIsLost): it reads LOST, the others keep
    updating, the run and the rest of the snapshot are untouched; it comes back later."""
    trainer = spawn(cwd=tmp_path / "runs" / "exp")
    make_run(tmp_path / "runs", "exp", status=status_doc(**alive(trainer)))
    fake = FakeNvml(3)
    c = collector(tmp_path / "runs", fake_gpus=None)
    c.gpus.close()
    c.gpus = GpuMonitor(nvml=fake)
    t = time.time()
    view = c.refresh(t).gpus
    assert [d.state for d in view.devices] == ["ok", "ok", "ok"]

    fake.lost.add(1)
    fake.util = [81, 99, 33]
    snap = c.refresh(t + 1)
    d0, d1, d2 = snap.gpus.devices
    assert (d0.state, d0.util_percent, d2.state, d2.util_percent) == ("ok", 81.0, "ok", 33.0)
    assert (d1.state, d1.flags, d1.util_percent, d1.name) == (
        "lost",
        ("lost",),
        None,
        "NVIDIA H100 #1",
    )
    assert only_run(snap).state == "running"
    assert "  1 NVIDIA H100 #1: LOST" in snapshot_to_text(snap).splitlines()
    assert snapshot_to_json(snap)["gpus"]["devices"][1]["state"] == "lost"

    fake.util = [90, 99, 12]
    d0, d1, d2 = c.refresh(t + 2).gpus.devices
    assert (d0.util_percent, d1.state, d2.util_percent) == (90.0, "lost", 12.0)
    assert d0.util_history == (50.0, 81.0, 90.0) and d1.util_history == (50.0, None, None)

    fake.lost.clear()  # the board is back: asked again after INIT_RETRY_S
    d1 = c.refresh(t + 2 + INIT_RETRY_S).gpus.devices[1]
    assert (d1.state, d1.util_percent) == ("ok", 99.0)


async def test_simulated_gpu_lost_in_the_app(tmp_path) -> None:
    """Fault: a simulated GPU lost mid-run (fake_lose): the pane says LOST on that row, the
    other rows keep their numbers and keep updating."""
    make_run(tmp_path / "runs", "exp", status=status_doc())
    clock = [1000.0]
    app = RgpuApp(
        root=str(tmp_path / "runs"),
        interval=60.0,  # no refresh of its own before the test's; 10 samples of history
        clock=lambda: clock[0],
        fake_gpus=3,
        fake_lose={1: 5.0},
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert "LOST" not in rendered(app.view.gpu_pane)
        for t in (1010.0, 1020.0):
            clock[0] = t
            app.request_refresh()
            await wait_for(pilot, lambda t=t: app.snapshot.generated_at == t)
        await pilot.pause()
        rows = [line for line in rendered(app.view.gpu_pane).splitlines() if "4090" in line]
        assert len(rows) == 3
        assert "LOST" in rows[1] and "LOST" not in rows[0] + rows[2]
        assert "%" in rows[0] and "%" in rows[2]
        d0, d1, d2 = app.snapshot.gpus.devices
        assert d1.state == "lost" and d1.util_history[-2:] == (None, None)
        assert None not in d0.util_history + d2.util_history and len(d0.util_history) == 3


# -- dead trainers ---------------------------------------------------------------------


def test_reused_pid_is_dead(tmp_path, collector, spawn) -> None:
    """Fault: status.json says running, and its pid now belongs to a process started after
    the run did (the trainer died and the pid was reused): DEAD, also in the CLI."""
    younger = spawn()
    started = psutil.Process(younger.pid).create_time() - 3600  # the run began an hour ago
    make_run(tmp_path / "runs", "exp", status=status_doc(pid=younger.pid, started_at=iso(started)))
    r = only_run(collector(tmp_path / "runs").refresh(time.time()))
    assert (r.state, r.pid_alive) == ("dead", False)
    assert (
        r.error
        == f"pid {younger.pid} now belongs to a newer process; status.json still says running"
    )

    proc = run_cli("snapshot", "--json", "--fake-gpus", "1", str(tmp_path / "runs"), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(proc.stdout)["runs"]
    assert (run["state"], run["status_state"], run["pid_alive"]) == ("dead", "running", False)


@pytest.mark.parametrize("reaped", [False, True], ids=["zombie", "reaped"])
def test_sigkilled_trainer_is_dead_within_two_refreshes(tmp_path, collector, spawn, reaped):
    """Fault: the trainer is SIGKILLed (OOM killer, kill -9): status.json keeps saying
    running, and the run reads DEAD within two refreshes."""
    trainer = spawn(cwd=tmp_path / "runs" / "exp")
    created = psutil.Process(trainer.pid).create_time()
    make_run(tmp_path / "runs", "exp", status=status_doc(pid=trainer.pid, started_at=iso(created)))
    c = collector(tmp_path / "runs")
    assert only_run(c.refresh(time.time())).state == "running"

    os.kill(trainer.pid, signal.SIGKILL)
    if reaped:  # by its parent, as a shell in tmux does
        trainer.wait()
    else:  # the kill has landed; the process stays a zombie (not reaped)
        os.waitid(os.P_PID, trainer.pid, os.WEXITED | os.WNOWAIT)
        assert psutil.Process(trainer.pid).status() == psutil.STATUS_ZOMBIE
    states = [only_run(c.refresh(time.time())) for _ in range(2)]
    assert states[-1].state == "dead", [r.state for r in states]
    assert states[-1].pid_alive is False
    assert states[-1].error.endswith("; status.json still says running")
    assert f"process {trainer.pid}" in states[-1].error


async def test_sigkilled_trainer_reads_dead_in_the_app(tmp_path, spawn) -> None:
    """Fault: the trainer SIGKILLed while the app watches it: the runs list says DEAD and the
    header says why."""
    trainer = spawn(cwd=tmp_path / "runs" / "exp")
    created = psutil.Process(trainer.pid).create_time()
    make_run(tmp_path / "runs", "exp", status=status_doc(pid=trainer.pid, started_at=iso(created)))
    app = RgpuApp(root=str(tmp_path / "runs"), interval=0.05, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert app.view.runs_list.get_option_at_index(0).prompt.plain.startswith("RUN")
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        await wait_for(
            pilot, lambda: app.view.runs_list.get_option_at_index(0).prompt.plain.startswith("DEAD")
        )
        await wait_for(pilot, lambda: "still says running" in rendered(app.view.run_header))
        assert f"process {trainer.pid} is gone" in rendered(app.view.run_header)


# -- pushing to the Hub -----------------------------------------------------------------


def hub_push(hub, run: Path, **kwargs):
    options = dict(
        endpoint=hub.url, token=WRITE_TOKEN, settle_s=0.02, timeout=10, retry_waits=(0.05, 0.1)
    )
    options.update(kwargs)
    return push(PushRequest(str(run), "best.pt"), HUB_SETTINGS, **options)


def records_parse(run: Path) -> list[dict]:
    """Every line of pushes.jsonl is one complete JSON object (no torn record)."""
    path = Path(pushes_path(str(run)))
    raw = path.read_bytes() if path.exists() else b""
    assert raw == b"" or raw.endswith(b"\n")
    records = [json.loads(line) for line in raw.splitlines()]
    assert records == read_pushes(str(run))
    return records


def staging_files(run: Path) -> list[str]:
    try:
        return sorted(os.listdir(staging_dir(str(run))))
    except FileNotFoundError:
        return []


class DiskFullAfter:
    """Replaces staging's write loop: the disk fills after `room` bytes of the copy."""

    def __init__(self, room: int, run: Path):
        self.room = room
        self.run = run
        self.written = 0
        self.seen_at_failure: list[str] = []
        self.real = staging._write_all

    def __call__(self, fd: int, data) -> None:
        if self.written + len(data) > self.room:
            fits = self.room - self.written
            self.real(fd, data[:fits])
            self.written += fits
            self.seen_at_failure = staging_files(self.run)
            raise OSError(errno.ENOSPC, "No space left on device")
        self.real(fd, data)
        self.written += len(data)


def test_disk_full_while_staging_a_push(hub, tmp_path, collector, monkeypatch) -> None:
    """Fault: the disk fills (ENOSPC) partway through copying the checkpoint to staging:
    a clear one-line error, nothing sent, no half-written staging file, a complete record;
    once space is freed the next push completes."""
    run = make_hub_run(tmp_path / "runs", size=3_000_000)
    full = DiskFullAfter(1_500_000, run)
    monkeypatch.setattr(staging, "_write_all", full)
    result = hub_push(hub, run)
    assert not result.ok
    assert result.error.startswith(f"no space left on the device holding {staging_dir(str(run))}")
    assert "to stage best.pt (3.0 MB needed): free some disk and push again" in result.error
    assert "\n" not in result.error
    assert [n for n in full.seen_at_failure if n.endswith(".part")]  # it failed mid-copy
    assert staging_files(run) == []
    assert hub.requests == []
    [record] = records_parse(run)
    assert (record["outcome"], record["error"]) == ("error", result.error)
    pushes = collector(run.parent).refresh(time.time(), str(run)).selected.pushes
    assert (pushes.last_outcome, pushes.last_error, pushes.last_ok_file) == (
        "error", result.error, None,
    )  # fmt: skip

    monkeypatch.setattr(staging, "_write_all", full.real)  # space freed
    again = hub_push(hub, run)
    assert again.ok and not again.skipped_unchanged, again.error
    assert (
        hub.file_bytes("alice/ckpts", "exp1/best.pt") == (run / "weights" / "best.pt").read_bytes()
    )
    assert staging_files(run) == []
    assert [r["outcome"] for r in records_parse(run)] == ["error", "ok"]


def test_disk_full_while_writing_the_push_record(hub, tmp_path, collector, monkeypatch):
    """Fault: the disk is still full when the failed push's record is appended (a short
    write): the records must stay readable and the next push's record must count."""
    run = make_hub_run(tmp_path / "runs", size=200_000)
    records = pushes_path(str(run))
    real_write = os.write
    disk_full: list = [True]

    def write(fd, data):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if disk_full[0] and target == records:
            if disk_full[0] == "no room":
                raise OSError(errno.ENOSPC, "No space left on device")
            disk_full[0] = "no room"  # as the kernel does: what fits, then ENOSPC
            return real_write(fd, bytes(data)[: len(data) // 2])
        return real_write(fd, data)

    monkeypatch.setattr(staging, "_write_all", DiskFullAfter(100_000, run))
    monkeypatch.setattr(os, "write", write)
    assert not hub_push(hub, run).ok
    disk_full[0] = False
    monkeypatch.setattr(staging, "_write_all", staging._write_all.real)
    assert hub_push(hub, run).ok
    assert [r["outcome"] for r in read_pushes(str(run))][-1:] == ["ok"]
    pushes = collector(run.parent).refresh(time.time(), str(run)).selected.pushes
    assert (pushes.last_outcome, pushes.last_ok_file) == ("ok", "best.pt")


@pytest.mark.parametrize("fault", ["stall", "500", "401"])
def test_hub_fault_fails_one_push_clearly_and_the_next_completes(
    hub, tmp_path, collector, fault
) -> None:
    """Fault: the Hub stalls (no answer to the upload), answers 500 to every commit, or
    answers 401 (token rejected): one clear line, the earlier good push still shown, the
    header says the last push failed, no staging left; the next push completes."""
    run = make_hub_run(tmp_path / "runs")
    assert hub_push(hub, run).ok
    best = run / "weights" / "best.pt"
    rewrite_in_place(best, checkpoint_bytes(150_000, seed=5))  # a new best to push
    token, timeout = WRITE_TOKEN, 10
    if fault == "stall":
        hub.stall_put_s, timeout = 60, 1
        expected = "the Hub did not answer within 1 s: try again later"
    elif fault == "500":
        hub.fail_commits(500, times=3)
        expected = "the Hub failed with 500 (3 tries): try again later"
    else:
        token = BAD_TOKEN
        expected = "token rejected (401): check HF_TOKEN or run `hf auth login`"
    result = hub_push(hub, run, token=token, timeout=timeout)
    assert not result.ok and result.error == expected
    assert len(hub.commits("alice/ckpts")) == 1
    assert staging_files(run) == []
    assert [r["outcome"] for r in records_parse(run)] == ["ok", "error"]
    c = collector(run.parent)
    now = time.time()
    pushes = c.refresh(now, str(run)).selected.pushes
    assert (pushes.last_outcome, pushes.last_error) == ("error", expected)
    assert (pushes.last_ok_file, pushes.last_ok_epoch, pushes.best_changed) == ("best.pt", 37, True)
    shown = push_text(pushes, now).plain
    assert "pushed best.pt ep37" in shown and "last push failed" in shown
    assert BAD_TOKEN not in json.dumps(records_parse(run))

    hub.stall_put_s = 0
    again = hub_push(hub, run)
    assert again.ok and not again.skipped_unchanged, again.error
    assert hub.file_bytes("alice/ckpts", "exp1/best.pt") == best.read_bytes()
    assert len(hub.commits("alice/ckpts")) == 2
    assert staging_files(run) == []
    pushes = c.refresh(time.time(), str(run)).selected.pushes
    assert (pushes.last_outcome, pushes.best_changed) == ("ok", False)


def test_push_process_killed_mid_upload(hub, tmp_path, collector) -> None:
    """Fault: `rgpu-tui push` SIGKILLed while the Hub holds its upload: the records stay
    readable (no torn line), nothing was committed, and the next push completes and leaves
    no staging file (the dead process's copy included)."""
    run = make_hub_run(tmp_path / "runs", size=2_000_000)
    hub.stall_put_s = 60
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
        "HF_ENDPOINT": hub.url,
        "HF_TOKEN": WRITE_TOKEN,
        "HF_HUB_DISABLE_XET": "1",
    }
    args = [str(run), "--repo", "alice/ckpts", "--settle", "0.05", "--timeout", "60"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rgpu_tui", "push", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not hub.puts:  # the checkpoint has reached the Hub, which holds the answer
            assert proc.poll() is None, "the push ended before it was killed"
            assert time.monotonic() < deadline, "the upload never started"
            time.sleep(0.02)
        left = staging_files(run)
        assert any(n.endswith(".staged") and f".{proc.pid}." in n for n in left), left
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    records_parse(run)  # whatever is there parses
    assert hub.commits("alice/ckpts") == []

    hub.stall_put_s = 0
    result = hub_push(hub, run)
    assert result.ok and not result.skipped_unchanged, result.error
    assert (
        hub.file_bytes("alice/ckpts", "exp1/best.pt") == (run / "weights" / "best.pt").read_bytes()
    )
    assert staging_files(run) == []
    assert records_parse(run)[-1]["outcome"] == "ok"
    pushes = collector(run.parent).refresh(time.time(), str(run)).selected.pushes
    assert (pushes.last_outcome, pushes.last_ok_file) == ("ok", "best.pt")


# -- configuration ----------------------------------------------------------------------

NOT_TOML = b"price_per_hour = 3.48\nthis is not toml\n"


@pytest.mark.parametrize(
    ("command", "where", "content", "line"),
    [
        ("snapshot", "--config", NOT_TOML, 2),
        ("cost", "--config", NOT_TOML, 2),
        ("app", "--config", NOT_TOML, 2),
        ("snapshot", "default", NOT_TOML, 2),
        ("cost", "default", NOT_TOML, 2),
        ("snapshot", "--config", b'{"price_per_hour": 3.48}\n', 1),  # JSON, not TOML
        ("cost", "default", b"idle_minutes = 5\n\x89PNG\r\n\x1a\n\xff\xfe", 2),  # binary
    ],
    ids=["snapshot", "cost", "app", "snapshot-default", "cost-default", "json", "binary"],
)
def test_config_file_that_is_not_toml(tmp_path, command, where, content, line) -> None:
    """Fault: the config file is not TOML (garbage, JSON, binary): one line naming the file
    and the line, exit status 2, nothing on stdout."""
    home = tmp_path / "home"
    if where == "default":
        path = home / ".config" / "rgpu-tui" / "config.toml"
        flags = []
    else:
        path = tmp_path / "my settings.toml"
        flags = ["--config", str(path)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    (tmp_path / "runs").mkdir()
    argv = [] if command == "app" else [command]
    proc = run_cli(*argv, *flags, str(tmp_path / "runs"), home=home, timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"rgpu-tui: {path} line {line}: "), lines[0]


# -- every file fault at once --------------------------------------------------------------


def test_every_file_fault_at_once_snapshot_exits_0(tmp_path) -> None:
    """Faults together in one runs root (half-written, empty, non-object and directory
    status.json, torn and over-long metrics lines): `rgpu-tui snapshot` prints every run
    with its problem and exits 0, as text and as JSON."""
    root = tmp_path / "runs"
    make_run(root, "half_status", epochs=0).joinpath("status.json").write_text('{"state": "runn')
    make_run(root, "empty_status", epochs=0).joinpath("status.json").write_text("")
    make_run(root, "list_status", epochs=0).joinpath("status.json").write_text("[1, 2]")
    (make_run(root, "dir_status", epochs=2) / "status.json").mkdir()
    torn = make_run(root, "torn_metrics", status=status_doc("completed", 2, 2), epochs=2)
    with open(torn / "metrics.jsonl", "a") as f:
        f.write('{"epoch": 3, "train/lo')
    long = make_run(root, "long_metrics", status=status_doc("completed", 2, 2), epochs=1)
    with open(long / "metrics.jsonl", "a") as f:
        f.write('{"x": "' + "z" * (2 * 1024 * 1024) + '"}\n' + json.dumps(metric_row(2)) + "\n")

    proc = run_cli("snapshot", "--json", "--fake-gpus", "1", str(root), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    runs = {r["name"]: r for r in json.loads(proc.stdout)["runs"]}
    assert {name: (r["state"], r["problem"]) for name, r in runs.items()} == {
        "half_status": ("unknown", HALF_WRITTEN),
        "empty_status": ("unknown", HALF_WRITTEN),
        "list_status": ("unknown", "status.json is not a JSON object"),
        "dir_status": ("unknown", "status.json unreadable: is a directory"),
        "torn_metrics": ("completed", None),
        "long_metrics": ("completed", None),
    }
    assert runs["dir_status"]["current_epoch"] == 2  # from metrics.jsonl
    text = run_cli("snapshot", "--fake-gpus", "1", str(root), home=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("(status.json") == 4
    one = run_cli("snapshot", "--json", "--fake-gpus", "1", str(long), home=tmp_path)
    assert json.loads(one.stdout)["selected"]["metrics"]["malformed_lines"] == 1


# -- a large runs root -----------------------------------------------------------------------


def test_200_runs_refresh_stays_cheap(tmp_path, collector, record_property) -> None:
    """Fault: a runs root holding 200 runs. After the first refresh, a refresh with nothing
    changed lists no directory, re-reads no status.json and reads no metrics byte; an append
    costs its own bytes. The time is printed and recorded, never asserted."""
    root = tmp_path / "runs"
    for i in range(200):
        make_run(
            root,
            f"run_{i:03d}",
            status=status_doc("completed", 5, 5),
            epochs=5,
            log=[f"run {i} line {n}" for n in range(20)],
        )
    age(root)  # written a while ago: directory listings can be trusted
    c = collector(root)
    t0 = time.perf_counter()
    snap = c.refresh(time.time())
    first = time.perf_counter() - t0
    assert len(snap.runs) == 200 and c.runs.finder.listed == 201

    watchers = [c.runs.watcher(r.run_dir) for r in snap.runs]

    def work() -> tuple:
        return (
            sum(w.metrics._file.bytes_read for w in watchers),
            sum(w.metrics.rows_parsed for w in watchers),
            sum(w.status.generation for w in watchers),
        )

    before = work()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        snap = c.refresh(time.time())
        times.append(time.perf_counter() - t0)
        assert c.runs.finder.listed == 0
        assert c.system.listed == 0
        assert work() == before
        assert len(snap.runs) == 200
    again = statistics.median(times)

    row = (json.dumps(metric_row(6)) + "\n").encode()
    with open(root / "run_123" / "metrics.jsonl", "ab") as f:
        f.write(row)
    c.refresh(time.time())
    assert c.runs.finder.listed == 0
    assert work()[0] == before[0] + len(row) and work()[1] == before[1] + 1

    print(
        f"\n200 runs: first refresh {first * 1000:.1f} ms, "
        f"refresh with nothing changed {again * 1000:.2f} ms (median of 5)"
    )
    record_property("refresh_200_runs_first_ms", round(first * 1000, 1))
    record_property("refresh_200_runs_unchanged_ms", round(again * 1000, 2))
