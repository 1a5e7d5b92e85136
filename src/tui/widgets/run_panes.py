"""The body both the local app and a fleet host's full view show: the runs list beside the
selected run's header, metrics and log, with the same ids (app.tcss styles them once)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.scalar import Scalar

from ..app_rules import TALL_ROWS as TALL_SCREEN
from .chart_view import ChartView
from .log_pane import LogPane, LogTitle
from .metrics import ROWS, TALL_ROWS, MetricsPane
from .run_header import RunHeader
from .runs_list import RunsList

LOG_MIN = 3  # the log keeps this many rows whatever the metrics want


def shared_rows(avail: int, metrics: int, log: int, base: int) -> int:
    """The metrics' share of `avail` rows (the rest is the log's): `metrics` rows show
    every metric, `log` rows every log line. The metrics get all they want when the log
    leaves the rows free (a short log, a run just started), else `base`; the log keeps
    LOG_MIN rows. Rows stand empty in the log only when no metric is left out."""
    rows = min(metrics, max(base, avail - log))
    return max(min(rows, avail - LOG_MIN), 1)


class RunBody(Vertical):
    """The selected run's side (#main): its header, metrics and log, or the charts. It
    shares its rows between the metrics and the log (`share`, after each new state and on
    a resize); the metrics pane's height is set only when its share changed."""

    def __init__(self, header: RunHeader, metrics: MetricsPane, log: LogPane, **kwargs) -> None:
        super().__init__(**kwargs)
        self.header_pane, self.metrics_pane, self.log_pane = header, metrics, log

    def on_resize(self) -> None:
        self.share()

    def share(self) -> None:
        height = self.size.height
        metrics = self.metrics_pane
        if not height or self.has_class("-charts") or not metrics.display:
            return
        header = self.header_pane
        header_rows = header.row_count or 1
        cap = header.styles.max_height
        if cap is not None and cap.is_cells:
            header_rows = min(header_rows, int(cap.value))
        gutter = metrics.styles.gutter.height
        title = 0 if self.log_pane.title_row is None else 1  # the log's title row
        avail = height - header_rows - title - gutter
        try:
            tall = self.app.size.height >= TALL_SCREEN
        except Exception:  # no app (not mounted)
            tall = False
        rows = shared_rows(
            avail, metrics.wanted_rows(), len(self.log_pane.lines), TALL_ROWS if tall else ROWS
        )
        if metrics.styles.height != Scalar.from_number(rows + gutter):
            metrics.styles.height = rows + gutter
        metrics.set_rows(rows)


def compose_run_panes(owner, *, fast_log: bool) -> ComposeResult:
    """Yield the body from a compose(); the panes are kept on `owner` (runs_list,
    run_header, metrics_pane, log_title, log_pane, chart_view, and main_box: its `-charts`
    class shows the charts in place of the metrics and the log) for its show methods.
    `fast_log`: the log pane's in-place measuring (tui.compat) is on."""
    owner.runs_list = RunsList(id="runs")
    owner.runs_list.border_title = "runs"
    owner.run_header = RunHeader(id="header")
    owner.metrics_pane = MetricsPane(id="metrics")
    owner.log_title = LogTitle(id="log-title")
    owner.log_pane = LogPane(owner.log_title, id="log", fast=fast_log)
    owner.chart_view = ChartView(id="chart")
    owner.main_box = RunBody(owner.run_header, owner.metrics_pane, owner.log_pane, id="main")
    with Horizontal(id="panes"):
        yield owner.runs_list
        with owner.main_box:
            yield owner.run_header
            yield owner.metrics_pane
            yield owner.log_title
            yield owner.log_pane
            yield owner.chart_view
