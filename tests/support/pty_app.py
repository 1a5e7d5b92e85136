"""An app in a real pseudo-terminal, every byte it writes kept: for tests that look at the
raw output a terminal would get."""

from __future__ import annotations

import os
import pty
import signal
import struct
import threading
import time


class PtyApp:
    """A program (`rgpu-tui ROOT`, ...) in a pty of cols x rows, stdout and stderr a
    terminal; every byte it writes is kept."""

    def __init__(self, argv: list[str], env: dict[str, str], cols: int, rows: int) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: never returns into pytest
            try:
                import fcntl
                import termios

                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self._lock = threading.Lock()
        self._out = bytearray()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO: the child closed its side
                return
            if not data:
                return
            with self._lock:
                self._out += data

    def output(self) -> bytes:
        with self._lock:
            return bytes(self._out)

    def quit(self, timeout: float = 15.0) -> int:
        os.write(self.fd, b"q")
        return self.wait_exit(timeout, "the app did not quit on q")

    def wait_exit(self, timeout: float = 15.0, why: str = "the program did not exit") -> int:
        """Its exit code once it ended (all it wrote read); AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self._reader.join(5)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        raise AssertionError(f"{why} within {timeout:g} s")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
