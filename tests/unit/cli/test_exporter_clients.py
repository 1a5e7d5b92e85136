"""`rgpu-tui exporter` against clients that send nothing, drip their headers or are too
many: the real command in a subprocess, real sockets. A dropped
client costs at most one short line of log, rate-limited, never a traceback; a scrape is
answered while slow clients hold or retake every connection they can, under a low
RLIMIT_NOFILE too. The deadlines below only bound how long a failing test waits."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import urllib.request
from pathlib import Path

from support.cli_env import clean_env
from support.exporter_proc import Exporter
from support.waiting import wait_until

from rgpu_tui.core.render.http_serve import DEADLINE_S, DropLog

from ..helpers import SAMPLE_RUN


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _scrape(url: str) -> bytes:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:  # Prometheus: 10 s
        assert resp.status == 200
        return resp.read()


def _log_after_start(exporter: Exporter) -> list[str]:
    lines = list(exporter.err)
    start = next(i for i, line in enumerate(lines) if "serving http://" in line)
    return lines[start + 1 :]


def _open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_silent_clients_are_dropped_with_one_short_line(tmp_path: Path) -> None:
    # 20 connections that send nothing, and two malformed requests: before, each silent
    # one cost a Python traceback (~20 lines) when its read timed out
    shutil.copytree(SAMPLE_RUN, tmp_path / "runs" / "done")
    exporter = Exporter(tmp_path / "runs", clean_env(tmp_path), "--fake-gpus", "1")
    silent = []
    try:
        silent = [socket.create_connection(_address(exporter.url)) for _ in range(20)]
        assert b"rgpu_run_info" in _scrape(exporter.url)  # answered while they wait
        for garbage in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 5000):
            with socket.create_connection(_address(exporter.url), timeout=10) as bad:
                bad.sendall(garbage)
                assert bad.recv(100).startswith(b"HTTP/1.1 400 "), garbage[:20]
        wait_until(
            lambda: all(_closed_by_server(s) for s in silent),
            "the exporter closes the silent connections",
            timeout=DEADLINE_S + 30,
            details=exporter.details,
        )
        assert b"rgpu_run_info" in _scrape(exporter.url)
    finally:
        for s in silent:
            s.close()
        code = exporter.stop()
    assert code == 0, exporter.details()
    log = _log_after_start(exporter)
    assert "Traceback" not in exporter.details()
    assert 1 <= len(log) <= 2, exporter.details()  # the first drop, maybe one summary
    assert all(len(line) < 200 for line in log), log
    assert "a client dropped: sent a malformed request" in log[0]


class _Slowloris:
    """`n` clients, each on a thread of its own: connect, send a request line, then one
    header line every `every` seconds, never the blank line that ends the headers, until
    the server closes the connection (`dropped` counts those)."""

    def __init__(self, address: tuple[str, int], n: int, every: float) -> None:
        self.address = address
        self.every = every
        self.connected = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._client, daemon=True) for _ in range(n)]

    def _client(self) -> None:
        try:
            sock = socket.create_connection(self.address, timeout=60)
        except OSError:
            return
        with self.lock:
            self.connected += 1
        with sock:
            try:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                while not self.stop.wait(self.every):
                    sock.sendall(b"X-Drip: 1\r\n")
            except OSError:
                with self.lock:
                    self.dropped += 1

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)


def test_a_scrape_is_answered_through_a_slowloris_at_a_low_descriptor_limit(
    tmp_path: Path,
) -> None:
    # 300 dripping clients against an exporter that may open 256 files: before, every
    # connection held a thread and a descriptor until its client went, and the scrape got
    # no answer; now the connections are capped and the slowest make room for a scrape
    shutil.copytree(SAMPLE_RUN, tmp_path / "runs" / "done")
    env = clean_env(tmp_path)
    exporter = Exporter(tmp_path / "runs", env, "--fake-gpus", "1", nofile=256)
    loris = _Slowloris(_address(exporter.url), 300, every=1.0)
    try:
        loris.start()
        # until the exporter holds as many connections as it can, or has dropped as many
        wait_until(
            lambda: _open_files(exporter.proc.pid) >= 250 or loris.dropped >= 250,
            "the slowloris fills the exporter's descriptors or is dropped",
            timeout=120,
            details=exporter.details,
        )
        for _ in range(3):
            assert b"rgpu_run_info" in _scrape(exporter.url)  # within its deadline
        # no drip resets the deadline: every connection the slowloris holds is closed
        wait_until(
            lambda: loris.dropped == loris.connected == 300,
            "the exporter drops the dripping connections",
            timeout=DEADLINE_S + 60,
            details=exporter.details,
        )
        assert b"rgpu_run_info" in _scrape(exporter.url)
    finally:
        loris.close()
        code = exporter.stop()
    assert code == 0, exporter.details()
    log = _log_after_start(exporter)
    assert "Traceback" not in exporter.details()
    assert 1 <= len(log) <= 3, exporter.details()
    assert all(len(line) < 200 for line in log), log


def test_drops_are_told_once_then_counted_at_most_once_a_quiet_period() -> None:
    lines: list[str] = []
    words = {"deadline": "sent no whole request within 5 s", "room": "made room"}
    drops = DropLog(lines.append, 60.0, words)
    for i in range(1000):
        drops.note("deadline" if i % 2 else "room", now=100.0 + i * 0.01)
    assert lines == [
        "a client dropped: made room (dropped clients are told at most once every 60 s)"
    ]
    drops.flush(now=150.0)  # still within the quiet period
    assert len(lines) == 1
    drops.flush(now=160.0)
    assert lines[1] == (
        "999 more clients dropped: 500 sent no whole request within 5 s, 499 made room"
    )
    drops.flush(now=500.0)  # nothing new: nothing said
    assert len(lines) == 2 and drops.total == 1000
