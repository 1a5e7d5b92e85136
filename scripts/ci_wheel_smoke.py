#!/usr/bin/env python3
"""CI smoke test of an installed rgpu-tui: start the app in a pseudo-terminal, wait for its
first frame, press q, require exit status 0.

    python scripts/ci_wheel_smoke.py RGPU_TUI ROOT [--expect TEXT]... [--timeout S]

RGPU_TUI is the console script of the install under test (e.g. a wheel's venv/bin/rgpu-tui),
ROOT the runs root to open (an empty directory). The app runs in an 80x24 pty with
TERM=xterm-256color, no simulated GPUs (RGPU_* variables are removed from its environment) and
its own session with the pty as controlling terminal. The first frame is drawn when every
--expect TEXT is on the screen (the pty output with escape sequences removed). On any failure
it prints what the app wrote and exits 1. Standard library only.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

ROWS, COLS = 24, 80
# CSI, OSC and DCS/APC/PM strings, then any other two-character escape
_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    rb"|\x1b[P_^][^\x1b]*\x1b\\"
    rb"|\x1b[@-Z\\-_]"
)


def screen_text(raw: bytes) -> str:
    """What the app wrote, without escape sequences (the text of what it drew)."""
    return _ESCAPES.sub(b"", raw).decode("utf-8", "replace")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RGPU_", "TEXTUAL"))}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    env["TERM"] = "xterm-256color"
    return env


def _take_terminal() -> None:
    """In the child, after setsid: the pty (its stdin) becomes the controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Pty:
    """The app under a pty; `read_until` drains its output (it never blocks on a full pty)."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=cwd,
                env=_env(),
                start_new_session=True,
                preexec_fn=_take_terminal,
            )
        finally:
            os.close(slave)
        self.raw = bytearray()
        self.eof = False

    def read_until(self, done, timeout: float) -> bool:
        """Read output until done() is true, the pty closes, or timeout seconds pass."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                return done()
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every slave end is closed (the app exited)
                chunk = b""
            if not chunk:
                self.eof = True
            self.raw += chunk
        return True

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        os.close(self.master)


def _report(pty: Pty, problem: str) -> int:
    text = screen_text(bytes(pty.raw))
    print(f"ci_wheel_smoke: {problem}", file=sys.stderr)
    print(f"--- what the app drew ({len(pty.raw)} bytes, escapes removed) ---", file=sys.stderr)
    print(text[-6000:], file=sys.stderr)
    print("--- its last 1500 raw bytes ---", file=sys.stderr)
    print(repr(bytes(pty.raw[-1500:])), file=sys.stderr)
    return 1


def smoke(exe: str, root: str, expect: list[str], timeout: float) -> int:
    pty = Pty([exe, root], cwd=root)
    try:

        def drawn() -> bool:
            text = screen_text(bytes(pty.raw))
            return all(e in text for e in expect)

        if not pty.read_until(drawn, timeout):
            missing = [e for e in expect if e not in screen_text(bytes(pty.raw))]
            if pty.eof:  # its terminal closed: it exited (or is exiting)
                try:
                    problem = f"exited with status {pty.proc.wait(5)} before its first frame"
                except subprocess.TimeoutExpired:
                    problem = "closed its terminal before its first frame"
            else:
                problem = f"no first frame after {timeout:.0f} s: {missing} not drawn"
            pty.kill()
            return _report(pty, problem)
        pty.send(b"q")
        start = time.monotonic()
        pty.read_until(lambda: False, timeout)  # what it writes while closing, up to EOF
        try:
            pty.proc.wait(max(1.0, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            pty.kill()
            return _report(pty, f"still running {timeout:.0f} s after q")
        if pty.proc.returncode != 0:
            return _report(pty, f"exit status {pty.proc.returncode} after q (want 0)")
    finally:
        if pty.proc.poll() is None:
            pty.kill()
        pty.close()
    print(f"ci_wheel_smoke: first frame drawn ({', '.join(map(repr, expect))}), q exited 0")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("exe", metavar="RGPU_TUI", help="the rgpu-tui console script to start")
    p.add_argument("root", metavar="ROOT", help="runs root to open (an empty directory)")
    p.add_argument(
        "--expect",
        action="append",
        required=True,
        metavar="TEXT",
        help="text of the first frame (repeatable; every one must be drawn)",
    )
    p.add_argument("--timeout", type=float, default=60.0, metavar="S", help="default 60")
    args = p.parse_args(argv)
    return smoke(args.exe, args.root, args.expect, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
