"""The body of the run view (tui.screens.runs_view), local or a fleet host's: the runs
list beside the selected run's header, metrics and log, with the same ids (app.tcss
styles them once)."""

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


class RunPanes(Horizontal):
    """The body (#panes): the runs list beside the selected run's side (#main: its header,
    metrics and log, or the charts; its `-charts` class shows the charts in place of the
    metrics and the log). The panes are attributes, for the view's show methods.
    `fast_log`: the log pane's in-place measuring (tui.compat) is on."""

    def __init__(self, *, fast_log: bool) -> None:
        super().__init__(id="panes")
        self.runs_list = RunsList(id="runs")
        self.runs_list.border_title = "runs"
        self.run_header = RunHeader(id="header")
        self.metrics_pane = MetricsPane(id="metrics")
        self.log_title = LogTitle(id="log-title")
        self.log_pane = LogPane(self.log_title, id="log", fast=fast_log)
        self.chart_view = ChartView(id="chart")
        self.main_box = RunBody(self.run_header, self.metrics_pane, self.log_pane, id="main")

    def compose(self) -> ComposeResult:
        yield self.runs_list
        with self.main_box:
            yield self.run_header
            yield self.metrics_pane
            yield self.log_title
            yield self.log_pane
            yield self.chart_view
