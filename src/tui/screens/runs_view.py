"""The run view: the machine's panes (GPUs, cost strip, idle banner, autostop line, push
bar), the runs list, and the selected run's header, metrics and log, or the charts.

One screen for the local app (its default screen, tui.app) and for a fleet host's full view
(pushed by tui.fleet.app). What it shows comes from a *run source* (tui.screens.run_source:
the local collector, or one host's agent link) as a Snapshot handed to `show`; each pane
gets its slice and repaints only when its slice changed. What its keys do goes through the
same source (core calls locally, agent commands remotely); the keys themselves are the
source's (`source.keys()`, in footer order). The checks and dialogs that do not depend on
where the run is (is it running, a torn checkpoint, the push's confirm dialog, the charts)
are here, once.

The chart view (`v`): `t` the compare table, `e` smoothing, `y` the y-axis, `x` the x-axis,
←/→ the epoch cursor, `/` a metric picker, `m` the next panels; space in the runs list marks
a run to compare (the source keeps the marks: a fleet's span its hosts).
"""

from __future__ import annotations

import os
from dataclasses import replace

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import OptionList

from ...core.base.text import printable
from ...core.hub.push import PushRequest
from ...core.model.snapshot import RunInfo, SelectedRun, Snapshot
from ...core.records.launch_records import is_launch_pseudo_dir
from ...core.render.chart_layout import SMOOTHING, X_KINDS, Y_MODES, ChartOptions, panel_metrics
from ...core.run.checkpoints import validity_text
from ...core.run.hub_target import ARTIFACTS_REQUEST
from .. import compat
from ..widgets.cost import IdleBanner
from ..widgets.footer import KeysFooter
from ..widgets.gpus import GpuPane
from ..widgets.push_bar import PushBar
from ..widgets.run_panes import RunPanes
from ..widgets.runs_list import RunsList
from .charts import CompareScreen, MetricPickScreen
from .cost import CostScreen
from .dialogs import ConfirmScreen, PickScreen
from .run_source import RunSource

CHART_ONLY = {"chart_smooth", "chart_y", "chart_x", "chart_cursor", "chart_pick"}
MAX_PICKED = 8

# the chart view's keys, the same for every source (each source's keys() ends with them)
CHART_KEYS = [
    Binding("v", "charts", "Charts"),
    Binding("t", "compare", "Compare", show=False),
    Binding("e", "chart_smooth", "Smooth", show=False),
    Binding("y", "chart_y", "Y-axis", show=False),
    Binding("x", "chart_x", "X-axis", show=False),
    Binding("left", "chart_cursor(-1)", "Epoch-", show=False),
    Binding("right", "chart_cursor(1)", "Epoch+", show=False),
    Binding("slash", "chart_pick", "Metric", show=False, key_display="/"),
]


def _next(values: tuple, current):
    return values[(values.index(current) + 1) % len(values)] if current in values else values[0]


def stop_refusal(run: RunInfo | None) -> str | None:
    """Why `s` does not stop `run`; None when it may be stopped."""
    if run is not None and run.state == "starting":
        return "Still starting: stop it once it shows RUN."
    if run is None or run.state not in ("running", "stalled"):
        return "The selected run is not running."
    return None


def resume_refusal(state: str) -> str | None:
    """Why a run in `state` is not resumed (`r`); None for a DEAD, FAILED or STOPPED run."""
    why = {
        "running": "is running: r resumes a DEAD, FAILED or STOPPED run (s stops this one)",
        "stalled": "is still alive (stalled): stop it first (s)",
        "starting": "is still starting",
        "completed": "completed: nothing to resume",
    }.get(state)
    if why is None and state not in ("dead", "failed", "stopped"):
        why = "is not DEAD, FAILED or STOPPED: nothing to resume"
    return why


def launch_refusal(run: RunInfo) -> str | None:
    """Why a launch that ended before its run directory existed is not resumed, in the
    user's terms (its stand-in path, .rgpu/launch/ID, is no run directory and has no
    last.pt); None for a run directory or a launch still starting."""
    if run.state == "starting" or not is_launch_pseudo_dir(run.run_dir):
        return None
    what = run.error or "its process ended before libreyolo wrote status.json"
    return (
        f"{run.name} never started training ({what}): there is no checkpoint to resume "
        "from; fix that and launch it again."
    )


