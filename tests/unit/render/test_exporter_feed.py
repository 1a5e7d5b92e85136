"""core.render.exporter_feed.MetricsFeed: a scrape reads a Snapshot at most once a second and
is never held up by a refresh stuck on a slow disk. The real Collector over a real run; a
refresh is held at a gate where a test needs it slow, and the monotonic clock is the test's."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from support.waiting import wait_until

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.exporter_feed import MetricsFeed

from ..helpers import SAMPLE_RUN

DEADLINE_S = 30.0  # a wait that fails the test instead of hanging it


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Gated:
    """The real Collector, each refresh counted; while `gate` is cleared a refresh waits
    there (a disk that hangs)."""

    def __init__(self, root: Path) -> None:
        self.real = Collector(str(root), fake_gpus=1, settings=Settings(), log_keep=1)
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Semaphore(0)
        self.calls = 0
        self.fail: Exception | None = None

    def refresh(self, now: float):
        self.calls += 1
        self.entered.release()
        assert self.gate.wait(DEADLINE_S), "the gate was never opened"
        if self.fail is not None:
            raise self.fail
        return self.real.refresh(now=now)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(SAMPLE_RUN, tmp_path / "runs" / "done")
    return tmp_path / "runs"


@pytest.fixture
def feed_parts(root: Path):
    made = []

    def make(**kw):
        collector, clock = Gated(root), Clock()
        feed = MetricsFeed(collector, monotonic=clock, **kw)
        made.append((feed, collector))
        return feed, collector, clock

    yield make
    for feed, collector in made:
        collector.gate.set()
        feed.close()
        collector.real.close()


def run_names(fams) -> list[str]:
    [info] = [f for f in fams if f.metric.name == "rgpu_run_info"]
    return [labels[0] for labels, _ in info.samples]


def test_scrapes_within_a_second_share_one_refresh(feed_parts) -> None:
    feed, collector, clock = feed_parts()
    feed.start()
    assert feed.wait_first(DEADLINE_S)
    assert run_names(feed.latest()) == ["done"]
    for dt in (0.0, 0.3, 0.99):
        clock.t = 100.0 + dt
        assert run_names(feed.latest()) == ["done"]
    assert collector.calls == 1
    clock.t = 101.0  # a second after the last refresh began: the next scrape reads again
    assert run_names(feed.latest()) == ["done"]
    assert collector.calls == 2 and feed.refreshes == 2


def test_nobody_scraping_means_no_refresh(feed_parts) -> None:
    feed, collector, clock = feed_parts()
    feed.start()
    assert feed.wait_first(DEADLINE_S)
    clock.t += 3600  # an hour later, with no scrape: still the one first refresh
    assert collector.calls == 1


def test_a_refresh_stuck_on_the_disk_holds_no_scrape_after_the_wait(feed_parts) -> None:
    feed, collector, clock = feed_parts(wait=0.5)
    feed.start()
    assert feed.wait_first(DEADLINE_S)
    before = feed.latest()
    collector.gate.clear()  # the disk hangs
    clock.t += 2.0
    got: list = []
    scrape = threading.Thread(target=lambda: got.append(feed.latest()))
    scrape.start()
    assert collector.entered.acquire(timeout=DEADLINE_S)  # two: the first one and this one
    assert collector.entered.acquire(timeout=DEADLINE_S)
    clock.t += 0.6  # past the wait, counted from the refresh's start
    # a new scrape does not wait at all; the waiting one gives up at its next look at the
    # clock (its condition wait times out)
    assert run_names(feed.latest()) == ["done"]
    scrape.join(DEADLINE_S)
    assert not scrape.is_alive(), "a scrape waited on the hung refresh"
    assert got and [f.samples for f in got[0]] == [f.samples for f in before]
    assert collector.calls == 2  # the hung refresh was not piled on
    collector.gate.set()
    wait_until(lambda: feed.refreshes == 2, "the refresh after the disk came back")


def test_a_failed_refresh_keeps_the_last_families_and_is_told_once(feed_parts) -> None:
    told: list[str] = []
    feed, collector, clock = feed_parts(on_error=told.append)
    feed.start()
    assert feed.wait_first(DEADLINE_S)
    collector.fail = RuntimeError("reader bug\nsecond line")
    for step in (1, 2, 3):
        clock.t = 100.0 + 2 * step
        assert run_names(feed.latest()) == ["done"]
    assert collector.calls == 4
    assert told == [
        "refresh failed: RuntimeError: reader bug second line (serving the last Snapshot)"
    ]
    collector.fail = None
    clock.t += 2
    feed.latest()
    assert feed.refreshes == 2


def test_a_failed_refresh_is_tried_at_most_once_a_second_too(feed_parts) -> None:
    feed, collector, clock = feed_parts()
    feed.start()
    assert feed.wait_first(DEADLINE_S)
    collector.fail = OSError("stale NFS handle")
    clock.t += 1.0
    feed.latest()
    for _ in range(5):
        feed.latest()  # the same instant: no new try
    assert collector.calls == 2


def test_before_the_first_refresh_there_is_nothing_and_close_ends_the_thread(
    feed_parts,
) -> None:
    feed, collector, clock = feed_parts(wait=0.0)
    collector.gate.clear()
    feed.start()
    assert collector.entered.acquire(timeout=DEADLINE_S)
    assert feed.latest() == []  # the first refresh is stuck: no families yet, no wait
    collector.gate.set()
    assert feed.wait_first(DEADLINE_S)
    feed.close()
    assert not feed._thread.is_alive()
