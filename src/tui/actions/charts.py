"""The chart view's keys, a mixin of the app and of a fleet host's full view:
`v` opens and closes the charts, space (in the runs list) marks a run to compare, `t` the
compare table; in the charts `e` smoothing, `y` the y-axis, `x` the x-axis, ←/→ the epoch
cursor, `/` a metric picker, `m` the next panels.

The owner provides `chart_view`, `main_box` (the body's right side, whose `-charts` class
swaps the metrics and log for the charts), `shown_runs()` (the ShownRuns to draw: the
marked runs, else the selected one), `chart_keys()` (the identity of each run shown, for
the marks) and `charts_changed()` (what it asks for changed: a refresh, or the agent's
chart command); and calls `show_charts()` when a new snapshot arrives.
"""

from __future__ import annotations

from dataclasses import replace

from textual.binding import Binding

from ...core.picture.charts import MAX_RUNS
from ...core.render.chart_layout import SMOOTHING, X_KINDS, Y_MODES, ChartOptions, panel_metrics
from ..screens.charts import CompareScreen, MetricPickScreen

CHART_ONLY = {"chart_smooth", "chart_y", "chart_x", "chart_cursor", "chart_pick"}
MAX_PICKED = 8


def _next(values: tuple, current):
    return values[(values.index(current) + 1) % len(values)] if current in values else values[0]


# the owner's BINDINGS include these (Textual reads BINDINGS of DOMNode classes only)
CHART_BINDINGS = [
    Binding("v", "charts", "Charts"),
    Binding("t", "compare", "Compare", show=False),
    Binding("e", "chart_smooth", "Smooth", show=False),
    Binding("y", "chart_y", "Y-axis", show=False),
    Binding("x", "chart_x", "X-axis", show=False),
    Binding("left", "chart_cursor(-1)", "Epoch-", show=False),
    Binding("right", "chart_cursor(1)", "Epoch+", show=False),
    Binding("slash", "chart_pick", "Metric", show=False, key_display="/"),
]


class ChartActions:
    charts_open = False
    comparing = False  # the compare table is open
    chart_options = ChartOptions()

    def check_action(self, action: str, parameters) -> bool | None:
        if action in CHART_ONLY and not self.charts_open:
            return False  # the key does what it does elsewhere (←/→ in a dialog)
        return super().check_action(action, parameters)

    # -- what the owner calls ---------------------------------------------------------

    def show_charts(self) -> None:
        """A new snapshot, or new options: the view draws what is shown now."""
        if self.charts_open:
            self.chart_view.show(self.shown_runs(), self.chart_options)
        top = self.app.screen_stack[-1] if self.app.screen_stack else None
        if isinstance(top, CompareScreen):
            top.update_runs(self.shown_runs())

    def chart_metrics(self) -> tuple[str, ...]:
        """The metrics the charts ask for beyond each run's default panels."""
        return self.chart_options.picked

    def charts_wanted(self) -> bool:
        """Whether the refresh should build charts: the view or the compare table is open."""
        return self.charts_open or self.comparing

    # -- keys -------------------------------------------------------------------------

    def action_charts(self) -> None:
        self.charts_open = not self.charts_open
        self.main_box.set_class(self.charts_open, "-charts")
        if not self.charts_open:
            self.chart_options = replace(self.chart_options, cursor=None)
            self.main_box.share()  # the metrics and the log are back: their rows
        self.charts_changed()
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

    def chart_page(self) -> None:
        """`m` in the charts: the next panels."""
        self._options(page=self.chart_options.page + 1)

    def action_chart_cursor(self, step: int) -> None:
        epochs = sorted({e for r in self.shown_runs() for e in r.chart.epochs})
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
        runs = self.shown_runs()
        names = panel_metrics(runs, self.chart_options)
        for r in runs:
            names += list(r.chart.columns)

        def picked(name: str | None) -> None:
            if not name:
                return
            rest = [n for n in self.chart_options.picked if n != name]
            self._options(picked=(name, *rest)[:MAX_PICKED], page=0)
            self.charts_changed()

        self.app.push_screen(MetricPickScreen(names), picked)

    def action_compare(self) -> None:
        runs = self.shown_runs()
        screen = CompareScreen(runs, width=max(self.app.size.width - 6, 40))

        def closed(_result=None) -> None:
            self.comparing = False
            self.charts_changed()

        self.comparing = True
        self.app.push_screen(screen, closed)
        self.charts_changed()

    def toggle_mark(self, key: str, marks: list) -> str | None:
        """Mark `key` (or unmark it) in `marks`, at most MAX_RUNS; what to say, or None."""
        if key in marks:
            marks.remove(key)
        elif len(marks) >= MAX_RUNS:
            return f"at most {MAX_RUNS} runs are compared: unmark one first (space)"
        else:
            marks.append(key)
        self.charts_changed()
        self.show_charts()
        return None
