"""Metric sparklines: one text row per metric with its last, min and max, each labelled
with its epoch ("last 0.667 @30  min 0.5 @28  max 20 @1"; as much as the width allows).

One row, one style per sparkline (per-cell colours cost ~65% of the bytes a
frame sends). `m` cycles the page: the main trio first (train/loss, the
validation metric being optimised, lr), then every other numeric column. A page
holds as many metrics as the pane has rows (`rows`, set by the body that shares
its rows between the metrics and the log: tui.widgets.run_panes); the chart view
(`v`) draws them all on axes.
"""

from __future__ import annotations

import math

from rich.text import Text

from ...core.base.formatting import fmt_number
from ...core.base.text import printable
from ...core.model.snapshot import MetricsView
from .lines import LinePane

BLOCKS = "▁▂▃▄▅▆▇█"
# columns that are bookkeeping, not curves (current_metric and best_metric repeat the
# metric they name)
HIDDEN = {"epoch", "best_epoch", "validated", "is_best", "metrics/max_det", "speed/images_seen"}
HIDDEN |= {"current_metric", "best_metric"}


def sparkline(values, width: int, lo: float | None = None, hi: float | None = None) -> str:
    """The newest `width` values as block characters; gaps for unknown values.

    The scale is the values' own range unless `lo`/`hi` fix it (0-100 for a percentage).
    """
    vals = list(values)[-width:] if width > 0 else []
    finite = [v for v in vals if v is not None and math.isfinite(v)]
    if not finite:
        return ""
    lo = min(finite) if lo is None else lo
    hi = max(finite) if hi is None else hi
    span = hi - lo
    if not math.isfinite(span):  # 1e308 and -1e308: the difference overflows, halves do not
        return sparkline([None if v is None else v / 2 for v in vals], width, lo / 2, hi / 2)
    out = []
    for v in vals:
        if v is None or not math.isfinite(v):
            out.append(" ")
        elif span == 0:
            out.append(BLOCKS[3])
        else:
            out.append(BLOCKS[max(min(int((v - lo) / span * 8), 7), 0)])
    return "".join(out)


def shown_names(view: MetricsView) -> list[str]:
    """The columns the pane shows a sparkline of, in the file's order."""
    return [c.name for c in view.series if c.name not in HIDDEN]


def metric_pages(view: MetricsView, per_page: int) -> list[list[str]]:
    """Pages of column names: the main trio first (and as many others as fit its page),
    then the rest in order."""
    numeric = shown_names(view)
    main = ["train/loss"]
    target = view.last.get("best_metric_name") or view.last.get("current_metric_name")
    if isinstance(target, str):
        main.append(target)
    main.append(next((n for n in numeric if n.startswith("lr/")), "lr/group0"))
    main = [n for n in dict.fromkeys(main) if n in numeric]
    if not main:
        main = numeric[:per_page]
    rest = [n for n in numeric if n not in main]
    per_page = max(per_page, 1)
    fill = max(per_page - len(main), 0)  # a tall page: the trio, then the others
    main, rest = main + rest[:fill], rest[fill:]
    pages = [main] + [rest[i : i + per_page] for i in range(0, len(rest), per_page)]
    return [p for p in pages if p]


ROWS = 3  # the rows the pane keeps when the log needs its rows
TALL_ROWS = 8  # the same from app_rules.TALL_ROWS terminal rows


def _at(epoch) -> str:
    return f" @{epoch}" if epoch is not None else ""


def stats_forms(col) -> tuple[str, str, str]:
    """The numbers after a sparkline, richest first: last, min and max with their
    epochs; the last with its epoch; the last alone."""
    last = f"last {fmt_number(col.last)}{_at(col.last_epoch)}"
    full = (
        f"{last}  min {fmt_number(col.min)}{_at(col.min_epoch)}"
        f"  max {fmt_number(col.max)}{_at(col.max_epoch)}"
    )
    return full, last, fmt_number(col.last)


def short_name(name: str) -> str:
    """The label of a metric: a column name from the run's files, made printable."""
    return printable(name.removeprefix("metrics/"))


ENDED = ("completed", "failed", "stopped")  # states whose run writes no more metrics


class MetricsPane(LinePane):
    """ROWS sparklines (train/loss, the optimised metric, lr first); `m` pages."""

    DEFAULT_CSS = """
    MetricsPane { height: 5; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._view: MetricsView | None = None
        self._ended = False  # the run ended: no metric will come
        self.page = 0
        self._pages: list[list[str]] = []
        self.rows = ROWS  # the metrics a page holds (the pane's rows)

    def show(self, view: MetricsView | None, state: str | None = None) -> None:
        """`state`: the run's (RunInfo.state); one that ended gets no more metrics, and a
        pane without any says so without "yet"."""
        ended = state in ENDED
        if (view is self._view or view == self._view) and ended == self._ended:
            return
        self._view, self._ended = view, ended
        self.repaint_rows()  # fixed height: no layout pass

    def next_page(self) -> None:
        self.page += 1
        self.repaint_rows()

    def wanted_rows(self) -> int:
        """The rows that show every metric at once (one for a message)."""
        view = self._view
        return max(len(shown_names(view)), 1) if view is not None else 1

    def set_rows(self, rows: int) -> None:
        """The body gave the pane `rows` rows: its pages hold that many metrics."""
        if rows != self.rows:
            self.rows = rows
            self.repaint_rows()

    def per_page(self) -> int:
        return self.rows

    def _current_page(self) -> list[str]:
        if self._view is None:
            return []
        self._pages = metric_pages(self._view, per_page=self.per_page())
        if not self._pages:
            return []
        self.page %= len(self._pages)
        return self._pages[self.page]

    def build_rows(self, width: int) -> list[Text]:
        view = self._view
        if view is None:
            return [Text("No run selected.", style="italic")]
        names = self._current_page()
        pages = len(self._pages)
        title = f"metrics {self.page + 1}/{pages} (m: next)" if pages > 1 else "metrics"
        if self.border_title != title:  # setting it repaints the pane
            self.border_title = title
        if not names:
            msg = view.problem or "no numeric metrics yet"
            if self._ended:  # none will come: not "yet"
                msg = msg.removesuffix(" yet")
                return [Text(f"{msg}: the run ended before an epoch's line", style="italic")]
            return [Text(f"{msg} (metrics.jsonl gets a line after each epoch)", style="italic")]
        label_w = min(max(len(short_name(n)) for n in names), 14)
        cols = [view.column(name) for name in names]
        forms = [stats_forms(col) for col in cols]
        room = width - label_w - 1 - 16  # a sparkline keeps 16 cells
        pick = next((i for i in range(2) if max(len(f[i]) for f in forms) + 1 <= room), 2)
        stats_w = max(len(f[pick]) for f in forms)
        rows = []
        for name, form in zip(names, forms, strict=True):
            col = view.column(name)
            stats = (
                " " + form[pick].rjust(stats_w) if pick == 2 else " " + form[pick].ljust(stats_w)
            )
            spark_w = max(width - label_w - len(stats) - 1, 0)
            label = short_name(name)
            label = label if len(label) <= label_w else label[: label_w - 1] + "…"
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append(f"{label:<{label_w}} ", style="bold")
            row.append(sparkline(col.values, spark_w).ljust(spark_w), style="cyan")
            row.append(stats)
            rows.append(row)
        return rows
