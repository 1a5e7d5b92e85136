"""The thread that builds snapshots, one at a time, when they are due.

A Textual thread worker per refresh, plus a timer for the next one, costs about
0.25% of a core at 1 Hz in worker objects, state-change messages and timer tasks,
before any work is done (measured with an app that does nothing else). One
long-lived thread that sleeps until the next refresh is due costs a tenth of that.
With a `period` it also needs no wake-up from the app to keep the beat: on the 2-core
VM of bench/RESULTS.md every wake-up of a sleeping thread costs about 0.1 ms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, monotonic."""

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on `cond` (held by the caller) until notified or `timeout` seconds (of
        this clock) passed; None: until notified. May return early."""


class MonotonicClock:
    """The real clock: `time.monotonic`, and the condition's own timed wait."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(timeout)


class Refresher:
    """Calls `build()` on its own thread whenever a refresh falls due.

    `schedule(delay)` asks for a refresh `delay` seconds from now; an earlier request
    wins, so "now" is never pushed back by a periodic one. Builds never overlap: a
    request made during a build is served right after it.

    With `period`, the next refresh also falls due `period` seconds after each build
    without being asked, so the app's own "again in a second" after it applied a
    snapshot is later than what is already due and wakes nothing. It is still the
    app's go-ahead: a build whose result the app has not acknowledged with
    `schedule()` yet waits for it, so a busy app is never handed a second snapshot
    before it took the first (and then the next comes when the app asks for it).

    `clock` tells the time and waits for it (MonotonicClock: `time.monotonic` and the
    condition's own timed wait); tests pass a fake one and move it by hand.
    """

    def __init__(
        self,
        build: Callable[[], None],
        period: float | None = None,
        name: str = "rgpu-refresh",
        clock: Clock | None = None,
    ) -> None:
        self._build = build
        self._period = period
        self._clock = clock if clock is not None else MonotonicClock()
        self._cond = threading.Condition()
        self._due: float | None = None  # the clock's time of the next build
        self._acked = True  # schedule() was called since the last build began
        self._blocked = False  # due, waiting for schedule()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def schedule(self, delay: float) -> None:
        due = self._clock.now() + max(delay, 0.0)
        with self._cond:
            self._acked = True
            if self._blocked or self._due is None or due < self._due:
                self._due = due
                self._cond.notify()

    def stop(self, timeout: float | None = None) -> None:
        """No new builds; waits up to `timeout` for a build in progress to finish."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    wait = None
                    if self._due is not None:
                        wait = self._due - self._clock.now()
                        if wait <= 0:
                            if self._acked:
                                break
                            self._blocked, wait = True, None
                    self._clock.wait(self._cond, wait)
                    self._blocked = False
                if self._stopping:
                    return
                self._due = None
                self._acked = False
            self._build()
            if self._period is not None:
                with self._cond:
                    if self._due is None:  # a request made during the build stays
                        self._due = self._clock.now() + self._period
