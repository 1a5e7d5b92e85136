"""The Textual app on this machine: the refresh loop, the push queue, the event notices. What
it shows is the run view (tui.screens.runs_view: machine pane, runs list, run header, metric
sparklines, log tail), its default screen, with this machine as its run source
(tui.actions.local.LocalRuns).

One refresh loop: the refresher's thread builds the next Snapshot with core's
Collector and posts it; the app hands it to the view, which gives each pane its slice; a
pane repaints only when its slice changed. The refresher keeps a one-interval beat of its
own, but builds the next Snapshot only after the app applied the last one, so a slow
disk or a busy app never piles refreshes up.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from textual.app import App

from ..core.away.events import EventEngine
from ..core.away.price_feed import price_feed
from ..core.base.config import Settings
from ..core.hub.auto_push import AutoPusher
from ..core.hub.push_queue import PushQueue
from ..core.model.snapshot import Snapshot
from ..core.picture.collect import Collector
from ..core.picture.refresh import RefreshDriver
from . import compat
from .actions.local import LocalRuns
from .app_rules import AppRules
from .messages import PushUpdate, RefreshFailed, SnapshotReady, StopProgress
from .refresher import Refresher
from .screens.help import HelpScreen
from .screens.runs_view import RunsView

# the notices of events (core.away.events); the others are "information"
EVENT_SEVERITY = {
    "run_dead": "error",
    "run_failed": "error",
    "balance_low": "error",
    "run_stalled": "warning",
    "disk_low": "warning",
    "idle": "warning",
}


class RgpuApp(AppRules, App[int]):
    """A thin app: the refresh loop and the push queue; its one screen is the run view
    (tui.screens.runs_view) of this machine's run source (tui.actions.local)."""

    CSS_PATH = "app.tcss"
    TITLE = "rgpu-tui"  # the keys, `q` and `?` too, are the view's (actions.local.LOCAL_KEYS)

    def __init__(
        self,
        root: str,
        interval: float = 1.0,
        theme_name: str | None = None,
        clock: Callable[[], float] = time.time,
        fake_gpus: int | None = None,
        fake_lose: dict[int, float] | None = None,
        settings: Settings | None = None,
        gpu_replay=None,  # a core.machine.gpu_replay.GpuRecording: replay it instead of NVML
        no_autostop: bool = False,  # hold the watcher's autostop while the app runs
    ) -> None:
        # the fast paths on Textual's internals (compat): on when this Textual allows them
        fast_paths = compat.install()
        super().__init__(driver_class=compat.driver_class(fast_paths))
        self.fast_paths = fast_paths
        self.root_arg = root
        self.interval = interval
        self.clock = clock
        self.settings = settings or Settings()
        # one queue, one upload at a time: its threads start on the first push
        self.runs = LocalRuns(self)  # the run view's source: this machine
        self.push_queue = PushQueue(self.settings, self.runs.pushes.event_from_thread)
        self.auto_pusher = AutoPusher(self.settings)
        self.collector = Collector(
            root,
            fake_gpus=fake_gpus,
            fake_lose=fake_lose,
            gpu_replay=gpu_replay,
            interval=interval,
            log_keep=500,
            settings=settings,
            price=price_feed(self.settings, clock=clock),  # price_command, on its own thread
        )
        # the watcher's events as notices: what changes while the app runs (what it finds at
        # start is on the screen); in memory only, and no notify_command: that is `watch`'s
        # (its own pushes the app reports itself, so no push_failed here)
        self.events = EventEngine(self.settings, first_look=False, pushes=False)
        self.no_autostop = no_autostop
        self.view = RunsView(
            self.runs, fast_log=self.fast_paths.on(compat.LOG), selected=os.path.abspath(root)
        )  # a run dir given as root is selected
        self.snapshot: Snapshot | None = None
        self.refresh_error: str | None = None
        self._lock = threading.Lock()
        self._refresher = Refresher(self._build_snapshot, period=interval)
        self._refreshes = RefreshDriver(self.collector, clock=clock)  # the one failure rule
        if theme_name:
            if theme_name not in self.available_themes:
                names = ", ".join(sorted(self.available_themes))
                raise ValueError(f"unknown theme {theme_name!r}; one of: {names}")
            self.theme = theme_name

    def get_default_screen(self) -> RunsView:
        return self.view

    def on_mount(self) -> None:
        self._set_layout(self.size)

    def start(self) -> None:
        """The view is mounted (LocalRuns.mounted): the refresh loop starts."""
        self._refresher.start()
        self.request_refresh()
        compat.report(self, self.fast_paths, self.view.log_pane)  # RGPU_FAST_PATHS_REPORT only

    def on_unmount(self) -> None:
        self._refresher.stop(timeout=0)  # no new refreshes; one in flight holds the lock
        self.runs.pushes.exiting = True
        self.push_queue.close(timeout=0)  # an upload in flight stops; nothing half-committed
        with self._lock:  # a refresh in flight finishes first
            self.collector.close()

    # -- the refresh loop --------------------------------------------------

    def request_refresh(self) -> None:
        """Start a refresh now, or right after the one in flight."""
        self._refresher.schedule(0)

    def _build_snapshot(self) -> None:
        """On the refresher's thread."""
        selected = self.view.selected
        with self._lock:
            snap = self._refreshes.refresh(selected=selected, charts=self.runs.chart_request)
        if snap is None:  # a reader bug must not take the UI down: said, the last one stays
            self.post_message(RefreshFailed(self._refreshes.failure))
            return
        if self.settings.auto_push != "off":
            with self._lock:
                requests = self.auto_pusher.requests(snap, self.collector.runs)
            for req in requests:
                self.runs.pushes.submit(req)
        self.post_message(SnapshotReady(snap))

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.refresh_error = None
        self.apply_snapshot(message.snapshot)
        self._refresh_done()

    def on_refresh_failed(self, message: RefreshFailed) -> None:
        self.refresh_error = f"refresh failed: {message.error}"
        if self.snapshot is not None:
            self.apply_snapshot(self.snapshot)
        self._refresh_done()

    def _refresh_done(self) -> None:
        # the go-ahead for the next one: an interval from now (the refresher's own beat,
        # due a little earlier, wins); sooner when the log holds lines back, so they come
        # with its frame
        held = self.view.log_pane.pending_in()
        self._refresher.schedule(self.interval if held is None else min(self.interval, held))

    def apply_snapshot(self, snap: Snapshot) -> None:
        self.snapshot = snap
        for event in self.events.observe(snap):
            severity = EVENT_SEVERITY.get(event.event, "information")
            self.notify(event.message, title=event.event, severity=severity, timeout=15)
        self.runs.follow(snap)
        self.view.show(snap)

    # -- what the workers post -------------------------------------------------------

    def on_push_update(self, message: PushUpdate) -> None:
        self.runs.pushes.update(message.event, self.view.push_bar)

    def on_stop_progress(self, message: StopProgress) -> None:
        self.runs.actions.stop_progress(message)

    # -- keys ------------------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen())
