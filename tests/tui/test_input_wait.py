"""The input thread sleeps until there is input (src/tui/compat/input_wait.py: the driver
class the app passes to `App(driver_class=...)`): a real Textual app in a real
pseudo-terminal still gets its keys, a lone ESC after its delay, and quits; and its input
thread does not wake while nothing is typed."""

from __future__ import annotations

import os
import pty
import signal
import sys
import time
from pathlib import Path

import pytest
from support.waiting import wait_until

CHILD = """
import os, sys, threading
from textual.app import App
from textual.widgets import Static
from rgpu_tui.tui import compat

driver_class = None  # Textual's own
if sys.argv[2] == "patched":
    os.environ.pop("RGPU_FAST_PATHS", None)  # the runner's switch is not this test's
    status = compat.install()
    assert status.on(compat.INPUT), status.text()
    driver_class = compat.driver_class(status)
out = open(sys.argv[1], "a", buffering=1)


class KeyApp(App):
    def compose(self):
        yield Static("ready")

    def on_ready(self):
        tid = next(t.native_id for t in threading.enumerate() if t.name == "textual-input")
        out.write(f"tid {tid}\\n")

    def on_key(self, event):
        out.write(f"key {event.key}\\n")
        if event.key == "q":
            self.exit()


KeyApp(driver_class=driver_class).run()
out.write("exited\\n")
"""


def _wakes(tid: int) -> int:
    """Times the thread was scheduled onto a CPU (/proc schedstat's third field)."""
    return int(Path(f"/proc/{tid}/schedstat").read_text().split()[2])


class Child:
    def __init__(self, tmp_path: Path, mode: str) -> None:
        script = tmp_path / "keyapp.py"
        script.write_text(CHILD)
        self.out = tmp_path / f"{mode}.txt"
        self.out.touch()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: never returns into pytest
            try:
                os.environ["TERM"] = "xterm-256color"
                os.execv(sys.executable, [sys.executable, str(script), str(self.out), mode])
            finally:
                os._exit(127)

    def lines(self) -> list[str]:
        try:  # keep the pty drained so the app never blocks writing
            while os.read(self.fd, 65536):
                pass
        except (BlockingIOError, OSError):
            pass
        return self.out.read_text().splitlines()

    def tid(self) -> int:
        wait_until(lambda: any(x.startswith("tid ") for x in self.lines()), "the app ready")
        return int(next(x for x in self.lines() if x.startswith("tid ")).split()[1])

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.fd)


@pytest.fixture
def child(tmp_path):
    made: list[Child] = []

    def start(mode: str) -> Child:
        c = Child(tmp_path, mode)
        os.set_blocking(c.fd, False)
        made.append(c)
        return c

    yield start
    for c in made:
        c.close()


pytestmark = pytest.mark.skipif(
    not Path("/proc/self/schedstat").exists(), reason="needs /proc schedstat"
)


def _idle_wakes(c: Child, seconds: float = 1.5) -> int:
    tid = c.tid()
    before = _wakes(tid)
    time.sleep(seconds)  # a window to count wake-ups in, not a wait for something to happen
    c.lines()
    return _wakes(tid) - before


def test_keys_a_lone_escape_and_quit_still_work(child) -> None:
    c = child("patched")
    c.tid()
    os.write(c.fd, b"a")
    wait_until(lambda: "key a" in c.lines(), "the key a", details=c.lines)
    os.write(c.fd, b"\x1b")  # a lone ESC is a key only after ESCDELAY with nothing after it
    wait_until(lambda: "key escape" in c.lines(), "the lone escape key", details=c.lines)
    os.write(c.fd, "é".encode())  # two bytes, one key
    wait_until(lambda: "key é" in c.lines(), "a non-ASCII key", details=c.lines)
    os.write(c.fd, b"q")
    wait_until(lambda: "exited" in c.lines(), "the app to exit on q", details=c.lines)
    _pid, status = os.waitpid(c.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_input_thread_sleeps_while_nothing_is_typed(child) -> None:
    patched = _idle_wakes(child("patched"))
    textual_own = _idle_wakes(child("textual"))
    assert patched <= 2, patched
    # the measurement itself works: Textual's own thread wakes every 0.1 s
    assert textual_own >= 5, textual_own
