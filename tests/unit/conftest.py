"""Fixtures for the core unit tests (tests/unit)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from support.run_dir import write_status as support_write_status

from .helpers import SAMPLE_RUN


@pytest.fixture
def sample_run(tmp_path: Path) -> Path:
    """A writable copy of the real libreyolo run directory."""
    if not SAMPLE_RUN.is_dir():
        pytest.skip(f"sample run not found at {SAMPLE_RUN}")
    dst = tmp_path / "runs" / "run1"
    shutil.copytree(SAMPLE_RUN, dst)
    for dirpath, _dirnames, filenames in os.walk(dst):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return dst


@pytest.fixture
def write_status() -> Callable[..., Path]:
    """write_status(run_dir, mtime=None, **fields): atomically (re)write status.json."""

    def _write(run_dir: Path, mtime: float | None = None, **fields) -> Path:
        return support_write_status(run_dir, fields, mtime) / "status.json"

    return _write


@pytest.fixture
def write_metrics() -> Callable[..., Path]:
    """write_metrics(run_dir, rows, append=True): one JSON object per line."""

    def _write(run_dir: Path, rows: list[dict], append: bool = True) -> Path:
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "metrics.jsonl"
        with open(path, "a" if append else "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        return path

    return _write


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen]]:
    """Children started by a test: on teardown each is SIGKILLed with its process group
    (when it leads one, as a launched trainer does) and reaped."""
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, ChildProcessError):
            pass


@pytest.fixture
def live_dir(tmp_path: Path) -> Path:
    """The run directory `live_process` works in (a test module may override it)."""
    return tmp_path / "r"


@pytest.fixture
def live_process(live_dir: Path) -> Iterator[psutil.Process]:
    """A live child process (`sleep 30`) working in `live_dir` (its cwd, as a trainer
    works in its run: core.run.run_process), killed on teardown."""
    live_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(["sleep", "30"], cwd=live_dir)
    try:
        yield psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen(["sleep", "0"])
    proc.wait()
    return proc.pid


@pytest.fixture
def zombie_process() -> Iterator[psutil.Process]:
    """A child that has exited but was not reaped yet (a zombie)."""
    proc = subprocess.Popen(["sleep", "0"])
    ps = psutil.Process(proc.pid)
    deadline = time.monotonic() + 5
    while ps.status() != psutil.STATUS_ZOMBIE:
        if time.monotonic() > deadline:  # pragma: no cover
            proc.kill()
            proc.wait()
            pytest.fail("child never became a zombie")
        time.sleep(0.005)
    try:
        yield ps
    finally:
        proc.wait()


@pytest.fixture
def me() -> psutil.Process:
    """This test process: alive, and created before anything the test writes."""
    return psutil.Process(os.getpid())