class RunsView(Screen):
    """The run view of one source. `selected` is the run it shows (the local collector
    builds its details; a host's agent is asked for them)."""

    def __init__(self, source: RunSource, *, fast_log: bool, selected: str | None = None):
        super().__init__()
        self.source = source
        self.keys = list(source.keys())  # in footer order
        compat.own_keys(self, self.keys)
        self.selected = selected
        self.snapshot: Snapshot | None = None  # the one shown
        self.charts_open = False
        self.comparing = False  # the compare table is open
        self.chart_options = ChartOptions()
        self._log_timer = None
        # the panes, made here so that the app may hand them to others before they mount
        self.head = list(source.head())
        self.idle_banner = IdleBanner(id="idle")
        self.autostop_line = source.autostop_pane()
        self.gpu_pane = GpuPane(id="gpus")
        self.cost_strip = source.cost_pane()
        self.push_bar = PushBar(id="push")
        self.panes = RunPanes(fast_log=fast_log)
        self.runs_list = self.panes.runs_list
        self.run_header = self.panes.run_header
        self.metrics_pane = self.panes.metrics_pane
        self.log_title = self.panes.log_title
        self.log_pane = self.panes.log_pane
        self.chart_view = self.panes.chart_view
        self.main_box = self.panes.main_box
        source.attach(self)

    @property
    def host(self) -> str | None:
        return self.source.host

    # -- the panes ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield from self.head
        yield self.idle_banner
        yield self.autostop_line
        yield self.gpu_pane
        yield self.cost_strip
        yield self.push_bar
        yield self.panes
        yield KeysFooter()

    def on_mount(self) -> None:
        self.runs_list.focus()
        self.source.mounted()

    def on_unmount(self) -> None:
        self.source.closed()

    def show(self, snap: Snapshot) -> None:
        """A new state of the source: each pane its slice, the selection kept in step."""
        self.snapshot = snap
        source = self.source
        runs = snap.runs
        there = {r.run_dir for r in runs}
        if self.selected not in there:
            self.selected = source.default_run(snap)
            source.charts_changed()
        if source.prune_marks(snap):
            source.charts_changed()
        title = f"runs ({len(runs)})"
        if self.runs_list.border_title != title:  # setting it repaints the whole list
            self.runs_list.border_title = title
        self.runs_list.show_runs(
            runs, source.highlight(snap, self.selected), snap.deep_dirs_skipped,
            source.mark_colours(snap),
        )  # fmt: skip
        self.gpu_pane.show(snap.gpus, snap.system, runs, snap.setup, snap.generated_at)
        self.cost_strip.show(snap.cost)
        if self.idle_banner.show(snap.cost, snap.gpus) and source.rings:
            self.app.bell()  # once, when the idle banner appears
        self.autostop_line.show(snap.cost, snap.autostop)
        top = self.app.screen_stack[-1] if self.app.screen_stack else None  # empty: closing
        if isinstance(top, CostScreen):
            top.update_cost(snap)
        run = source.shown_run(snap, self.selected)
        sel = source.details(snap, self.selected)
        self.run_header.show(
            run,
            snap.generated_at,
            source.message(snap, run, sel),
            sel.pushes if sel else None,
            simulated=snap.gpus is not None and snap.gpus.simulated,
        )
        self.metrics_pane.show(sel.metrics if sel else None, run.state if run else None)
        self.log_pane.show(sel.log if sel else None)
        self.main_box.share()  # the metrics' rows and the log's, for what each has now
        self.show_charts()

    def show_waiting(self, now: float, why: str) -> None:
        """No snapshot yet (a host not reached): the header says why."""
        self.run_header.show(None, now, why)

    def log_later(self) -> None:
        """Lines the log pane holds back (one scroll per LOG_PERIOD) are shown when their
        time comes, for a source that has no refresh beat of its own (a fleet host)."""
        held = self.log_pane.pending_in()
        if held is None or self._log_timer is not None:
            return

        def flush() -> None:
            self._log_timer = None
            snap = self.snapshot
            sel = self.source.details(snap, self.selected) if snap is not None else None
            self.log_pane.show(sel.log if sel else None)
            self.main_box.share()
            self.log_later()

        self._log_timer = self.set_timer(max(held, 0.05), flush)

    def details(self) -> SelectedRun | None:
        snap = self.snapshot
        return self.source.details(snap, self.selected) if snap is not None else None

    def shown_run(self) -> RunInfo | None:
        snap = self.snapshot
        return self.source.shown_run(snap, self.selected) if snap is not None else None

    # -- the runs list ------------------------------------------------------------------

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        run_dir = event.option.id
        if run_dir and run_dir != self.selected:
            self.selected = run_dir
            self.source.charts_changed()  # without marks, the charts follow the selection
            self.source.picked(run_dir)

    def on_runs_list_marked(self, event: RunsList.Marked) -> None:
        why = self.source.toggle_mark(event.run_dir)
        if why is None:
            self.source.charts_changed()
            self.show_charts()
        else:
            self.notify(why, severity="warning", timeout=6)
        snap = self.snapshot
        if snap is not None:
            self.runs_list.show_runs(
                snap.runs, self.selected, snap.deep_dirs_skipped, self.source.mark_colours(snap)
            )

    # -- the charts ---------------------------------------------------------------------

    def check_action(self, action: str, parameters) -> bool | None:
        if action in CHART_ONLY and not self.charts_open:
            return False  # the key does what it does elsewhere (←/→ in a dialog)
        return True

    def show_charts(self) -> None:
        """A new snapshot, or new options: the view draws what is shown now."""
        if self.charts_open:
            self.chart_view.show(self.source.shown_runs(), self.chart_options)
        top = self.app.screen_stack[-1] if self.app.screen_stack else None
        if isinstance(top, CompareScreen):
            top.update_runs(self.source.shown_runs())

    def chart_metrics(self) -> tuple[str, ...]:
        """The metrics the charts ask for beyond each run's default panels."""
        return self.chart_options.picked

    def charts_wanted(self) -> bool:
        """Whether the source should build charts: the view or the compare table is open."""
        return self.charts_open or self.comparing

    def action_charts(self) -> None:
        self.charts_open = not self.charts_open
        self.main_box.set_class(self.charts_open, "-charts")
        if not self.charts_open:
            self.chart_options = replace(self.chart_options, cursor=None)
            self.main_box.share()  # the metrics and the log are back: their rows
        self.source.charts_changed()
        self.show_charts()

    def _options(self, **changes) -> None:
        self.chart_options = replace(self.chart_options, **changes)
        self.show_charts()

    def action_chart_smooth(self) -> None:
        self._options(smooth=_next(SMOOTHING, self.chart_options.smooth))

    def action_chart_y(self) -> None:
        self._options(y_mode=_next(Y_MODES, self.chart_options.y_mode))

    def action_chart_x(self) -> None:
        self._options(x_kind=_next(X_KINDS, self.chart_options.x_kind))

    def action_chart_cursor(self, step: int) -> None:
        epochs = sorted({e for r in self.source.shown_runs() for e in r.chart.epochs})
        if not epochs:
            return
        cursor = self.chart_options.cursor
        if cursor is None:
            cursor = epochs[-1]
        else:
            later = [e for e in epochs if e > cursor] if step > 0 else []
            earlier = [e for e in epochs if e < cursor] if step < 0 else []
            cursor = later[0] if later else earlier[-1] if earlier else cursor
        self._options(cursor=cursor)

    def action_chart_pick(self) -> None:
        runs = self.source.shown_runs()
        names = panel_metrics(runs, self.chart_options)
        for r in runs:
            names += list(r.chart.columns)

        def picked(name: str | None) -> None:
            if not name:
                return
            rest = [n for n in self.chart_options.picked if n != name]
            self._options(picked=(name, *rest)[:MAX_PICKED], page=0)
            self.source.charts_changed()

        self.app.push_screen(MetricPickScreen(names), picked)

    def action_compare(self) -> None:
        runs = self.source.shown_runs()
        screen = CompareScreen(runs, width=max(self.app.size.width - 6, 40))

        def closed(_result=None) -> None:
            self.comparing = False
            self.source.charts_changed()

        self.comparing = True
        self.app.push_screen(screen, closed)
        self.source.charts_changed()

    def action_metrics_page(self) -> None:
        if self.charts_open:
            self._options(page=self.chart_options.page + 1)  # the next panels
        else:
            self.metrics_pane.next_page()

    # -- push ---------------------------------------------------------------------------

    def action_push(self) -> None:
        """`p`: best.pt of the selected run (last.pt when there is no best.pt)."""
        sel = self._pushable()
        if sel is not None:
            self.confirm_push(sel, sel.push_default)

    def action_push_pick(self) -> None:
        """`P`: pick one of the selected run's checkpoints to push (the files the source
        lists; locally also the small artifacts only)."""
        sel = self._pushable()
        if sel is None:
            return
        offer = self.source.push_choices(sel)
        if offer is None:
            return
        title, choices, default = offer

        def picked(file: str | None) -> None:
            if file:
                self.confirm_push(sel, file)

        self.app.push_screen(PickScreen(title, choices, default=default), picked)

    def _pushable(self) -> SelectedRun | None:
        sel = self.details()
        if sel is None:
            self.notify(self.source.no_details(self.snapshot, self.selected), severity="warning")
        return sel

    def confirm_push(self, sel: SelectedRun, file: str) -> None:
        """The confirm dialog, from what the Snapshot says of the file and its target
        (core.run.hub_target.push_target: the push itself goes where it says)."""
        body = Text()
        if file == ARTIFACTS_REQUEST:
            target = sel.artifacts_target
            if target is None or target.problem:
                self._push_refused(target.problem if target else "no target")
                return
            body.append("The run's small artifacts (status.json, metrics.jsonl, results.csv, ")
            body.append("summary.json, train_config.yaml).\n")
            where = f"{target.folder}/" if target.folder else "the top of the repo"
        else:
            c = sel.checkpoint(file)
            target = c.target if c is not None else sel.artifacts_target
            if target is not None and target.repo_problem:
                self._push_refused(target.repo_problem)
                return
            if c is None or not c.exists:
                path = c.path if c is not None else os.path.join(sel.run_dir, "weights", file)
                self.notify(f"{path} does not exist.", severity="error")
                return
            if c.problem or target.problem:  # outside the run, a FIFO, a bad hub_path
                self._push_refused(c.problem or target.problem)
                return
            if c.valid is False:  # torn: the push would refuse it (core.run.torch_checkpoint)
                self._push_refused(f"not pushed: {c.invalid}")
                return
            # printable before Text, which would drop a BEL or CR unseen
            body.append(printable(c.path) + "\n", style="bold")
            body.append(printable(validity_text(c)))
            body.append("\n")
            where = target.path
        body.append("to ")
        body.append(printable(f"{target.repo}: {where}"), style="bold")
        body.append("\n(with the run's small artifacts, in one commit; a new repo is private)")
        run_dir = sel.run_dir

        def answered(yes: bool | None) -> None:
            if yes:
                self.source.submit_push(PushRequest(run_dir=run_dir, file=file))

        self.app.push_screen(
            ConfirmScreen("push to the Hugging Face Hub", body, "enter: push"), answered
        )

    def _push_refused(self, why: str | None) -> None:
        self.notify(printable(why or "cannot push"), severity="error", timeout=10, markup=False)

    # -- the other keys -----------------------------------------------------------------

    def action_stop(self) -> None:
        """`s`: SIGINT to the run's process group, SIGTERM and SIGKILL later if needed."""
        run = self.shown_run()
        why = stop_refusal(run)
        if why is not None:
            self.notify(why, severity="warning")
            return
        self.source.stop(run)

    def action_resume(self) -> None:
        """`r`: resume a DEAD, FAILED or STOPPED run from its newest complete checkpoint, or another
        picked in the dialog (core.launch.resume), which shows the exact command; the checks
        and the start run in threads."""
        run = self.shown_run()
        if run is None:
            self.notify("No run selected.", severity="warning")
            return
        never = launch_refusal(run)
        if never is not None:
            self.notify(never, severity="warning", timeout=15)
            return
        why = resume_refusal(run.state)
        if why is not None:
            self.notify(f"{run.name} {why}.", severity="warning")
            return
        self.source.resume(run)

    def action_launch(self) -> None:
        """`n`: the launch form, as last left for the selected run this session, else a
        clone of the selected run, else the last launch (core.launch.clone: read in a
        thread); the new run is selected once it appears."""
        self.source.launch()

    def action_cost(self) -> None:
        self.source.cost()

    def action_preflight(self) -> None:
        """`g`: torch, CUDA and one real matmul on every GPU, in a subprocess."""
        self.source.preflight()

    def action_autostop(self) -> None:
        """`a`: cancel the watcher's autostop for this session, or turn it back on."""
        self.source.autostop()

    def action_back(self) -> None:
        """`esc`: back to where the view was opened from (a fleet's hosts table)."""
        self.source.closed()
        self.dismiss()
