"""A host's full view in the fleet: the local app's panes (GPUs, cost strip, runs list,
run header, metrics, log), fed by the host's agent instead of a local refresh.

The screen gets each new state of its host from the fleet app (`show_host`) and hands
each pane its slice, as the local app does; a pane repaints only when its slice
changed. The agent carries one run's metrics, log tail, checkpoints and pushes: the
one this screen selects (`select`, sent again after a reconnect, and `select null`
when the screen closes, so the hosts table costs the link what it did). The keys
p, P, s and r act on that machine through the agent (tui.fleet.remote); the
confirm dialogs are the local app's. The local app's c, n, g and a each answer with a
notice saying how to do that on the machine itself.
confirm dialogs are the local app's. The chart view (`v`, tui.actions.charts) draws the
charts the agents carry while it is open (tui.fleet.charts): the runs marked with space
on any host, else this host's run on screen.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import OptionList

from ...core.base.formatting import fmt_duration
from ...core.base.text import printable
from ...core.hub.push import PushRequest
from ...core.model.snapshot import RunInfo, SelectedRun, Snapshot
from ..actions.charts import CHART_BINDINGS, ChartActions
from ..actions.push import PushActions
from ..screens.dialogs import PickScreen
from ..widgets.cost import CostStrip, IdleBanner, strip_text
from ..widgets.footer import KeysFooter
from ..widgets.gpus import GpuPane
from ..widgets.lines import LinePane, cut_words
from ..widgets.push_bar import PushBar
from ..widgets.run_panes import compose_run_panes
from ..widgets.runs_list import RunsList
from .messages import HostView
from .remote import RemoteRunActions

COST_HINT = "  (c: cost)"  # the local strip's pointer to `c`, which a host view has not
# what the local app's `c`, `n`, `g` and `a` say here: the agent carries out select, push,
# stop and resume only (core.fleet.agent); the rest is done on the machine itself
NOT_HERE = {
    "cost": "The cost details of {host} come from its own settings: `rgpu-tui cost` there "
    "(the strip above shows its spent, run and per-epoch money).",
    "launch": "Launching is not done through the fleet: on {host}, `rgpu-tui launch` or `n` "
    "in its app.",
    "preflight": "The GPU check runs torch on the machine itself: `rgpu-tui preflight` on {host}.",
    "autostop": "Autostop is {host}'s own: `a` in its app, or `rgpu-tui watch --no-autostop` "
    "there, holds it.",
}


class HostBar(LinePane):
    """Which host this is, and whether what the panes show is live."""

    DEFAULT_CSS = """
    HostBar {
        height: 1; padding: 0 1; background: $primary-background;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, host: str, clock, **kwargs) -> None:
        super().__init__(**kwargs)
        self.host = host
        self.clock = clock
        self.view: HostView | None = None

    def show(self, view: HostView | None) -> None:
        self.view = view
        self.repaint_rows()

    def build_rows(self, width: int) -> list[Text]:
        row = Text(no_wrap=True, overflow="ellipsis")
        row.append(printable(self.host), style="bold")
        view = self.view
        state = view.state if view is not None else None
        if state is None or (not state.reachable and not state.settled):
            row.append("  connecting…", style="dim")
        elif state.reachable:
            row.append("  reachable", style="green")
            if state.version:
                row.append(f"  rgpu-tui {printable(state.version)}", style="dim")
            row.append(f"  {printable(state.root)}", style="dim")
        else:
            since = fmt_duration(self.clock() - state.since) if state.since else "?"
            row.append(f"  unreachable for {since}: ", style="bold red")
            row.append(printable(state.error or "?"), style="red")
            if view.snapshot is not None:
                row.append("  (its last snapshot below)", style="dim")
        if view is not None and view.error:
            row.append("  " + printable(view.error), style="bold red")
        return [row]


class HostAutostopLine(LinePane):
    """The host's autostop plan (what its `rgpu-tui watch` will do), as the app's own
    autostop line says it; hidden when the host's snapshot carries none. Cancelling is
    the machine's: `a` in its app, or `rgpu-tui watch --no-autostop` there."""

    DEFAULT_CSS = """
    HostAutostopLine {
        height: 1; padding: 0 1; display: none;
        background: $warning-darken-2; color: $text;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    HostAutostopLine.-on { display: block; }
    """

    def __init__(self, host: str, clock, **kwargs) -> None:
        super().__init__(**kwargs)
        self.host = host
        self.clock = clock
        self.plan = None

    def show(self, plan) -> None:
        self.plan = plan
        self.set_class(plan is not None, "-on")
        self.repaint_rows()

    def tick(self) -> None:
        if self.plan is not None and self.plan.phase == "counting":
            self.repaint_rows()

    def build_rows(self, width: int) -> list[Text]:
        plan = self.plan
        if plan is None:
            return [Text()]
        message = plan.message
        if plan.phase == "counting":
            left = plan.fires_at - self.clock() if plan.fires_at is not None else None
            when = f"in {fmt_duration(left)}" if left is not None else "soon"
            text = f"autostop {when}: {message}"
        elif plan.phase in ("held", "checking", "pushing"):
            text = message if message.startswith("autostop") else f"autostop due: {message}"
        elif plan.phase == "running":
            text = f"autostop: {message}"
        else:  # ran, failed, held_by_app: what the watcher says
            text = message or f"autostop: {plan.phase}"
        return [cut_words(Text(printable(f"{text} (on {self.host})"), no_wrap=True), width)]


