"""The Textual app: machine pane (GPUs, CPU, RAM, disk), runs list, run header,
metric sparklines, log tail.

One refresh loop: the refresher's thread builds the next Snapshot with core's
Collector and posts it; the app hands each pane its slice; a pane repaints
only when its slice changed. The refresher keeps a one-interval beat of its own,
but builds the next Snapshot only after the app applied the last one, so a slow
disk or a busy app never piles refreshes up.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import OptionList

from ..core.away.events import EventEngine
from ..core.away.price_feed import price_feed
from ..core.base.config import Settings, config_file_for
from ..core.hub.auto_push import AutoPusher
from ..core.hub.push_queue import PushQueue
from ..core.model.snapshot import Snapshot
from ..core.picture.charts import ChartRequest
from ..core.picture.collect import Collector
from ..core.picture.refresh import RefreshDriver
from ..core.render.chart_layout import ShownRun, run_colours, shown_run
from . import compat
from .actions.charts import CHART_BINDINGS, ChartActions
from .actions.push import PushActions
from .actions.runs import RunActions
from .app_rules import AppRules
from .messages import RefreshFailed, SnapshotReady
from .refresher import Refresher
from .screens.cost import CostScreen
from .screens.dialogs import ReportScreen
from .screens.help import HelpScreen
from .widgets.autostop import AutostopLine
from .widgets.cost import CostStrip, IdleBanner
from .widgets.footer import KeysFooter
from .widgets.gpus import GpuPane
from .widgets.push_bar import PushBar
from .widgets.run_panes import compose_run_panes
from .widgets.runs_list import RunsList

# the notices of events (core.away.events); the others are "information"
EVENT_SEVERITY = {
    "run_dead": "error",
    "run_failed": "error",
    "balance_low": "error",
    "run_stalled": "warning",
    "disk_low": "warning",
    "idle": "warning",
}


class RgpuApp(AppRules, PushActions, RunActions, ChartActions, App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "rgpu-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("m", "metrics_page", "Metrics"),
        Binding("c", "cost", "Cost"),
        Binding("p", "push", "Push"),
        Binding("P", "push_pick", "Push…", show=False),
        Binding("n", "launch", "New run"),
        Binding("s", "stop", "Stop"),
        Binding("r", "resume", "Resume", show=False),
        Binding("g", "preflight", "GPU check"),
        Binding("a", "autostop", "Autostop", show=False),
        *CHART_BINDINGS,
    ]

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
        self.push_queue = PushQueue(self.settings, self._push_event_from_thread)
        self.auto_pusher = AutoPusher(self.settings)
        self._exiting = False  # on_unmount closed the queue
        self._push_progress: dict = {}
        self._stop_screen: ReportScreen | None = None
        self._follow_pid: int | None = None  # a run we launched: select it when it appears
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
        self.selected: str | None = os.path.abspath(root)  # a run dir given as root
        self.marks: list[str] = []  # runs marked to compare (space), in marking order
        self._chart_request: ChartRequest | None = None  # what the next refresh builds
        self.no_autostop = no_autostop
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

    def compose(self) -> ComposeResult:
        # the panes live on the default screen; keep references, since App.query_one looks
        # at the active screen, which is a dialog while one is open
        self.idle_banner = IdleBanner(id="idle")
        self.autostop_line = AutostopLine(
            self.root_arg, self.settings, hold=self.no_autostop, clock=self.clock, id="autostop"
        )
        self.gpu_pane = GpuPane(id="gpus")
        self.cost_strip = CostStrip(config_file_for(self.settings), id="cost")
        self.push_bar = PushBar(id="push")
        yield self.idle_banner
        yield self.autostop_line
        yield self.gpu_pane
        yield self.cost_strip
        yield self.push_bar
        yield from compose_run_panes(self, fast_log=self.fast_paths.on(compat.LOG))
        yield KeysFooter()

    def on_mount(self) -> None:
        self.runs_list.focus()
        self._set_layout(self.size)
        self._refresher.start()
        self.request_refresh()
        compat.report(self, self.fast_paths, self.log_pane)  # RGPU_FAST_PATHS_REPORT only

    def on_unmount(self) -> None:
        self._refresher.stop(timeout=0)  # no new refreshes; one in flight holds the lock
        self._exiting = True
        self.push_queue.close(timeout=0)  # an upload in flight stops; nothing half-committed
        with self._lock:  # a refresh in flight finishes first
            self.collector.close()

    # -- the refresh loop --------------------------------------------------

    def request_refresh(self) -> None:
        """Start a refresh now, or right after the one in flight."""
        self._refresher.schedule(0)

    def _build_snapshot(self) -> None:
        """On the refresher's thread."""
        selected = self.selected
        with self._lock:
            snap = self._refreshes.refresh(selected=selected, charts=self._chart_request)
        if snap is None:  # a reader bug must not take the UI down: said, the last one stays
            self.post_message(RefreshFailed(self._refreshes.failure))
            return
        if self.settings.auto_push != "off":
            with self._lock:
                requests = self.auto_pusher.requests(snap, self.collector.runs)
            for req in requests:
                self._submit_push(req)
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
        held = self.log_pane.pending_in()
        self._refresher.schedule(self.interval if held is None else min(self.interval, held))

    def apply_snapshot(self, snap: Snapshot) -> None:
        self.snapshot = snap
        for event in self.events.observe(snap):
            severity = EVENT_SEVERITY.get(event.event, "information")
            self.notify(event.message, title=event.event, severity=severity, timeout=15)
        if self._follow_pid is not None:
            for r in snap.runs:
                if r.pid == self._follow_pid:
                    if r.state != "starting":
                        self._follow_pid = None  # found its real run directory
                    if self.selected != r.run_dir:
                        self.selected = r.run_dir
                        self.request_refresh()
                    break
        sel_dir = snap.selected.run_dir if snap.selected else None
        if self.selected not in {r.run_dir for r in snap.runs}:
            self.selected = sel_dir
            self.charts_changed()
        there = {r.run_dir for r in snap.runs}
        if any(m not in there for m in self.marks):  # a marked run is gone
            self.marks = [m for m in self.marks if m in there]
            self.charts_changed()
        runs = self.runs_list
        title = f"runs ({len(snap.runs)})"
        if runs.border_title != title:  # setting it repaints the whole list
            runs.border_title = title
        runs.show_runs(snap.runs, sel_dir, snap.deep_dirs_skipped, self.colours(self.marks))
        self.gpu_pane.show(snap.gpus, snap.system, snap.runs, snap.setup, snap.generated_at)
        self.cost_strip.show(snap.cost)
        if self.idle_banner.show(snap.cost, snap.gpus):
            self.bell()  # once, when the idle banner appears
        self.autostop_line.show(snap.cost, snap.autostop)
        top = self.screen_stack[-1] if self.screen_stack else None  # empty while closing
        if isinstance(top, CostScreen):
            top.update_cost(snap)
        message = self.refresh_error or snap.problem
        self.run_header.show(
            snap.selected_run,
            snap.generated_at,
            message,
            snap.selected.pushes if snap.selected else None,
            simulated=snap.gpus is not None and snap.gpus.simulated,
        )
        run = snap.selected_run
        self.metrics_pane.show(
            snap.selected.metrics if snap.selected else None, run.state if run else None
        )
        self.log_pane.show(snap.selected.log if snap.selected else None)
        self.main_box.share()  # the metrics' rows and the log's, for what each has now
        self.show_charts()

    # -- actions -----------------------------------------------------------

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        run_dir = event.option.id
        if run_dir and run_dir != self.selected:
            self.selected = run_dir
            self.charts_changed()  # without marks, the charts follow the selected run
            self.request_refresh()

    def on_runs_list_marked(self, event: RunsList.Marked) -> None:
        why = self.toggle_mark(event.run_dir, self.marks)
        if why:
            self.notify(why, severity="warning", timeout=6)
        snap = self.snapshot
        if snap is not None:
            self.runs_list.show_runs(
                snap.runs, self.selected, snap.deep_dirs_skipped, self.colours(self.marks)
            )

    # -- the charts (actions.charts) -----------------------------------------------

    def chart_keys(self) -> list[str]:
        """The runs the charts show: the marked ones, else the selected one."""
        return list(self.marks) or ([self.selected] if self.selected else [])

    def charts_changed(self) -> None:
        """What the charts ask for changed: the next refresh builds it, now."""
        request = None
        if self.charts_wanted():
            request = ChartRequest.of(self.chart_keys(), self.chart_metrics())
        if request != self._chart_request:
            self._chart_request = request
            self.request_refresh()

    def colours(self, run_dirs: list[str]) -> dict[str, str]:
        """Each run's chart colour, by its name under the root (the same in any root)."""
        snap = self.snapshot
        names = []
        for run_dir in run_dirs:
            info = snap.run(run_dir) if snap is not None else None
            names.append(info.name if info is not None else run_dir)
        return run_colours(run_dirs, names)

    def shown_runs(self) -> list[ShownRun]:
        snap = self.snapshot
        if snap is None:
            return []
        keys = self.chart_keys()
        colours = self.colours(keys)
        shown = (shown_run(key, key, snap, colours[key]) for key in keys)
        return [run for run in shown if run is not None]

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_cost(self) -> None:
        self.push_screen(CostScreen(self.snapshot, self.settings))

    def action_autostop(self) -> None:
        """`a`: cancel the watcher's autostop for this session, or turn it back on."""
        self.notify(self.autostop_line.toggle(), title="autostop", timeout=10)

    def action_metrics_page(self) -> None:
        if self.charts_open:
            self.chart_page()
        else:
            self.metrics_pane.next_page()
