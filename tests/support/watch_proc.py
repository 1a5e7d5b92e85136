"""`rgpu-tui watch ROOT --json` in a subprocess, its stdout read line by line on a thread
(tests/e2e: the watcher's events, autostop)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

from support.cli_env import RGPU_TUI


class Watch:
    def __init__(self, root: Path, env: dict, *extra: str, prefix: tuple = ()) -> None:
        """`prefix`: an argv that runs it (setpriv to another user)."""
        self.proc = subprocess.Popen(
            [*prefix, str(RGPU_TUI), "watch", str(root), "--json", "--interval", "0.2", *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.stderr = ""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line)

    def events(self, name: str | None = None) -> list[dict]:
        with self._lock:
            got = [json.loads(line) for line in self.lines]
        return [e for e in got if name is None or e["event"] == name]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` (when it still runs) and wait for its exit status; stderr is read."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(10)
            self.stderr = self.proc.stderr.read()
        return code

    def details(self) -> str:
        with self._lock:
            return "stdout:\n" + "".join(self.lines)
