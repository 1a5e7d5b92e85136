"""The Textual app: machine pane (GPUs, CPU, RAM, disk), runs list, run header,
metric sparklines, log tail.

One refresh loop: a thread worker builds the next Snapshot with core's
Collector and posts it; the app hands each pane its slice; a pane repaints
only when its slice changed. The next refresh is scheduled when the current
one has been applied, so a slow disk never piles refreshes up.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, OptionList

from ..core.collect import Collector
from ..core.config import Settings
from ..core.snapshot import Snapshot
from .messages import RefreshFailed, SnapshotReady
from .screens.cost import CostScreen
from .screens.help import HelpScreen
from .widgets.cost import CostStrip, IdleBanner
from .widgets.gpus import GpuPane
from .widgets.log_pane import LogPane
from .widgets.metrics import MetricsPane
from .widgets.run_header import RunHeader
from .widgets.runs_list import RunsList

WIDE_COLUMNS = 140
SHORT_ROWS = 32  # below this the metrics pane drops its border


class RgpuApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "rgpu-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("m", "metrics_page", "Metrics"),
        Binding("c", "cost", "Cost"),
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
    ) -> None:
        super().__init__()
        self.root_arg = root
        self.interval = interval
        self.clock = clock
        self.collector = Collector(
            root,
            fake_gpus=fake_gpus,
            fake_lose=fake_lose,
            interval=interval,
            log_keep=500,
            settings=settings,
        )
        self.selected: str | None = os.path.abspath(root)  # a run dir given as root
        self.snapshot: Snapshot | None = None
        self.refresh_error: str | None = None
        self._lock = threading.Lock()
        self._in_flight = False
        self._again = False
        if theme_name:
            if theme_name not in self.available_themes:
                names = ", ".join(sorted(self.available_themes))
                raise ValueError(f"unknown theme {theme_name!r}; one of: {names}")
            self.theme = theme_name

    def compose(self) -> ComposeResult:
        # the panes live on the default screen; keep references, since App.query_one looks
        # at the active screen, which is a dialog while one is open
        self.idle_banner = IdleBanner(id="idle")
        self.gpu_pane = GpuPane(id="gpus")
        self.cost_strip = CostStrip(id="cost")
        self.runs_list = RunsList(id="runs")
        self.runs_list.border_title = "runs"
        self.run_header = RunHeader(id="header")
        self.metrics_pane = MetricsPane(id="metrics")
        self.log_pane = LogPane(id="log")
        yield self.idle_banner
        yield self.gpu_pane
        yield self.cost_strip
        with Horizontal(id="body"):
            yield self.runs_list
            with Vertical(id="main"):
                yield self.run_header
                yield self.metrics_pane
                yield self.log_pane
        yield Footer()

    def on_mount(self) -> None:
        self.runs_list.focus()
        self._set_layout(self.size)
        self.request_refresh()

    def on_resize(self, event) -> None:
        self._set_layout(event.size)

    def on_unmount(self) -> None:
        with self._lock:  # a refresh in flight finishes first
            self.collector.close()

    def _set_layout(self, size) -> None:
        self.set_class(size.width >= WIDE_COLUMNS, "-wide")
        self.set_class(size.height < SHORT_ROWS, "-short")

    # -- the refresh loop --------------------------------------------------

    def request_refresh(self) -> None:
        """Start a refresh now, or right after the one in flight."""
        if self._in_flight:
            self._again = True
            return
        self._in_flight = True
        self._build_snapshot(self.selected)

    @work(thread=True, group="refresh")
    def _build_snapshot(self, selected: str | None) -> None:
        try:
            with self._lock:
                snap = self.collector.refresh(now=self.clock(), selected=selected)
        except Exception as exc:  # a reader bug must not take the UI down
            self.post_message(RefreshFailed(f"{type(exc).__name__}: {exc}"))
            return
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
        self._in_flight = False
        if self._again:
            self._again = False
            self.request_refresh()
        else:
            self.set_timer(self.interval, self.request_refresh)

    def apply_snapshot(self, snap: Snapshot) -> None:
        self.snapshot = snap
        sel_dir = snap.selected.run_dir if snap.selected else None
        if self.selected not in {r.run_dir for r in snap.runs}:
            self.selected = sel_dir
        runs = self.runs_list
        runs.border_title = f"runs ({len(snap.runs)})"
        runs.show_runs(snap.runs, sel_dir)
        self.gpu_pane.show(snap.gpus, snap.system, snap.runs, snap.generated_at)
        self.cost_strip.show(snap.cost)
        if self.idle_banner.show(snap.cost):
            self.bell()  # once, when the idle banner appears
        if isinstance(self.screen, CostScreen):
            self.screen.update_cost(snap.cost, snap.generated_at)
        message = self.refresh_error or snap.problem
        self.run_header.show(snap.selected_run, snap.generated_at, message)
        self.metrics_pane.show(snap.selected.metrics if snap.selected else None)
        self.log_pane.show(snap.selected.log if snap.selected else None)

    # -- actions -----------------------------------------------------------

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        run_dir = event.option.id
        if run_dir and run_dir != self.selected:
            self.selected = run_dir
            self.request_refresh()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_cost(self) -> None:
        snap = self.snapshot
        self.push_screen(CostScreen(snap.cost if snap else None, snap.generated_at if snap else 0))

    def action_metrics_page(self) -> None:
        self.metrics_pane.next_page()
