"""Fixtures for the fault-injection suite (tests/faults): collectors closed at teardown,
real child processes killed at teardown, the local Hub server, no user config."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e.test_hub_push import BAD_TOKEN, READ_TOKEN, WRITE_TOKEN
from support.hub_server import HubServer

from rgpu_tui.core.picture.collect import Collector


@pytest.fixture(autouse=True)
def no_user_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's config file and RGPU_* / HF_* variables never reach these tests."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    for name in ("RGPU_FAKE_GPUS", "RGPU_FAKE_GPU_LOSE", "RGPU_PRICE_PER_HOUR", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def collector() -> Iterator[Callable[..., Collector]]:
    """collector(root, **kwargs): a Collector with one simulated GPU unless told otherwise."""
    made: list[Collector] = []

    def make(root, **kwargs) -> Collector:
        kwargs.setdefault("fake_gpus", 1)
        c = Collector(str(root), **kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen]]:
    """spawn(): a real child process (a python that sleeps), killed and reaped at teardown;
    spawn(cwd=RUN): one working in the run directory RUN (created), as a trainer does
    (core.run.run_process)."""
    procs: list[subprocess.Popen] = []

    def start(seconds: float = 60.0, cwd: Path | None = None) -> subprocess.Popen:
        if cwd is not None:
            cwd.mkdir(parents=True, exist_ok=True)
        code = f"import time; time.sleep({seconds})"
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=cwd)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubServer]:
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice", orgs=("team",))
    server.add_token(READ_TOKEN, "alice", write=False)
    assert BAD_TOKEN not in server.tokens
    server.start()
    try:
        yield server
    finally:
        server.stop()
