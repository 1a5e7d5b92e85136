"""A host's full view in the fleet: the run view (tui.screens.runs_view) with one fleet
host as its run source (HostRuns), fed by the host's agent instead of a local refresh.

The fleet app hands the source each new state of its host (`update`); the view shows it
as the local app's does. The agent carries one run's metrics, log tail, checkpoints and
pushes: the one the view selects (`select`, sent again after a reconnect, and `select null`
when the view closes, so the hosts table costs the link what it did). The keys p, P, s and
r act on that machine through the agent (tui.fleet.remote); the confirm dialogs are the
view's, the same as the local ones. `c`, `n`, `g` and `a` are the machine's own: this source
answers each with a notice saying how to do that on the machine itself. The chart view (`v`)
draws the charts the agents carry while it is open (tui.fleet.charts): the runs marked with
space on any host, else this host's run on screen.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual.binding import Binding

from ...core.base.formatting import fmt_duration
from ...core.base.text import printable
from ...core.hub.push import PushRequest
from ...core.model.snapshot import RunInfo, SelectedRun, Snapshot
from ..screens.dialogs import ConfirmScreen
from ..screens.runs_view import CHART_KEYS, RunsView
from ..widgets.cost import CostStrip, strip_text
from ..widgets.lines import LinePane, cut_words
from .messages import HostView

COST_HINT = "  (c: cost)"  # the local strip's pointer to `c`, which a host view has not
# a host view's keys, in footer order: the agent carries out select, push, stop and resume
# only (core.fleet.agent); `c`, `n`, `g` and `a` are the machine's own (HostRuns says where)
HOST_KEYS = [
    Binding("escape", "back", "Hosts"),
    Binding("m", "metrics_page", "Metrics"),
    Binding("p", "push", "Push"),
    Binding("P", "push_pick", "Push…", show=False),
    Binding("s", "stop", "Stop"),
    Binding("r", "resume", "Resume"),
    Binding("c", "cost", "Cost", show=False),
    Binding("n", "launch", "New run", show=False),
    Binding("g", "preflight", "GPU check", show=False),
    Binding("a", "autostop", "Autostop", show=False),
    *CHART_KEYS,
]


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

    def show(self, cost, plan) -> None:
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


class HostRuns:
    """One fleet host as the run view's source: `app` is the FleetApp (its links, marks,
    charts and commands); `view` the host's newest HostView (None before its first)."""

    rings = False  # the terminal is not at that machine

    def __init__(self, app, host: str, view: HostView | None, *, clock) -> None:
        self.app = app
        self.host = host
        self.state_view = view
        self.clock = clock
        self.view: RunsView | None = None
        self._sent: tuple | None = None  # (connection, run) of the last select sent

    def keys(self) -> list[Binding]:
        return HOST_KEYS

    def head(self) -> list:
        self.host_bar = HostBar(self.host, self.clock, id="host-bar")
        return [self.host_bar]

    def autostop_pane(self) -> HostAutostopLine:
        self.autostop_line = HostAutostopLine(self.host, self.clock, id="autostop")
        return self.autostop_line

    def cost_pane(self) -> HostCostStrip:
        return HostCostStrip(self.host, id="cost")

    def attach(self, view: RunsView) -> None:
        self.view = view

    def mounted(self) -> None:
        self.update(self.state_view)

    @property
    def snapshot(self) -> Snapshot | None:
        return self.state_view.snapshot if self.state_view is not None else None

    # -- the host's states ------------------------------------------------------------

    def update(self, view: HostView | None) -> None:
        """The host's newest state: the host bar, and the run view shows its snapshot."""
        self.state_view = view
        self.host_bar.show(view)
        snap = self.snapshot
        if snap is None:
            why = view.error if view is not None else None
            state = view.state if view is not None else None
            if why is None and state is not None and state.error and not state.reachable:
                why = f"{self.host} is not reachable: {state.error}"
            self.view.show_waiting(self.clock(), why or f"waiting for {self.host}…")
            return
        self.view.show(snap)
        self._select(view.state)
        self.view.log_later()

    def tick(self) -> None:
        """The clock moved: "unreachable for" and the autostop countdown age."""
        view = self.state_view
        if view is not None and not view.state.reachable:
            self.host_bar.repaint_rows()
        self.autostop_line.tick()

    def default_run(self, snap: Snapshot) -> str | None:
        return snap.runs[0].run_dir if snap.runs else None  # the newest, as the app does

    def highlight(self, snap: Snapshot, selected: str | None) -> str | None:
        return selected

    def shown_run(self, snap: Snapshot, selected: str | None) -> RunInfo | None:
        return snap.run(selected)

    def details(self, snap: Snapshot, selected: str | None) -> SelectedRun | None:
        """The details the agent sent, when they are the selected run's."""
        if snap.selected is None or snap.selected.run_dir != selected:
            return None
        return snap.selected

    def message(self, snap: Snapshot, run, details) -> str | None:
        view = self.state_view
        if run is not None and details is None and view.state.reachable:
            return f"fetching its metrics and log from {self.host}…"
        return view.error or snap.problem

    def picked(self, run_dir: str) -> None:
        if self.state_view is not None:
            self.update(self.state_view)

    def _select(self, state) -> None:
        """Ask the agent for the selected run's details, once per connection and run."""
        selected = self.view.selected
        if not state.reachable or (self._sent is None and selected is None):
            return  # down, or nothing to ask for (the agent starts with no run selected)
        key = (state.connects, selected)
        if key != self._sent:
            self._sent = key
            self.app.send_command(self.host, {"cmd": "select", "run": selected}, "select")

    def closed(self) -> None:
        """The view closes: the agent goes back to no run's details."""
        if self._sent is not None and self._sent[1] is not None:
            self.app.send_command(self.host, {"cmd": "select", "run": None}, "select")
        self._sent = None

    # -- marks and charts (the marks and the agents' charts: fleet.charts) -------------

    def toggle_mark(self, run_dir: str) -> str | None:
        return self.app.toggle_mark(self.host, run_dir)

    def prune_marks(self, snap: Snapshot) -> bool:
        return False  # a fleet's marks stay while it runs (a host may come back)

    def mark_colours(self, snap: Snapshot) -> dict[str, str]:
        return self.app.host_marks(self.host)

    def shown_runs(self):
        return self.app.shown_runs_for()

    def charts_changed(self) -> None:
        if self.view is not None and self.view.is_mounted:
            self.app.sync_charts()

    # -- keys -------------------------------------------------------------------------

    def no_details(self, snap, selected) -> str:
        """`p` and `P` push the selected run's files, as the agent last listed them."""
        run = snap.run(selected) if snap is not None else None
        return "No run selected." if run is None else f"{run.name}: its files are on the way."

    def push_choices(self, sel: SelectedRun):
        """`P`: one of the run's checkpoints, as the agent listed them (the artifacts'
        own target is not in the snapshot: `rgpu-tui push RUN --file artifacts` there)."""
        choices = [(c.name, c.name) for c in sel.checkpoints]
        if not choices:
            name = os.path.basename(sel.run_dir)
            self.app.notify(
                f"{name} has no checkpoint in weights/ on {self.host}.", severity="warning"
            )
            return None
        return "push which file?", choices, None

    def submit_push(self, req: PushRequest) -> None:
        """The confirm dialog said yes: the agent pushes with that machine's token."""
        self.app.send_push(self.host, req, os.path.basename(req.run_dir))

    def stop(self, run: RunInfo) -> None:
        body = Text()
        body.append(f"Stop {printable(run.name)} (pid {run.pid}) on ", style="bold")
        body.append(f"{printable(self.host)}?\n", style="bold")
        body.append(
            "SIGINT now (libreyolo records failed/KeyboardInterrupt and keeps its last "
            "checkpoint), then SIGTERM and SIGKILL after that machine's stop_term_after and "
            "stop_kill_after. Push its weights first if they matter."
        )
        host, run_dir, name = self.host, run.run_dir, run.name

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.send_stop(host, run_dir, name)

        self.app.push_screen(ConfirmScreen("stop a run", body, "enter: stop"), answered)

    def resume(self, run: RunInfo) -> None:
        """The agent checks first (its plan comes back to the confirm dialog)."""
        cmd = {"cmd": "resume", "run": run.run_dir, "check": True}
        self.app.send_command(self.host, cmd, "resume-check", run.name)

    def _elsewhere(self, text: str) -> None:
        self.app.notify(text, title=self.host, timeout=10)

    def launch(self) -> None:
        self._elsewhere(
            f"Launching is not done through the fleet: on {self.host}, `rgpu-tui launch` or "
            "`n` in its app."
        )

    def cost(self) -> None:
        self._elsewhere(
            f"The cost details of {self.host} come from its own settings: `rgpu-tui cost` "
            "there (the strip above shows its spent, run and per-epoch money)."
        )

    def preflight(self) -> None:
        self._elsewhere(
            f"The GPU check runs torch on the machine itself: `rgpu-tui preflight` on {self.host}."
        )

    def autostop(self) -> None:
        self._elsewhere(
            f"Autostop is {self.host}'s own: `a` in its app, or `rgpu-tui watch "
            "--no-autostop` there, holds it."
        )
