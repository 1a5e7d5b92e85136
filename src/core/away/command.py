"""Running one user-configured command (notify_command, autostop_command): argv, no shell.

`CommandRunner.run(argv)` runs it and waits, in the caller's thread (callers are worker
threads), and returns a CommandResult; `kill()` from another thread ends the one in flight.

- No shell: argv is a list; stdin is /dev/null; stdout and stderr are captured together
  (the last TAIL_BYTES kept, for the line that says why it failed).
- A timeout: the command runs in a session of its own and its whole process group is
  killed when it is over time (its children too), as it is by `kill()`. A child that
  escaped the group and holds the pipe open does not keep the caller waiting.
- HF_TOKEN and HUGGING_FACE_HUB_TOKEN are not passed to it; the token given to `tail()`
  is removed from what is reported.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .events import clean

SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
TAIL_BYTES = 2000


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None: it could not start, or was killed at the timeout
    problem: str | None  # None when it exited 0; else "exit status 3", "timed out ...", ...
    output: bytes = b""  # the last TAIL_BYTES it wrote (stdout and stderr together)

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

    def __init__(self, timeout: float, environ: Mapping[str, str] | None = None) -> None:
        self.timeout = timeout
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
            try:
                out, _ = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                out = _rest(proc)
                return CommandResult(
                    None, f"timed out after {self.timeout:g} s (killed)", (out or b"")[-TAIL_BYTES:]
                )
        finally:
            with self._lock:
                self._proc = None
        out = (out or b"")[-TAIL_BYTES:]
        code = proc.returncode
        if code == 0:
            return CommandResult(0, None, out)
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return CommandResult(code, how, out)

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


def _rest(proc: subprocess.Popen) -> bytes:
    """What the killed command wrote; a child that escaped its group and holds the pipe
    open does not keep us waiting."""
    try:
        out, _ = proc.communicate(timeout=2.0)
        return out or b""
    except subprocess.TimeoutExpired:
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()
        return b""
