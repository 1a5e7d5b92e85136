"""FIFOs where a run file should be, for tests that must fail, not hang, when a reader
blocks on one.

A plain open() of a FIFO waits for a writer forever. `returns_within` runs the code
under test on a daemon thread and fails the test when it has not returned in time;
`FifoReleaser` then plays the missing writer (opens each FIFO for writing and closes it
again, over and over) so that a reader stuck in open() or read() gets end-of-file and
the test, the app under Pilot or the thread can finish.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def make_fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def release_once(fifos: Iterable[Path]) -> int:
    """Open and close each FIFO for writing where a reader waits; how many had one."""
    released = 0
    for fifo in fifos:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENOENT):  # nobody reading: nothing stuck
                continue
            raise
        os.close(fd)
        released += 1
    return released


class FifoReleaser:
    """While active, keeps releasing readers stuck on `fifos` (a teardown aid: a reader
    that blocks on one FIFO after another is freed from each in turn)."""

    def __init__(self, fifos: Iterable[Path]):
        self.fifos = list(fifos)
        self.released = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.released += release_once(self.fifos)

    def start(self) -> None:
        if not self._thread.is_alive():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self) -> FifoReleaser:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def returns_within(
    fn: Callable[[], Any], fifos: Iterable[Path], timeout: float = 10.0, what: str = "it"
) -> Any:
    """fn()'s result; the test fails (instead of hanging) when fn blocks for `timeout`
    seconds, and the blocked fn is then released through the FIFOs."""
    fifos = list(fifos)
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed to the test below
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        with FifoReleaser(fifos):
            thread.join(timeout)
        pytest.fail(f"{what} blocked on a FIFO for {timeout:g} s")
    if "error" in result:
        raise result["error"]
    return result.get("value")
