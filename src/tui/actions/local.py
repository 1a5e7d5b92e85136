"""This machine as a run source (tui.screens.run_source) for the run view: fed by the app's
refresh loop (core's Collector, tui.app), acting through core's calls (tui.actions.runs,
tui.actions.push). Its marks are run directories of this root, in marking order; the charts
it asks the next refresh for are the marked runs, else the selected one.
"""

from __future__ import annotations

from textual.binding import Binding

from ...core.base.config import config_file_for
from ...core.hub.push import PushRequest
from ...core.model.snapshot import RunInfo, SelectedRun, Snapshot
from ...core.picture.charts import MAX_RUNS, ChartRequest
from ...core.render.chart_layout import ShownRun, run_colours, shown_run
from ...core.run.checkpoints import validity_text
from ...core.run.hub_target import ARTIFACTS_REQUEST
from ..screens.cost import CostScreen
from ..screens.runs_view import CHART_KEYS, RunsView
from ..widgets.autostop import AutostopLine
from ..widgets.cost import CostStrip
from .push import LocalPushes
from .runs import LocalRunActions

# the local view's keys, in footer order (q and ? are the app's: here first, as the footer
# has always shown them)
LOCAL_KEYS = [
    Binding("q", "app.quit", "Quit"),
    Binding("question_mark", "app.help", "Help", key_display="?"),
    Binding("m", "metrics_page", "Metrics"),
    Binding("c", "cost", "Cost"),
    Binding("p", "push", "Push"),
    Binding("P", "push_pick", "Push…", show=False),
    Binding("n", "launch", "New run"),
    Binding("s", "stop", "Stop"),
    Binding("r", "resume", "Resume", show=False),
    Binding("g", "preflight", "GPU check"),
    Binding("a", "autostop", "Autostop", show=False),
    *CHART_KEYS,
]


class LocalRuns:
    """The local run source: `app` is the RgpuApp (its snapshot, settings, collector,
    push queue, request_refresh)."""

    host = None
    rings = True

    def __init__(self, app) -> None:
        self.app = app
        self.view: RunsView | None = None
        self.marks: list[str] = []  # runs marked to compare (space), in marking order
        self.chart_request: ChartRequest | None = None  # what the next refresh builds
        self.follow_pid: int | None = None  # a run we launched: select it when it appears
        self.pushes = LocalPushes(app)
        self.actions = LocalRunActions(app, self._follow)

    def keys(self) -> list[Binding]:
        return LOCAL_KEYS

    def head(self) -> list:
        return []

    def autostop_pane(self) -> AutostopLine:
        app = self.app
        return AutostopLine(
            app.root_arg, app.settings, hold=app.no_autostop, clock=app.clock, id="autostop"
        )

    def cost_pane(self) -> CostStrip:
        return CostStrip(config_file_for(self.app.settings), id="cost")

    def attach(self, view: RunsView) -> None:
        self.view = view

    def mounted(self) -> None:
        self.app.start()  # the first snapshot comes from the app's first refresh

    def closed(self) -> None:
        pass

    # -- the refresh's results ------------------------------------------------------------

    def _follow(self, pid: int) -> None:
        self.follow_pid = pid

    def follow(self, snap: Snapshot) -> None:
        """A run we launched or resumed: the view selects it once it appears."""
        if self.follow_pid is None:
            return
        for r in snap.runs:
            if r.pid == self.follow_pid:
                if r.state != "starting":
                    self.follow_pid = None  # found its real run directory
                if self.view.selected != r.run_dir:
                    self.view.selected = r.run_dir
                    self.app.request_refresh()
                break

    def default_run(self, snap: Snapshot) -> str | None:
        return snap.selected.run_dir if snap.selected else None

    def highlight(self, snap: Snapshot, selected: str | None) -> str | None:
        return snap.selected.run_dir if snap.selected else None

    def shown_run(self, snap: Snapshot, selected: str | None) -> RunInfo | None:
        return snap.selected_run  # the run the refresh built the details of

    def details(self, snap: Snapshot, selected: str | None) -> SelectedRun | None:
        return snap.selected

    def message(self, snap: Snapshot, run, details) -> str | None:
        return self.app.refresh_error or snap.problem

    def picked(self, run_dir: str) -> None:
        self.app.request_refresh()

    # -- marks and charts -----------------------------------------------------------------

    def toggle_mark(self, run_dir: str) -> str | None:
        marks = self.marks
        if run_dir in marks:
            marks.remove(run_dir)
        elif len(marks) >= MAX_RUNS:
            return f"at most {MAX_RUNS} runs are compared: unmark one first (space)"
        else:
            marks.append(run_dir)
        return None

    def prune_marks(self, snap: Snapshot) -> bool:
        there = {r.run_dir for r in snap.runs}
        if all(m in there for m in self.marks):
            return False
        self.marks = [m for m in self.marks if m in there]  # a marked run is gone
        return True

    def mark_colours(self, snap: Snapshot) -> dict[str, str]:
        return self.colours(self.marks)

    def chart_keys(self) -> list[str]:
        """The runs the charts show: the marked ones, else the selected one."""
        selected = self.view.selected
        return list(self.marks) or ([selected] if selected else [])

    def charts_changed(self) -> None:
        """What the charts ask for changed: the next refresh builds it, now."""
        view = self.view
        request = None
        if view.charts_wanted():
            request = ChartRequest.of(self.chart_keys(), view.chart_metrics())
        if request != self.chart_request:
            self.chart_request = request
            self.app.request_refresh()

    def colours(self, run_dirs: list[str]) -> dict[str, str]:
        """Each run's chart colour, by its name under the root (the same in any root)."""
        snap = self.app.snapshot
        names = []
        for run_dir in run_dirs:
            info = snap.run(run_dir) if snap is not None else None
            names.append(info.name if info is not None else run_dir)
        return run_colours(run_dirs, names)

    def shown_runs(self) -> list[ShownRun]:
        snap = self.app.snapshot
        if snap is None:
            return []
        keys = self.chart_keys()
        colours = self.colours(keys)
        shown = (shown_run(key, key, snap, colours[key]) for key in keys)
        return [run for run in shown if run is not None]

    # -- the keys -------------------------------------------------------------------------

    def no_details(self, snap, selected) -> str:
        return "No run selected."

    def push_choices(self, sel: SelectedRun):
        """`P`: best.pt, last.pt, an epoch_N.pt, or the small artifacts only (the selected
        run's checkpoints, as the last Snapshot lists them)."""
        width = max((len(c.name) for c in sel.checkpoints), default=0)
        choices = [(c.name, f"{c.name:<{width}}  {validity_text(c)}") for c in sel.checkpoints]
        choices.append((ARTIFACTS_REQUEST, "small artifacts only (status, metrics, config)"))
        title = "push which file?"
        if sel.checkpoints_not_listed:
            title += f" ({sel.checkpoints_not_listed} older not listed)"
        return title, choices, sel.push_default

    def submit_push(self, req: PushRequest) -> None:
        self.pushes.submit(req)

    def stop(self, run: RunInfo) -> None:
        self.actions.stop(run)

    def resume(self, run: RunInfo) -> None:
        self.actions.resume(run)

    def launch(self) -> None:
        snap = self.app.snapshot
        self.actions.launch(snap.selected_run if snap else None, snap.runs if snap else ())

    def cost(self) -> None:
        self.app.push_screen(CostScreen(self.app.snapshot, self.app.settings))

    def preflight(self) -> None:
        self.actions.preflight()

    def autostop(self) -> None:
        self.app.notify(self.view.autostop_line.toggle(), title="autostop", timeout=10)
