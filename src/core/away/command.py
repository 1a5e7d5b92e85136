"""Running one user-configured command (notify_command, autostop_command): argv, no shell.

`CommandRunner.run(argv)` runs it and waits, in the caller's thread (callers are worker
threads), and returns a CommandResult; `kill()` from another thread ends the one in flight.

- No shell: argv is a list; stdin is /dev/null; stdout and stderr go to one pipe, read as
  they come into a bounded tail (the last TAIL_BYTES kept, for the line that says why it
  failed; a runner made with a larger `keep` keeps that much, for price_command's JSON), and
  how many bytes it wrote in all is counted: a command printing gigabytes costs no memory.
- Done when the command exits: what is already in the pipe is taken (for at most
  EXIT_DRAIN_S), then the pipe is closed. A background child it left holding the pipe
  (`server &`) is not waited for and not killed.
- A timeout: the command runs in a session of its own and its whole process group is
  killed when it is over time (its children too), as it is by `kill()`.
- HF_TOKEN and HUGGING_FACE_HUB_TOKEN are not passed to it; the token given to `tail()`
  is removed from what is reported.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .events import clean

SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
TAIL_BYTES = 2000
CHUNK = 64 * 1024
READ_ROUNDS = 16  # chunks read at one wake-up (then the exit and the clock are looked at)
POLL_S = 0.05  # how often its exit is looked for while it writes nothing
EXIT_DRAIN_S = 0.2  # after it exits: what is still in the pipe is read this long at most
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None: it could not start, or was killed at the timeout
    problem: str | None  # None when it exited 0; else "exit status 3", "timed out ...", ...
    output: bytes = b""  # the last TAIL_BYTES it wrote (stdout and stderr together)
    written: int = 0  # how many bytes it wrote in all (more than `output` when it was cut)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def tail(self, token: str | None = None) -> str:
        """The last line it wrote, cleaned (printable, token-free); '' for none."""
        text = self.output[-TAIL_BYTES:].decode("utf-8", "replace")
        lines = [line for line in text.splitlines() if line.strip()]
        return clean(lines[-1], token) if lines else ""

    def describe(self, token: str | None = None) -> str:
        """'exit status 3: <its last line>' (or 'exited 0: ...'), one line."""
        how = self.problem or "exited 0"
        tail = self.tail(token)
        return f"{how}: {tail}" if tail else how


def child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a command: ours without the Hugging Face token."""
    env = dict(os.environ if environ is None else environ)
    for name in SECRET_ENV:
        env.pop(name, None)
    return env


class CommandRunner:
    """Runs one command at a time (see the module doc)."""

    def __init__(
        self, timeout: float, environ: Mapping[str, str] | None = None, keep: int = TAIL_BYTES
    ) -> None:
        self.timeout = timeout
        self.keep = keep  # bytes of its output kept (the last ones)
        self.env = child_env(environ)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None

    def run(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # its children die with it on a timeout
                close_fds=True,
            )
        except OSError as exc:
            return CommandResult(None, f"cannot run {argv[0]}: {exc.strerror or exc}")
        with self._lock:
            self._proc = proc
        try:
            out, written, timed_out = _follow(proc, self.timeout, self.keep)
        finally:
            with self._lock:
                self._proc = None
        if timed_out:
            return CommandResult(None, f"timed out after {self.timeout:g} s (killed)", out, written)
        code = proc.returncode
        if code == 0:
            return CommandResult(0, None, out, written)
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return CommandResult(code, how, out, written)

    def kill(self) -> None:
        """Kill the command in flight, if any (its process group)."""
        with self._lock:
            proc = self._proc
        if proc is not None:
            kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Tail:
    """The last `limit` bytes written to it."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.data = bytearray()
        self.written = 0

    def add(self, chunk: bytes) -> None:
        self.written += len(chunk)
        self.data += chunk[-self.limit :]
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]


def _follow(proc: subprocess.Popen, timeout: float, keep: int) -> tuple[bytes, int, bool]:
    """Read the command's output into a bounded tail until it exits (or is over time:
    then its group is killed). (the tail, bytes written in all, whether it timed out).
    The pipe is closed."""
    tail = _Tail(keep)
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout
    eof = timed_out = False
    try:
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                kill_group(proc)
                timed_out = True
                break
            if eof:  # its output ended first: only its exit is waited for
                try:
                    proc.wait(min(left, POLL_S))
                except subprocess.TimeoutExpired:
                    pass
                continue
            ready, _, _ = select.select([fd], [], [], min(left, POLL_S))
            if ready:
                eof = not _read_some(fd, tail)
        if timed_out:
            try:
                proc.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:  # pragma: no cover (SIGKILL ignored: a D state)
                pass
        # what it wrote before it ended, for at most EXIT_DRAIN_S: a background child that
        # holds the pipe and writes on does not keep us here
        end = time.monotonic() + EXIT_DRAIN_S
        while not eof and time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], max(end - time.monotonic(), 0.0))
            if not ready or not _read_some(fd, tail):
                break
    finally:
        proc.stdout.close()
    return bytes(tail.data), tail.written, timed_out


def _read_some(fd: int, tail: _Tail) -> bool:
    """Read what the pipe holds now (up to READ_ROUNDS chunks); False at its end."""
    for _ in range(READ_ROUNDS):
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        tail.add(chunk)
    return True
