"""The refresher thread: builds when due, one at a time, an earlier request wins.

Time is a FAKE clock (`FakeClock`): it moves only when the test moves it, and every
"nothing happened" is checked after a handshake (`settle()`): the refresher's thread has
taken in everything asked so far and sleeps, so what it built is final until the clock
or a request moves it. One test runs the real clock, with bounded waits only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from support.waiting import wait_until

from rgpu_tui.tui.refresher import Refresher

T0 = 1000.0


@dataclass(frozen=True)
class Park:
    """The refresher went to sleep at `at` for `timeout` seconds (None: until asked)."""

    at: float
    timeout: float | None
    generation: int


class FakeClock:
    """FAKE refresher clock. `now()` is `t`, moved only by `advance()`. The refresher's
    waits are real, untimed waits on its own condition: woken by its own notify (a
    request, stop) or by `advance()`. A wait asked with a timeout after the clock moved
    since the refresher read it returns at once, so the refresher looks again."""

    def __init__(self, t: float = T0) -> None:
        self.t = t
        self._lock = threading.Lock()
        self._parked = threading.Condition(self._lock)
        self._generation = 0  # bumped by every advance(), settle() included
        self._seen = -1  # the generation the refresher last read the time in
        self._conds: set[threading.Condition] = set()
        self.parks: list[Park] = []

    def now(self) -> float:
        with self._lock:
            self._seen = self._generation
            return self.t

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        with self._lock:
            self._conds.add(cond)
            if timeout is not None and self._seen != self._generation:
                return  # the clock moved after it was read
            self.parks.append(Park(self.t, timeout, self._generation))
            self._parked.notify_all()
        cond.wait()  # the caller holds cond: advance() cannot notify before this waits

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.t += seconds
            self._generation += 1
            conds = list(self._conds)
        for cond in conds:
            with cond:
                cond.notify_all()

    def settle(self, timeout: float = 10.0) -> Park:
        """The handshake: wake the refresher and wait (bounded) until it went back to
        sleep having seen everything so far; returns how it sleeps."""
        self.advance(0.0)
        deadline = time.monotonic() + timeout
        with self._lock:
            generation = self._generation
            while not (self.parks and self.parks[-1].generation == generation):
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"the refresher did not go back to sleep within {timeout:g} s")
                self._parked.wait(left)
            return self.parks[-1]


@contextmanager
def recording(
    clock: FakeClock, period: float | None = None, gate: threading.Event | None = None
) -> Iterator[tuple[Refresher, list[float]]]:
    """A Refresher on `clock` whose builds record the clock's time (and wait for `gate`
    when given); started, and stopped on exit."""
    built: list[float] = []

    def build() -> None:
        built.append(clock.t)
        if gate is not None:
            assert gate.wait(10), "the test never opened the gate"

    r = Refresher(build, period=period, clock=clock)
    r.start()
    try:
        yield r, built
    finally:
        if gate is not None:
            gate.set()
        r.stop(timeout=10)


def test_builds_when_due_and_not_before() -> None:
    clock = FakeClock()
    with recording(clock) as (r, built):
        r.schedule(0.5)
        assert clock.settle().timeout == 0.5 and built == []
        clock.advance(0.25)
        assert clock.settle().timeout == 0.25 and built == []  # not before
        clock.advance(0.25)
        assert clock.settle().timeout is None  # nothing more is due without a period
        assert built == [T0 + 0.5]  # when due


def test_an_earlier_request_wins_over_a_later_one() -> None:
    clock = FakeClock()
    gate = threading.Event()
    with recording(clock, gate=gate) as (r, built):
        r.schedule(3600)  # the periodic refresh, far away
        r.schedule(0)  # a key press: now
        wait_until(lambda: built == [T0], "the first build", 10)
        r.schedule(0)  # asked while that build runs (it waits for the gate) ...
        r.schedule(3600)  # ... does not push "now" back
        gate.set()
        assert clock.settle().timeout is None
        assert built == [T0, T0]


def test_builds_never_overlap_and_a_request_during_a_build_is_served_after_it() -> None:
    clock = FakeClock()
    gate = threading.Event()
    running: list[int] = []
    overlaps: list[int] = []
    done: list[int] = []

    def build() -> None:
        overlaps.append(len(running))
        running.append(1)
        assert gate.wait(10), "the test never opened the gate"
        running.pop()
        done.append(1)

    r = Refresher(build, clock=clock)
    r.start()
    try:
        r.schedule(0)
        wait_until(lambda: running, "the first build", 10)
        r.schedule(0)  # asked while the first build runs
        r.schedule(0)  # twice: still one more build
        assert overlaps == [0] and done == []  # not built on the asking thread
        gate.set()
        assert clock.settle().timeout is None  # asleep: nothing else is due
        assert done == [1, 1] and overlaps == [0, 0]
    finally:
        gate.set()
        r.stop(timeout=10)


def test_stop_ends_the_thread_and_no_build_follows() -> None:
    clock = FakeClock()
    built: list[float] = []
    r = Refresher(lambda: built.append(clock.t), clock=clock)
    r.start()
    r.schedule(0.5)
    assert clock.settle().timeout == 0.5
    r.stop(timeout=10)
    assert not r._thread.is_alive()  # ended: nothing can build any more
    clock.advance(1.0)  # past the request
    r.schedule(0)
    assert built == []


def test_with_a_period_the_beat_needs_no_request_but_waits_for_the_go_ahead() -> None:
    clock = FakeClock()
    with recording(clock, period=0.5) as (r, built):
        r.schedule(0)
        assert clock.settle().timeout == 0.5  # the next beat, unasked
        assert built == [T0]
        r.schedule(3600)  # the app applied it: "again in an hour" is later than the beat
        assert clock.settle().timeout == 0.5
        clock.advance(0.5)
        clock.settle()
        assert built == [T0, T0 + 0.5]  # the period, not the hour
        # no go-ahead for the second build's result: no third build, however long
        clock.advance(7200.0)
        assert clock.settle().timeout is None  # due, and waiting for the app
        assert len(built) == 2
        t_ack = clock.t
        r.schedule(0.25)  # the go-ahead comes late: the app's own delay counts from it
        assert clock.settle().timeout == 0.25 and len(built) == 2
        clock.advance(0.25)
        clock.settle()
        assert built[2:] == [t_ack + 0.25]


def test_without_a_period_nothing_is_built_unasked() -> None:
    clock = FakeClock()
    with recording(clock) as (r, built):
        r.schedule(0)
        assert clock.settle().timeout is None and built == [T0]
        r.schedule(3600)  # the app's go-ahead: again in an hour
        clock.advance(1800.0)
        assert clock.settle().timeout == 1800.0 and built == [T0]  # no beat of its own
        clock.advance(1800.0)
        clock.settle()
        assert built == [T0, T0 + 3600.0]


def test_the_real_clock_builds_when_asked() -> None:
    """MonotonicClock, the app's: bounded waits only, no timing asserted."""
    built: list[float] = []
    r = Refresher(lambda: built.append(time.monotonic()))
    r.start()
    try:
        r.schedule(0)
        wait_until(lambda: len(built) == 1, "a build", 10)
        r.schedule(0.01)
        wait_until(lambda: len(built) == 2, "a build after a delay", 10)
    finally:
        r.stop(timeout=10)
    assert not r._thread.is_alive()
