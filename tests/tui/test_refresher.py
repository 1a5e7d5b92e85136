"""The refresher thread: builds when due, one at a time, an earlier request wins."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from support.waiting import wait_until

from rgpu_tui.tui.refresher import Refresher


@contextmanager
def recording(period: float | None = None) -> Iterator[tuple[Refresher, list[float]]]:
    """A started Refresher whose builds record when they ran; stopped on exit."""
    built: list[float] = []
    r = Refresher(lambda: built.append(time.monotonic()), period=period)
    r.start()
    try:
        yield r, built
    finally:
        r.stop(timeout=2)


def test_builds_when_due_and_not_before() -> None:
    with recording() as (r, built):
        t0 = time.monotonic()
        r.schedule(0.3)
        wait_until(lambda: len(built) == 1, timeout=5.0)
        assert built[0] - t0 >= 0.3  # not before (a lower bound: a busy machine only adds)


def test_an_earlier_request_wins_over_a_later_one() -> None:
    with recording() as (r, built):
        r.schedule(3600)  # the periodic refresh, far away
        r.schedule(0)  # a key press: now (the hour would not come within the 5 s waited)
        wait_until(lambda: len(built) == 1, timeout=5.0)
        r.schedule(0)
        r.schedule(3600)  # does not push "now" back
        wait_until(lambda: len(built) == 2, timeout=5.0)


def test_builds_never_overlap_and_a_request_during_a_build_is_served_after_it() -> None:
    gate = threading.Event()
    running = []
    overlaps = []
    done = []

    def build() -> None:
        overlaps.append(len(running))
        running.append(1)
        gate.wait(5)
        running.pop()
        done.append(1)

    r = Refresher(build)
    r.start()
    try:
        r.schedule(0)
        wait_until(lambda: running, timeout=5.0)
        r.schedule(0)  # asked while the first build runs
        r.schedule(0)  # twice: still one more build
        time.sleep(0.1)
        assert len(overlaps) == 1
        gate.set()
        wait_until(lambda: len(done) == 2, timeout=5.0)
        time.sleep(0.1)
        assert len(done) == 2 and overlaps == [0, 0]
    finally:
        gate.set()
        r.stop(timeout=2)


def test_stop_ends_the_thread_and_no_build_follows() -> None:
    built = []
    r = Refresher(lambda: built.append(1))
    r.start()
    r.schedule(0.2)
    r.stop(timeout=2)
    time.sleep(0.4)
    assert built == []
    assert not r._thread.is_alive()


def test_with_a_period_the_beat_needs_no_request_but_waits_for_the_go_ahead() -> None:
    with recording(period=0.2) as (r, built):
        r.schedule(0)
        wait_until(lambda: len(built) == 1, timeout=5.0)
        r.schedule(3600)  # the app applied it: "again in an hour" is later than what is due
        wait_until(lambda: len(built) == 2, timeout=5.0)  # the period, not the hour
        assert built[1] - built[0] >= 0.2
        # no go-ahead for the second build's result: no third build, however long
        time.sleep(0.6)
        assert len(built) == 2
        t_ack = time.monotonic()
        r.schedule(0.3)  # the go-ahead comes late: the app's own delay counts from it
        wait_until(lambda: len(built) == 3, timeout=5.0)
        assert built[2] - t_ack >= 0.3


def test_without_a_period_nothing_is_built_unasked() -> None:
    with recording() as (r, built):
        r.schedule(0)
        wait_until(lambda: len(built) == 1, timeout=5.0)
        time.sleep(0.5)
        assert len(built) == 1
