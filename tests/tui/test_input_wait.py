"""The input thread sleeps until there is input (src/tui/compat/input_wait.py: the driver
class the app passes to `App(driver_class=...)`): a real Textual app in a real
pseudo-terminal still gets its keys, a lone ESC after its delay, and quits; and while
nothing is typed its input thread waits in select() with no timeout (read from
/proc/TID/syscall: the state it sleeps in, not a count of wake-ups in a window)."""

from __future__ import annotations

import os
import platform
import pty
import signal
import sys
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


# the select syscalls (select, pselect6) by machine; their fifth argument is the timeout
SELECTS = {"x86_64": {23, 270}, "aarch64": {72}}.get(platform.machine(), set())


def select_timeout(tid: int) -> str | None:
    """How thread `tid` is blocked now: "none" (in select with no timeout: until there is
    input), "timed" (in select with a timeout), or None (running, or in another call)."""
    try:
        fields = Path(f"/proc/{tid}/syscall").read_text().split()
    except OSError:
        return None
    if len(fields) < 6 or not fields[0].isdigit() or int(fields[0]) not in SELECTS:
        return None
    return "none" if int(fields[5], 16) == 0 else "timed"


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
    not SELECTS or not Path("/proc/self/syscall").exists(),
    reason="needs /proc/TID/syscall on x86_64 or aarch64",
)


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
    patched = child("patched")
    tid = patched.tid()
    # a thread that woke on a timer would never be seen waiting without one
    wait_until(lambda: select_timeout(tid) == "none", "the input thread asleep until input")
    os.write(patched.fd, b"a")  # and it still wakes for a key
    wait_until(lambda: "key a" in patched.lines(), "the key a", details=patched.lines)
    wait_until(lambda: select_timeout(tid) == "none", "the input thread asleep again")
    # the reading itself tells them apart: Textual's own thread waits 0.1 s at a time
    own = child("textual")
    own_tid = own.tid()
    wait_until(lambda: select_timeout(own_tid) == "timed", "Textual's own 0.1 s select")
