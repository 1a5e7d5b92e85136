"""The body both the local app and a fleet host's full view show: the runs list beside the
selected run's header, metrics and log, with the same ids (app.tcss styles them once)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

from .chart_view import ChartView
from .log_pane import LogPane, LogTitle
from .metrics import MetricsPane
from .run_header import RunHeader
from .runs_list import RunsList


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
    owner.main_box = Vertical(id="main")
    with Horizontal(id="body"):
        yield owner.runs_list
        with owner.main_box:
            yield owner.run_header
            yield owner.metrics_pane
            yield owner.log_title
            yield owner.log_pane
            yield owner.chart_view
