"""`rgpu-tui exporter ROOT --listen 127.0.0.1:0 ...` in a subprocess: its address read from
what it says on stderr (tests/unit/cli/test_exporter.py, tests/e2e/test_exporter_prometheus.py)."""

from __future__ import annotations

import re
import resource
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from .cli_env import RGPU_TUI
from .waiting import wait_until


class Exporter:
    """`rgpu-tui exporter ROOT --listen 127.0.0.1:0 ...`; `url` once it said where."""

    def __init__(self, root: Path, env: dict, *extra: str, nofile: int | None = None) -> None:
        """`nofile`: the exporter's RLIMIT_NOFILE (soft and hard), as `ulimit -n` would."""

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(
            [str(RGPU_TUI), "exporter", str(root), "--listen", "127.0.0.1:0", *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limit if nofile is not None else None,
        )
        self.err: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = wait_until(self._url, "the exporter's address", timeout=60, details=self.details)

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)

    def _url(self) -> str | None:
        for line in list(self.err):
            m = re.search(r"serving (http://\S+)/metrics", line)
            if m:
                return m.group(1)
        if self.proc.poll() is not None:
            pytest.fail(f"the exporter exited {self.proc.returncode}: {self.details()}")
        return None

    def details(self) -> str:
        return "stderr:\n" + "".join(self.err)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(10)
