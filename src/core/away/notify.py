"""Running the user's notify_command for each event, off the refresh loop.

`notify_command` is an argv list (no shell). In each argument the placeholders `{event}`,
`{run}` (the run directory, empty for the machine), `{message}` and `{host}` (this
machine's name) are replaced in one pass: a value that itself holds `{message}` (a run
named so) is not expanded again, and nothing is read as a format string.

Every value is one printable line (core.base.text.printable: a CR or LF in a run's name
shows as ^M^J, so it cannot end a header of `-H "X-Run: {run}"`), and `{message}` and
`{host}` never start with anything but a letter or a digit: a message that would (a run
named `@runs` or `-d`: curl reads `-d @FILE` as a file to send) starts with the event's
name instead ("run_dead: @runs/x is DEAD ..."), a host name with "host ".

- Never blocks the refresh: `submit` puts the event on a queue served by one worker
  thread. At most MAX_PENDING events wait; when a slow or hanging command lets more pile
  up, the oldest waiting one is dropped (the newest news is kept) and the drop is reported.
- Each run has a timeout (NOTIFY_TIMEOUT_S): the command runs (core.away.command, shared with
  autostop_command) in its own session and its whole process group is killed when it is
  over time. A command that hangs every time therefore costs one notification each
  TIMEOUT seconds, and the queue drops the rest.
- stdout and stderr are captured (the last 2000 bytes kept, for the failure line); stdin is
  /dev/null; HF_TOKEN and HUGGING_FACE_HUB_TOKEN are not passed to it.
- A failure (cannot start, non-zero exit, timeout) is reported once through `on_failure`
  as a `notify_failed` event, never through the failing command; later failures are
  counted, not reported, until the command succeeds again.
- The message was cleaned by core.away.events (printable, token-free); the token given here is
  removed from every argument again, and from the captured output before it is reported.
"""

from __future__ import annotations

import collections
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from ..base.text import printable
from .command import CommandRunner
from .events import Event, clean

NOTIFY_TIMEOUT_S = 30.0
MAX_PENDING = 16
_PLACEHOLDER = re.compile(r"\{(event|run|message|host)\}")


def hf_token() -> str | None:
    """The Hugging Face token the way huggingface_hub finds it (HF_TOKEN, the stored
    login), to be scrubbed from what is printed and sent; None when there is none."""
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        return token.strip() or None
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:
        return None


def one_line(text: str) -> str:
    """`text` as one printable line (controls, CR and LF made visible)."""
    return printable(text)


def safe_start(text: str, prefix: str) -> str:
    """`text`, with `prefix` before it unless it starts with a letter or a digit: never an
    option (`-`), a file reference (`@`, `<`) or anything else a program may read as one."""
    return text if text[:1].isalnum() and text[:1].isascii() else prefix + text


def fill(template: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """The argv for one event: each placeholder replaced by its value, in one pass."""
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in template]


class Notifier:
    """One worker thread that runs `argv` for each submitted event, in order."""

    def __init__(
        self,
        argv: Sequence[str],
        on_failure: Callable[[Event], None],
        *,
        timeout: float = NOTIFY_TIMEOUT_S,
        max_pending: int = MAX_PENDING,
        token: str | None = None,
        host: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.on_failure = on_failure
        self.timeout = timeout
        self.max_pending = max_pending
        self.token = token
        self.host = host if host is not None else socket.gethostname()
        self._runner = CommandRunner(timeout, environ)
        self._cond = threading.Condition()
        self._queue: collections.deque[Event] = collections.deque()
        self._busy = False  # a command is running
        self._closing = False
        self.failing = False  # the last run failed (and that was reported)
        self.failures = 0  # failed runs since the last success
        self.dropped = 0  # events dropped because the queue was full
        self._drop_reported = False
        self.sent = 0
        self._thread = threading.Thread(target=self._work, name="rgpu-notify", daemon=True)
        self._thread.start()

    def submit(self, event: Event) -> None:
        """Queue `event`; returns at once."""
        dropped = None
        with self._cond:
            if self._closing:
                return
            if len(self._queue) >= self.max_pending:
                dropped = self._queue.popleft()
                self.dropped += 1
            self._queue.append(event)
            self._cond.notify()
            report_drop = dropped is not None and not self._drop_reported
            if report_drop:
                self._drop_reported = True
        if report_drop:
            self.on_failure(
                Event(
                    at=time.time(),
                    event="notify_failed",
                    run=dropped.run,
                    message=f"notify_command is too slow: {self.max_pending} notifications "
                    f"waiting, dropped the oldest ({dropped.event}); later drops are counted",
                )
            )

    def idle(self) -> bool:
        with self._cond:
            return not self._queue and not self._busy

    def close(self, wait: float = 10.0) -> None:
        """Stop: what is queued is still sent for up to `wait` seconds, then the command in
        flight is killed and the rest dropped."""
        deadline = time.monotonic() + wait
        with self._cond:
            while (self._queue or self._busy) and time.monotonic() < deadline:
                self._cond.wait(max(deadline - time.monotonic(), 0.0))
            self._closing = True
            self._queue.clear()
            self._cond.notify_all()
        self._runner.kill()
        self._thread.join(5.0)

    # -- the worker ---------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                event = self._queue.popleft()
                self._busy = True
            try:
                problem = self._run(event)
            except Exception as exc:  # never let the worker die: that would stop notices
                problem = f"{type(exc).__name__}: {exc}"
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                closing = self._closing
            if closing:
                return
            self._after(event, problem)

    def _after(self, event: Event, problem: str | None) -> None:
        if problem is None:
            self.sent += 1
            self.failing, self.failures, self._drop_reported = False, 0, False
            return
        self.failures += 1
        if self.failing:
            return
        self.failing = True
        self.on_failure(
            Event(
                at=time.time(),
                event="notify_failed",
                run=event.run,
                message=clean(
                    f"notify_command failed for {event.event}: {problem} "
                    "(not reported again until it works)",
                    self.token,
                ),
            )
        )

    def _run(self, event: Event) -> str | None:
        """Run the command for `event`; None when it succeeded, else why not (one line)."""
        values = {
            "event": event.event,
            "run": one_line(event.run or ""),
            "message": safe_start(one_line(event.message), f"{event.event}: "),
            "host": safe_start(one_line(self.host), "host "),
        }
        argv = fill(self.argv, values)
        if self.token:
            argv = [arg.replace(self.token, "***") for arg in argv]
        result = self._runner.run(argv)
        return None if result.ok else result.describe(self.token)
