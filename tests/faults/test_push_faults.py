"""Pushing to the Hub under faults (the local Hub server): the disk fills while staging or
while writing the record, the Hub stalls or answers 500 or 401, the push process is
killed mid-upload. One push fails clearly, no torn record or stray file stays, and the
next push completes.

Run: .venv/bin/pytest tests/faults -q
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e.test_hub_push import (
    BAD_TOKEN,
    WRITE_TOKEN,
    rewrite_in_place,
)
from e2e.test_hub_push import make_run as make_hub_run
from support.checkpoints import checkpoint_bytes

from faults.helpers import HUB_SETTINGS
from rgpu_tui.core.hub import staging
from rgpu_tui.core.hub.push import PushRequest, push, staging_dir
from rgpu_tui.core.records.push_records import pushes_path, read_pushes
from rgpu_tui.tui.widgets.run_header import push_text

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
