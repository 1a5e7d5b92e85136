"""price_command, run on start and every few minutes on a thread of its own.

The driver that owns a Collector (the app, `watch`, `agent`, `exporter`) makes the feed with
`price_feed(settings)` and hands it to the Collector, which takes `reading()` each refresh
from memory (core.picture.price): a refresh never runs the command and never waits for it.
The one-shot commands (`snapshot`, `cost`) call `read_once()` first, within its timeout.

- The command runs as every user command does (core.away.command: argv, no shell, stdin
  /dev/null, no Hugging Face token in its environment, its whole process group killed at
  PRICE_TIMEOUT_S); `$VAR` / `${VAR}` in its arguments are filled in from the environment
  (core.base.env_expand: an unset one is a failure that names it, never an empty argument).
- At most PRICE_OUTPUT_BYTES of its output are kept; more is a failure ("printed more
  than 64 KiB"), as is garbage, a non-zero exit, a hang, a price out of range.
- A failure keeps the last good value (and its time, so the views show its age) and says
  why in `problem`; the next try comes after PRICE_RETRY_S instead of PRICE_EVERY_S.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from ..base.config import Settings
from ..base.env_expand import UnsetVariable, expand
from ..picture.price import PRICE_OUTPUT_BYTES, PriceReading, parse_price_output
from .command import CommandRunner
from .events import clean

PRICE_EVERY_S = 300.0  # a provider's price changes rarely; its API is not hammered
PRICE_RETRY_S = 60.0  # after a failure
PRICE_TIMEOUT_S = 30.0  # a CLI that logs in and asks an API


class PriceFeed:
    """One price_command, asked on start, every `every` seconds, `retry` after a failure."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        every: float = PRICE_EVERY_S,
        retry: float = PRICE_RETRY_S,
        timeout: float = PRICE_TIMEOUT_S,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.argv = tuple(argv)
        self.every = every
        self.retry = retry
        self.environ = dict(os.environ if environ is None else environ)
        self.clock = clock
        self.runner = CommandRunner(timeout, self.environ, keep=PRICE_OUTPUT_BYTES + 1)
        program = os.path.basename(self.argv[0]) or self.argv[0]
        self._reading = PriceReading(program=clean(program))
        self._lock = threading.Lock()
        self._read = threading.Event()  # one attempt finished
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PriceFeed:
        self._thread = threading.Thread(target=self._run, name="rgpu-price", daemon=True)
        self._thread.start()
        return self

    def reading(self) -> PriceReading:
        with self._lock:
            return self._reading

    def wait_first(self, timeout: float) -> bool:
        """Wait until the first attempt has finished (True) or `timeout` passed."""
        return self._read.wait(timeout)

    def read_once(self) -> PriceReading:
        """Run the command now (in this thread) and keep what it gave."""
        price, balance, problem = self._ask()
        now = self.clock()
        with self._lock:
            r = self._reading
            if problem is None:
                r = replace(r, price_per_hour=price, balance=balance, read_at=now)
                r = replace(r, problem=None, problem_at=None)
            else:
                r = replace(r, problem=problem, problem_at=now)
            self._reading = replace(r, attempts=r.attempts + 1)
            self._read.set()
            return self._reading

    def close(self) -> None:
        self._stop.set()
        self.runner.kill()
        if self._thread is not None:
            self._thread.join(5.0)

    def _ask(self) -> tuple[float | None, float | None, str | None]:
        try:
            argv = expand(self.argv, self.environ)
        except UnsetVariable as exc:
            return None, None, f"not run: {exc}"
        try:
            result = self.runner.run(argv)
        except Exception as exc:  # the runner never raises; a bug must not end the feed
            return None, None, clean(f"{type(exc).__name__}: {exc}")
        if not result.ok:
            return None, None, result.describe()
        if result.written > PRICE_OUTPUT_BYTES:
            return None, None, f"printed more than {PRICE_OUTPUT_BYTES // 1024} KiB, not a price"
        try:
            price, balance = parse_price_output(result.output)
        except ValueError as exc:
            return None, None, clean(str(exc))
        return price, balance, None

    def _run(self) -> None:
        while not self._stop.is_set():
            got = self.read_once()
            self._stop.wait(self.every if got.problem is None else self.retry)


def price_feed(
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    *,
    start: bool = True,
    clock: Callable[[], float] = time.time,
) -> PriceFeed | None:
    """The feed for `settings.price_command` (started, unless `start` is False: a one-shot
    command calls `read_once`); None when it is not set. `clock`: the refresh's own, so
    the price's age is on the same clock as the Snapshot's `now`."""
    if not settings.price_command:
        return None
    feed = PriceFeed(settings.price_command, environ=environ, clock=clock)
    return feed.start() if start else feed
