"""The exporter's refresher: the newest metric families, read at most once a second, never
holding a scrape up for a slow disk.

A thread of its own refreshes the Collector (the app's: runs, GPUs, system, cost) and the
weights verdicts (core.records.push_records.UnpushedWeights) and turns the Snapshot into
families (core.render.prometheus). It refreshes when asked and only then, so an exporter
nobody scrapes does no work: `latest()` (a scrape) asks for a refresh when the newest
Snapshot is `min_age` (1 s) old or older, and waits for it at most `wait` seconds counted
from when that refresh began; then it serves the newest families it has, however old. So a
scrape costs at most `wait` plus the formatting, a refresh stuck on a hung disk holds up one
scrape by `wait` at most and none after it (they serve the last Snapshot, whose age
`rgpu_exporter_snapshot_timestamp_seconds` shows), and scrapes that come together share one
refresh. A refresh that raises keeps the previous families and is told to `on_error` once
per different message (core.picture.refresh, the one failure rule). Reads only: nothing
here pushes, notifies or stops.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..picture.refresh import RefreshDriver
from ..records.push_records import UnpushedWeights
from .prometheus import Family, families

MIN_AGE_S = 1.0  # a Snapshot younger than this is served as it is
WAIT_S = 0.5  # a scrape waits at most this long (from the refresh's start) for a fresh one


class MetricsFeed:
    def __init__(
        self,
        collector,
        *,
        min_age: float = MIN_AGE_S,
        wait: float = WAIT_S,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.collector = collector
        self.min_age = min_age
        self.wait = wait
        self._clock = clock
        self._mono = monotonic
        self._on_error = on_error
        self._weights = UnpushedWeights()
        self._cond = threading.Condition()
        self._families: list[Family] | None = None
        self._began: float | None = None  # (monotonic) the start of the newest refresh ended
        self._asked = False
        self._running_since: float | None = None
        self._done = 0  # refreshes finished (ok or not)
        self._closed = False
        self._driver = RefreshDriver(collector, clock=clock, on_failure=self._tell)
        self._thread: threading.Thread | None = None
        self.refreshes = 0  # successful refreshes (for tests and the bench)

    def start(self) -> MetricsFeed:
        """Start the thread; the first refresh begins at once."""
        with self._cond:
            self._asked = True
        self._thread = threading.Thread(target=self._work, name="rgpu-exporter-feed", daemon=True)
        self._thread.start()
        return self

    def latest(self) -> list[Family]:
        """The newest families (none before the first refresh); see the module doc."""
        with self._cond:
            if self._closed:
                return list(self._families or [])
            now = self._mono()
            if self._began is None or now - self._began >= self.min_age:
                if self._running_since is None:
                    self._asked = True
                    self._cond.notify_all()
                done = self._done
                while not self._closed and self._done == done:
                    since = self._running_since if self._running_since is not None else now
                    left = since + self.wait - self._mono()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            return list(self._families or [])

    def wait_first(self, timeout: float) -> bool:
        """Wait until the first refresh ended (for the command's start and the tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._done > 0 or self._closed, timeout)

    def close(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._asked and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                self._asked = False
                began = self._running_since = self._mono()
            got = self._driver.refresh(then=self._families_of)
            with self._cond:
                self._running_since = None
                self._done += 1
                self._began = began  # a failed one too: at most one try a second
                if got is not None:
                    self._families = got
                    self.refreshes += 1
                self._cond.notify_all()

    def _families_of(self, snap) -> list[Family]:
        self._weights.forget_others(r.run_dir for r in snap.runs)
        return families(snap, self._unpushed)

    def _unpushed(self, run) -> bool | None:
        try:
            return self._weights.unpushed(run.run_dir)
        except Exception:  # one odd run never spoils the others: its verdict is unknown
            return None

    def _tell(self, error: str) -> None:
        if self._on_error is not None:
            try:
                self._on_error(f"refresh failed: {error} (serving the last Snapshot)")
            except Exception:
                pass
