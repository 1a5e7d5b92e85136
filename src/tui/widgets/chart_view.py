"""The chart view (`v`): every metric on axes, several runs overlaid, drawn by core
(core.render.chart_layout) into rows that this LinePane paints.

It redraws only when what it draws changed: a new epoch (a new RunChart), a key (the
options) or a resize. A running run's header numbers change every second; the view
compares only what it draws (each run's chart, label, colour, price and total epochs),
and then repaints only the cells that changed (tui.widgets.lines).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Span, Text

from ...core.render.chart_layout import ChartOptions, ShownRun, chart_rows
from .lines import LinePane


def draw_key(runs: Sequence[ShownRun], options: ChartOptions) -> tuple:
    """What the view draws, and nothing else of the runs (their ETA moves every second)."""
    return (
        options,
        tuple(
            (
                r.key,
                r.label,
                r.chart,
                r.colour,
                r.price_per_hour,
                r.info.total_epochs if r.info is not None else None,
            )
            for r in runs
        ),
    )


class ChartView(LinePane):
    DEFAULT_CSS = """
    ChartView { height: 1fr; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.runs: tuple[ShownRun, ...] = ()
        self.options = ChartOptions()
        self._key: tuple | None = None
        self.draws = 0  # how many times the rows were built (tests, bench)

    def show(self, runs: Sequence[ShownRun], options: ChartOptions) -> None:
        key = draw_key(runs, options)
        if key == self._key:
            return
        self._key = key
        self.runs, self.options = tuple(runs), options
        if self.display:
            self.repaint_rows()

    def on_show(self) -> None:
        self.repaint_rows(full=True)

    def build_rows(self, width: int) -> list[Text]:
        self.draws += 1
        height = self.size.height or 20
        rows = []
        for plain, spans in chart_rows(self.runs, self.options, width, height):
            text = Text(plain, no_wrap=True, overflow="ellipsis")
            text.spans = [Span(a, b, style) for a, b, style in spans]
            rows.append(text)
        return rows