class HostCostStrip(CostStrip):
    """The local cost strip, less its pointer to `c` (the cost details are computed
    with the machine's own settings: `rgpu-tui cost` there); with no price, where a
    fleet sets one."""

    def __init__(self, host: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.host = host

    def build_rows(self, width: int) -> list[Text]:
        cost = self._cost
        if cost is not None and not cost.configured:
            row = Text(
                f"No price for {self.host}: set price_per_hour in its [[hosts]] table "
                "or its config",
                style="italic",
            )
            return [cut_words(row, width)]
        row = strip_text(cost)
        if row.plain.endswith(COST_HINT):
            row.right_crop(len(COST_HINT))
        return [cut_words(row, width, sep="  ")]


class HostScreen(RemoteRunActions, PushActions, ChartActions, Screen):
    BINDINGS = [
        Binding("escape", "back", "Hosts"),
        Binding("m", "metrics_page", "Metrics"),
        Binding("p", "push", "Push"),
        Binding("P", "push_pick", "Push…", show=False),
        Binding("s", "stop", "Stop"),
        Binding("r", "resume", "Resume"),
        # the local app's keys that act on this machine only: each says where to do it
        Binding("c", "not_here('cost')", "Cost", show=False),
        Binding("n", "not_here('launch')", "New run", show=False),
        Binding("g", "not_here('preflight')", "GPU check", show=False),
        Binding("a", "not_here('autostop')", "Autostop", show=False),
        *CHART_BINDINGS,
    ]

    def __init__(self, host: str, view: HostView | None, *, clock, fast_log: bool) -> None:
        super().__init__()
        self.host = host
        self.view = view
        self.clock = clock
        self.fast_log = fast_log
        self.wanted: str | None = None  # the run this screen shows (and the agent carries)
        self._sent: tuple | None = None  # (connection, run) of the last select sent
        self._log_timer = None

    # -- the panes, as the local app has them -----------------------------------------

    def compose(self) -> ComposeResult:
        self.host_bar = HostBar(self.host, self.clock, id="host-bar")
        self.idle_banner = IdleBanner(id="idle")
        self.autostop_line = HostAutostopLine(self.host, self.clock, id="autostop")
        self.gpu_pane = GpuPane(id="gpus")
        self.cost_strip = HostCostStrip(self.host, id="cost")
        self.push_bar = PushBar(id="push")
        yield self.host_bar
        yield self.idle_banner
        yield self.autostop_line
        yield self.gpu_pane
        yield self.cost_strip
        yield self.push_bar
        yield from compose_run_panes(self, fast_log=self.fast_log)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.runs_list.focus()
        self.show_host(self.view)

    def on_unmount(self) -> None:
        self.deselect()

    @property
    def snapshot(self) -> Snapshot | None:
        return self.view.snapshot if self.view is not None else None

    def show_host(self, view: HostView | None) -> None:
        """The host's newest state: each pane its slice; the selection kept in step."""
        self.view = view
        self.host_bar.show(view)
        snap = self.snapshot
        if snap is None:
            why = view.error if view is not None else None
            state = view.state if view is not None else None
            if why is None and state is not None and state.error and not state.reachable:
                why = f"{self.host} is not reachable: {state.error}"
            self.run_header.show(None, self.clock(), why or f"waiting for {self.host}…")
            return
        runs = snap.runs
        if self.wanted not in {r.run_dir for r in runs}:
            self.wanted = runs[0].run_dir if runs else None  # the newest, as the app does
            self.charts_changed()
        self._select(view.state)
        sel = self.selected_run()
        title = f"runs ({len(runs)})"
        if self.runs_list.border_title != title:
            self.runs_list.border_title = title
        self.runs_list.show_runs(
            runs, self.wanted, snap.deep_dirs_skipped, self.app.host_marks(self.host)
        )
        self.gpu_pane.show(snap.gpus, snap.system, runs, snap.setup, snap.generated_at)
        self.cost_strip.show(snap.cost)
        self.idle_banner.show(snap.cost, snap.gpus)
        self.autostop_line.show(snap.autostop)
        run = snap.run(self.wanted)
        message = view.error or snap.problem
        if run is not None and sel is None and view.state.reachable:
            message = f"fetching its metrics and log from {self.host}…"
        simulated = snap.gpus is not None and snap.gpus.simulated
        pushes = sel.pushes if sel else None
        self.run_header.show(run, snap.generated_at, message, pushes, simulated=simulated)
        self.metrics_pane.show(sel.metrics if sel else None, run.state if run else None)
        self.log_pane.show(sel.log if sel else None)
        self.main_box.share()
        self._log_later()
        self.show_charts()

    def tick(self) -> None:
        """The clock moved: "unreachable for" and the autostop countdown age."""
        if self.view is not None and not self.view.state.reachable:
            self.host_bar.repaint_rows()
        self.autostop_line.tick()

    def _log_later(self) -> None:
        """Lines the log pane holds back (one scroll per LOG_PERIOD) are shown when their
        time comes, not only with the host's next line."""
        held = self.log_pane.pending_in()
        if held is None or self._log_timer is not None:
            return

        def flush() -> None:
            self._log_timer = None
            sel = self.selected_run()
            self.log_pane.show(sel.log if sel else None)
            self.main_box.share()
            self._log_later()

        self._log_timer = self.set_timer(max(held, 0.05), flush)

    # -- the selected run -------------------------------------------------------------

    def selected_run(self) -> SelectedRun | None:
        """The details the agent sent, when they are the wanted run's."""
        snap = self.snapshot
        if snap is None or snap.selected is None or snap.selected.run_dir != self.wanted:
            return None
        return snap.selected

    def shown_run(self) -> RunInfo | None:
        snap = self.snapshot
        return snap.run(self.wanted) if snap is not None else None

    def _select(self, state) -> None:
        """Ask the agent for the wanted run's details, once per connection and run."""
        if not state.reachable or (self._sent is None and self.wanted is None):
            return  # down, or nothing to ask for (the agent starts with no run selected)
        key = (state.connects, self.wanted)
        if key != self._sent:
            self._sent = key
            self.app.send_command(self.host, {"cmd": "select", "run": self.wanted}, "select")

    def deselect(self) -> None:
        """The screen closes: the agent goes back to no run's details."""
        if self._sent is not None and self._sent[1] is not None:
            self.app.send_command(self.host, {"cmd": "select", "run": None}, "select")
        self._sent = None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        run_dir = event.option.id
        if run_dir and run_dir != self.wanted:
            self.wanted = run_dir
            self.charts_changed()
            if self.view is not None:
                self.show_host(self.view)

    def on_runs_list_marked(self, event: RunsList.Marked) -> None:
        why = self.toggle_mark((self.host, event.run_dir), self.app.marks)
        if why:
            self.notify(why, severity="warning", timeout=6)
        if self.view is not None:
            self.show_host(self.view)

    # -- the charts (actions.charts; the marks and the agents' charts: fleet.charts) --

    def shown_runs(self):
        return self.app.shown_runs_for()

    def charts_changed(self) -> None:
        if self.is_mounted:
            self.app.sync_charts()

    # -- keys -------------------------------------------------------------------------

    def action_not_here(self, key: str) -> None:
        """`c`, `n`, `g`, `a`: the local app's keys, which the agent does not carry out: one
        notice saying where they are done."""
        why = NOT_HERE.get(key)
        if why is not None:
            self.notify(why.format(host=self.host), title=self.host, timeout=10)

    def action_back(self) -> None:
        self.deselect()
        self.dismiss()

    def action_metrics_page(self) -> None:
        if self.charts_open:
            self.chart_page()
        else:
            self.metrics_pane.next_page()

    def push_screen(self, screen, callback=None) -> None:
        """What the push dialogs (actions.push) call on the app."""
        self.app.push_screen(screen, callback)

    def action_push_pick(self) -> None:
        """`P`: one of the run's checkpoints, as the agent listed them (the artifacts'
        own target is not in the snapshot: `rgpu-tui push RUN --file artifacts` there)."""
        sel = self._selected_run()
        if sel is None:
            return
        choices = [(c.name, c.name) for c in sel.checkpoints]
        if not choices:
            name = os.path.basename(sel.run_dir)
            self.notify(f"{name} has no checkpoint in weights/ on {self.host}.", severity="warning")
            return

        def picked(file: str | None) -> None:
            if file:
                self._confirm_push(sel, file)

        self.push_screen(PickScreen("push which file?", choices), picked)

    def _selected_run(self) -> SelectedRun | None:
        """`p` and `P` push the wanted run's files, as the agent last listed them."""
        sel = self.selected_run()
        if sel is None:
            run = self.shown_run()
            why = "No run selected." if run is None else f"{run.name}: its files are on the way."
            self.notify(why, severity="warning")
        return sel

    def _submit_push(self, req: PushRequest) -> None:
        """The confirm dialog said yes: the agent pushes with that machine's token."""
        self.app.send_push(self.host, req, os.path.basename(req.run_dir))
