"""status.StatusReader, check_pid, stall_limit and derive_state."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from rgpu_tui.core.run import status as status_mod
from rgpu_tui.core.run.status import (
    MAX_STATUS_BYTES,
    PID_REUSE_SLACK_S,
    PidCheck,
    PidWatch,
    StatusReader,
    check_pid,
    derive_state,
    parse_time,
    stall_limit,
)

GOOD = {"state": "running", "pid": 123, "completed_epochs": 2, "total_epochs": 10}


def replace_json(path: Path, value) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


@pytest.fixture
def open_counter(monkeypatch):
    """Counts opens of status.json files (os.open: the reader opens through
    core.base.safeio.open_regular) and can deny them."""
    real_open = os.open
    counter = {"n": 0, "deny": False}

    def counting_open(file, *args, **kwargs):
        if os.fspath(file).endswith("status.json"):
            counter["n"] += 1
            if counter["deny"]:
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    return counter


# -- StatusReader -----------------------------------------------------------------


def test_missing_status_json(tmp_path: Path) -> None:
    reader = StatusReader(str(tmp_path / "status.json"))
    assert reader.poll() is True
    assert reader.data is None
    assert reader.problem == "no status.json"
    assert reader.poll() is False


def test_good_status_then_atomic_replace(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    assert reader.poll() is True
    assert reader.data == GOOD and reader.problem is None
    assert reader.mtime == path.stat().st_mtime

    newer = dict(GOOD, completed_epochs=3)
    replace_json(path, newer)
    assert reader.poll() is True
    assert reader.data == newer


def test_unchanged_file_is_not_read_again(tmp_path: Path, open_counter) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    reader.poll()
    assert open_counter["n"] == 1
    gen = reader.generation
    for _ in range(5):
        assert reader.poll() is False
    assert open_counter["n"] == 1
    assert reader.generation == gen

    replace_json(path, dict(GOOD, completed_epochs=5))
    assert reader.poll() is True
    assert open_counter["n"] == 2
    assert reader.data["completed_epochs"] == 5


def test_half_written_keeps_last_good_value(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    reader.poll()

    path.write_text('{"state": "completed", "pid": 1')  # a torn, non-atomic write
    assert reader.poll() is True
    assert reader.data == GOOD
    assert reader.problem == "status.json is half-written or not JSON"

    done = dict(GOOD, state="completed")
    path.write_text(json.dumps(done))  # the writer finishes
    assert reader.poll() is True
    assert reader.data == done and reader.problem is None


def test_half_written_before_any_good_value(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text('{"sta')
    reader = StatusReader(str(path))
    reader.poll()
    assert reader.data is None
    assert reader.problem == "status.json is half-written or not JSON"


@pytest.mark.parametrize("value", [[1, 2], "running", 3, None])
def test_not_an_object_keeps_last_good_value(tmp_path: Path, value) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    reader.poll()
    replace_json(path, value)
    assert reader.poll() is True
    assert reader.data == GOOD
    assert reader.problem == "status.json is not a JSON object"


def test_unreadable_keeps_last_good_value(tmp_path: Path, open_counter) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    reader.poll()

    replace_json(path, dict(GOOD, completed_epochs=9))  # libreyolo writes it 0600
    open_counter["deny"] = True
    assert reader.poll() is True
    assert reader.data == GOOD
    assert reader.problem == "status.json unreadable: permission denied"

    open_counter["deny"] = False  # readable again: picked up without a further change
    assert reader.poll() is True
    assert reader.data["completed_epochs"] == 9 and reader.problem is None


def test_directory_in_place_of_status_json(tmp_path: Path) -> None:
    (tmp_path / "status.json").mkdir()
    reader = StatusReader(str(tmp_path / "status.json"))
    reader.poll()
    assert reader.data is None
    assert reader.problem == "status.json unreadable: is a directory"


def test_too_large_status_json(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    reader.poll()
    path.write_bytes(b" " * (MAX_STATUS_BYTES + 1))
    assert reader.poll() is True
    assert reader.data == GOOD
    assert reader.problem is not None and "too large" in reader.problem


def test_deleted_status_json_keeps_last_value_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    replace_json(path, GOOD)
    reader = StatusReader(str(path))
    reader.poll()
    path.unlink()
    assert reader.poll() is True
    assert reader.data == GOOD
    assert reader.problem == "no status.json"


def test_parse_time() -> None:
    assert parse_time("2026-12-02T15:19:29+00:00") == 1796224769.0
    assert parse_time("2026-12-02T15:19:29Z") == 1796224769.0
    assert parse_time("yesterday") is None
    assert parse_time("") is None
    assert parse_time(1796224769) is None


# -- check_pid -----------------------------------------------------------------------


@pytest.mark.parametrize("pid", [None, 0, -4, True, "123", 1.5])
def test_check_pid_without_a_usable_pid(pid) -> None:
    result = check_pid(pid, None)
    assert result == PidCheck(False, "no pid in status.json")


def test_check_pid_process_gone(dead_pid: int) -> None:
    result = check_pid(dead_pid, None)
    assert result.alive is False
    assert result.reason == f"process {dead_pid} is gone"


def test_check_pid_live_process(live_process: psutil.Process) -> None:
    created = live_process.create_time()
    assert check_pid(live_process.pid, None).alive is True
    assert check_pid(live_process.pid, created).alive is True
    assert check_pid(live_process.pid, float(int(created))).alive is True  # 1 s precision


def test_check_pid_reused_by_a_younger_process(live_process: psutil.Process) -> None:
    created = live_process.create_time()
    old_start = created - 3600  # the trainer started an hour before this process existed
    result = check_pid(live_process.pid, old_start)
    assert result.alive is False
    assert result.reason == f"pid {live_process.pid} now belongs to a newer process"
    # both sides of the slack
    assert check_pid(live_process.pid, created - PID_REUSE_SLACK_S + 0.5).alive is True
    assert check_pid(live_process.pid, created - PID_REUSE_SLACK_S - 0.5).alive is False


def test_check_pid_zombie(zombie_process: psutil.Process) -> None:
    result = check_pid(zombie_process.pid, zombie_process.create_time())
    assert result.alive is False
    assert "zombie" in (result.reason or "")


def test_check_pid_access_denied_counts_as_alive(monkeypatch) -> None:
    from rgpu_tui.core.run import run_process as run_process_mod

    class Denied:
        def __init__(self, pid):
            raise psutil.AccessDenied(pid)

    monkeypatch.setattr(run_process_mod.psutil, "Process", Denied)
    assert check_pid(4242, None).alive is True


# -- PidWatch: check_pid, refresh after refresh --------------------------------------


@pytest.fixture
def full_checks(monkeypatch) -> list:
    """Counts the full (psutil) checks PidWatch makes."""
    calls: list = []
    real = status_mod.check_pid

    def counting(pid, started_at, run_dir=None):
        calls.append(pid)
        return real(pid, started_at, run_dir)

    monkeypatch.setattr(status_mod, "check_pid", counting)
    return calls


needs_pidfd = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd here")


@needs_pidfd
@pytest.mark.parametrize("reap", [False, True], ids=["zombie", "reaped"])
def test_pid_watch_sees_the_trainer_die_without_reading_proc(full_checks, reap) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    watch = PidWatch()
    try:
        started = psutil.Process(proc.pid).create_time()
        assert watch.check(proc.pid, started).alive is True
        for _ in range(3):
            assert watch.check(proc.pid, started).alive is True
        assert len(full_checks) == 1  # later checks are one poll() of the pidfd
        proc.kill()
        if reap:
            proc.wait()
        else:
            ps = psutil.Process(proc.pid)
            wait_until(lambda: ps.status() == psutil.STATUS_ZOMBIE, "the zombie")
        result = watch.check(proc.pid, started)
        assert result.alive is False  # the next check after the kill
        assert ("zombie" if not reap else "is gone") in result.reason
        assert len(full_checks) == 2  # the full check says why
    finally:
        proc.kill()
        proc.wait()
        watch.close()


@needs_pidfd
def test_pid_watch_checks_again_when_status_json_names_another_process(
    full_checks, live_process: psutil.Process
) -> None:
    watch = PidWatch()
    created = live_process.create_time()
    assert watch.check(live_process.pid, created).alive is True
    # a newer run wrote status.json with an older start for the same pid: a reused pid
    result = watch.check(live_process.pid, created - 3600)
    assert result.alive is False and "newer process" in result.reason
    assert watch.check(None, None) == PidCheck(False, "no pid in status.json")
    assert len(full_checks) == 3
    watch.close()
    watch.close()  # twice is harmless


def test_pid_watch_without_pidfds_checks_fully_every_time(
    full_checks, live_process: psutil.Process, monkeypatch
) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    watch = PidWatch()
    for _ in range(3):
        assert watch.check(live_process.pid, None).alive is True
    assert len(full_checks) == 3


# -- stall_limit / derive_state ---------------------------------------------------


def test_stall_limit() -> None:
    # a quiet 599 s against 601 s, on the clock derive_state takes as `now`: see
    # test_derive_state_stall_limit_both_sides below and test_watch.test_stalled_with_a_frozen_clock
    assert stall_limit(None) == 600.0  # no epoch time known yet: ten minutes
    assert stall_limit(0) == 600.0
    assert stall_limit(-10) == 600.0
    assert stall_limit(100) == 600.0  # 3 x 100 < 600
    assert stall_limit(300) == 900.0
    assert stall_limit(1000) == 3000.0


ALIVE = PidCheck(True)
DEAD = PidCheck(False, "process 1 is gone")


@pytest.mark.parametrize("state", ["completed", "failed"])
def test_derive_state_final_states_win(state: str) -> None:
    assert derive_state(state, DEAD, 0.0, None, now=1e9) == state
    assert derive_state(state, None, None, None, now=0.0) == state


@pytest.mark.parametrize("state", [None, "", "paused", "RUNNING"])
def test_derive_state_unknown(state) -> None:
    assert derive_state(state, ALIVE, 1000.0, None, now=1000.0) == "unknown"


def test_derive_state_dead_when_pid_not_alive() -> None:
    assert derive_state("running", DEAD, 1000.0, None, now=1000.0) == "dead"


def test_derive_state_stall_limit_both_sides() -> None:
    mtime = 1_000_000.0
    assert derive_state("running", ALIVE, mtime, None, now=mtime + 599) == "running"
    assert derive_state("running", ALIVE, mtime, None, now=mtime + 600) == "running"
    assert derive_state("running", ALIVE, mtime, None, now=mtime + 601) == "stalled"
    # 3 x 400 s epochs: a quiet 1000 s is normal, 1201 s is not
    assert derive_state("running", ALIVE, mtime, 400.0, now=mtime + 1000) == "running"
    assert derive_state("running", ALIVE, mtime, 400.0, now=mtime + 1199) == "running"
    assert derive_state("running", ALIVE, mtime, 400.0, now=mtime + 1201) == "stalled"
    assert derive_state("running", ALIVE, None, None, now=mtime + 10**6) == "running"
