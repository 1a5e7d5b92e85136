"""`rgpu-tui fleet`: every machine in one terminal. A hosts table, live as each host's
agent sends its lines; `enter` opens a host's full view (tui.fleet.host_screen), `esc`
comes back, `q` quits.

The links (core.fleet.fleet.HostLink, one ssh each) read on threads of their own and call
`on_change`; here that turns the host's Snapshot JSON into dataclasses
(core.fleet.fleet_summary.read_snapshot, on the link's thread, only when the document changed) and
posts a HostChanged. The UI thread only hands the table and the open host screen what
changed; it never waits on a link. A command's Future calls back on the link's thread
and posts its answer the same way (tui.fleet.remote).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from ...core.fleet.fleet_summary import read_snapshot, summarize
from .. import compat
from ..app_rules import AppRules
from ..screens.dialogs import ReportScreen
from ..screens.runs_view import RunsView
from ..widgets.footer import KeysFooter
from .charts import FleetCharts
from .host_screen import HostRuns
from .messages import HostChanged, HostView
from .remote import FleetCommands
from .table import HostsTable

APP_TCSS = Path(__file__).resolve().parent.parent / "app.tcss"  # the panes' layout
TICK_S = 1.0

HELP = """\
[b]rgpu-tui fleet[/b] — every machine of the config's hosts, over your own SSH

[b]Hosts table[/b]
  ↑/↓  j/k   move between hosts
  enter      open the host: its GPUs, money, runs, metrics and log
  q          quit (the agents end; runs keep training)

[b]A host's full view[/b] (the app's panes, fed by that host's agent)
  ↑/↓ enter  show another run of that host
  m          next page of metrics (in the charts: the next panels)
  v          charts of the run, or of the runs marked on every host
  space      mark the highlighted run to compare (up to 6, any host)
  t          compare the marked runs: best, time, cost, what differs
  e y x      charts: smoothing, y-axis, x-axis; ←/→ epoch cursor; / a metric
  p / P      push best.pt / pick a file: the host pushes with its own token
  s          stop the selected run on the host
  r          resume a DEAD, FAILED or STOPPED run on the host
  c n g a    cost, launch, GPU check, autostop: done on the host itself
             (a notice says how)
  ctrl+p     every key of this screen, searchable
  esc        back to the hosts table

A host that does not answer shows since when and ssh's own line;
its link is tried again after 1 s, 2 s, 4 s ... up to 60 s.
"""


class FleetApp(AppRules, FleetCommands, FleetCharts, App[int]):
    CSS_PATH = [str(APP_TCSS)]
    CSS = """
    #hosts-box { height: 1fr; }
    #fleet-title { height: 1; padding: 0 1; background: $primary-background; }
    """
    TITLE = "rgpu-tui fleet"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(
        self,
        make_fleet: Callable[[Callable], object],
        *,
        clock: Callable[[], float] = time.time,
        theme_name: str | None = None,
    ) -> None:
        """`make_fleet(on_change)`: the links (a core.fleet.fleet.Fleet, or anything with
        `links`, `start()`), each calling on_change(link) from its own thread."""
        fast_paths = compat.install()
        super().__init__(driver_class=compat.driver_class(fast_paths))
        self.fast_paths = fast_paths
        self.clock = clock
        self._converted: dict[str, tuple] = {}  # host -> (document, Snapshot, error)
        self._converting = threading.Lock()
        self.fleet = make_fleet(self._link_changed)
        self.links = {link.name: link for link in self.fleet.links}
        self.views: dict[str, HostView] = {}
        self.host_screen: RunsView | None = None  # the open host's run view
        self._pushes: dict[str, int] = {}
        self._stop_screen: ReportScreen | None = None
        self.init_charts()
        if theme_name:
            if theme_name not in self.available_themes:
                names = ", ".join(sorted(self.available_themes))
                raise ValueError(f"unknown theme {theme_name!r}; one of: {names}")
            self.theme = theme_name

    def compose(self) -> ComposeResult:
        self.title_bar = Static(self._title_text(), id="fleet-title", markup=False)
        self.table = HostsTable(clock=self.clock, id="hosts")
        yield self.title_bar
        yield self.table
        yield KeysFooter()

    def _title_text(self) -> str:
        n = len(self.links)
        return f"rgpu-tui fleet: {n} host{'s' if n != 1 else ''}   enter: open   ?: help"

    def on_mount(self) -> None:
        self.table.focus()
        self._set_layout(self.size)
        self._show_table()
        self.set_interval(TICK_S, self._tick)
        self.fleet.start()

    def link(self, host: str):
        return self.links.get(host)

    # -- from the links --------------------------------------------------------------

    def _link_changed(self, link) -> None:
        """On the link's thread: its state, the snapshot read once per new document."""
        state = link.state()
        doc = state.snapshot
        with self._converting:
            cached = self._converted.get(link.name)
        if cached is not None and cached[0] is doc:
            snap, error = cached[1], cached[2]
        else:
            snap, error = read_snapshot(doc)
            if snap is None and doc is not None and cached is not None:
                snap = cached[1]  # keep the last good one on screen
            with self._converting:
                self._converted[link.name] = (doc, snap, error)
        self.post_from_thread(HostChanged(HostView(state, snap, error)))

    def post_from_thread(self, message) -> None:
        """post_message from a link's thread: quiet when the app has ended (a link that
        drops while the fleet closes fails its pending commands then)."""
        try:
            self.post_message(message)
        except RuntimeError:  # the event loop is closed
            pass

    def on_host_changed(self, message: HostChanged) -> None:
        view = message.view
        self.views[view.name] = view
        if self.host_screen is None:  # a widget of a screen underneath, refreshed, repaints
            self._show_table()  # the whole screen on top (measured): it waits for `esc`
        screen = self.host_screen
        if screen is not None and screen.host == view.name and screen.is_mounted:
            screen.source.update(view)
        elif screen is not None and screen.is_mounted and screen.charts_wanted():
            screen.show_charts()  # a run marked on this other host may be in its charts
        self.sync_charts()  # after a reconnect its chart command goes again

    def _show_table(self) -> None:
        hosts = []
        for name, link in self.links.items():
            view = self.views.get(name)
            if view is None:
                view = HostView(link.state(), None)
            hosts.append(summarize(view.state, view.snapshot, view.error))
        self.table.show(hosts)

    def _tick(self) -> None:
        if self.host_screen is None:
            self.table.tick()
        elif self.host_screen.is_mounted:
            self.host_screen.source.tick()

    # -- keys ------------------------------------------------------------------------

    def on_hosts_table_opened(self, message: HostsTable.Opened) -> None:
        self.open_host(message.name)

    def open_host(self, name: str) -> None:
        if name not in self.links:
            return
        view = self.views.get(name)
        source = HostRuns(self, name, view, clock=self.clock)
        screen = RunsView(source, fast_log=self.fast_paths.on(compat.LOG))
        self.host_screen = screen

        def closed(_result=None) -> None:
            if self.host_screen is screen:
                self.host_screen = None
                self._show_table()  # what changed while the host's view was open
                self.sync_charts()  # no view: no host carries charts

        self.push_screen(screen, closed)

    def action_help(self) -> None:
        self.push_screen(ReportScreen("help", HELP, markup=True))
