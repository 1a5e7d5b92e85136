"""The compare table: runs side by side, one column per run, the same for the app's `t`,
a fleet host's `t` and `rgpu-tui compare`.

    run                 live_exp          other_exp
    state               RUN               DONE
    epochs              30/100            50/50
    best mAP50-95       0.412 @ep28       0.398 @ep50
    time (all attempts) 31m05s            52m10s
    cost                $1.80             $3.03
    $ per point         $0.044            $0.076
    epochs              100               50          <- train_config.yaml keys that differ
    warmup_epochs       3                 1

- time and cost: the run's, by the one function every view uses (core.picture.cost.run_spent:
  the sum of its attempts' seconds, start-up and epochs lost at a kill included, at the
  machine's price; unknown without a price: "?" and a note);
- $ per point: the cost over the best metric in points (a point is 0.01 of a metric that
  lies in 0..1, as mAP; 1 of any other);
- the hyperparameters: the keys of train_config.yaml whose values differ between the runs
  (a key one run lacks counts as differing), where the run was written (project, name,
  exist_ok) left out (core.run.train_config.differing_keys).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.formatting import fmt_duration, fmt_money, fmt_number
from ..base.text import printable
from ..picture.cost import run_spent
from ..run.train_config import differing_keys
from .chart_layout import ShownRun

LABEL_W = 20
MIN_COL = 10


@dataclass(frozen=True)
class CompareRow:
    label: str
    run_dir: str
    state: str | None
    epoch: int | None
    total_epochs: int | None
    best: float | None
    best_name: str | None
    best_epoch: int | None
    time_s: float | None
    price_per_hour: float | None
    cost: float | None
    per_point: float | None
    params: dict[str, str]
    config_problem: str | None

    def to_json(self) -> dict:
        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v

        return {
            "name": self.label,
            "run_dir": self.run_dir,
            "state": self.state,
            "epoch": self.epoch,
            "total_epochs": self.total_epochs,
            "best_metric": clean(self.best),
            "best_metric_name": self.best_name,
            "best_epoch": self.best_epoch,
            "time_seconds": clean(self.time_s),
            "price_per_hour": clean(self.price_per_hour),
            "cost": clean(self.cost),
            "cost_per_point": clean(self.per_point),
            "config": self.params,
            "config_problem": self.config_problem,
        }


def per_point(cost: float | None, best: float | None) -> float | None:
    """Dollars per point of the best metric (0.01 of a 0..1 metric, else 1); None when
    either is unknown or the metric is not above 0."""
    if cost is None or best is None or not best > 0 or not math.isfinite(best):
        return None
    points = best * 100.0 if best <= 1.0 else best
    return cost / points


def compare_rows(runs: Sequence[ShownRun]) -> tuple[list[CompareRow], list[str]]:
    """One row per run, and the config keys that differ between them."""
    rows = []
    for r in runs:
        chart, info = r.chart, r.info
        time_s, cost = run_spent(info, r.price_per_hour)
        epoch = info.current_epoch if info is not None else None
        if epoch is None and chart.epochs:
            epoch = chart.epochs[-1]
        best = chart.best_metric
        rows.append(
            CompareRow(
                label=r.label,
                run_dir=chart.run_dir,
                state=info.state if info is not None else None,
                epoch=epoch,
                total_epochs=info.total_epochs if info is not None else None,
                best=best,
                best_name=chart.best_metric_name,
                best_epoch=chart.best_epoch,
                time_s=time_s,
                price_per_hour=r.price_per_hour,
                cost=cost,
                per_point=per_point(cost, best),
                params=dict(chart.config),
                config_problem=chart.config_problem,
            )
        )
    return rows, differing_keys([row.params for row in rows if not row.config_problem])


def compare_json(rows: Sequence[CompareRow], differs: Sequence[str]) -> dict:
    return {"runs": [r.to_json() for r in rows], "differs": list(differs)}


def _best_text(r: CompareRow) -> str:
    if r.best is None:
        return "-"
    at = f" @ep{r.best_epoch}" if r.best_epoch is not None else ""
    return f"{fmt_number(r.best)}{at}"


def _money(v: float | None) -> str:
    if v is None:
        return "?"
    if 0 < abs(v) < 0.01:
        return f"${v:.2g}"
    return fmt_money(v)


def compare_lines(
    rows: Sequence[CompareRow], differs: Sequence[str], width: int = 100
) -> list[tuple[str, str]]:
    """The table as (text, style) lines, cut to `width`: runs as columns, fields as rows."""
    if not rows:
        return [("No runs to compare: mark runs with space (up to 6).", "italic")]
    names = {r.best_name for r in rows if r.best_name}
    best_label = "best " + (
        printable(next(iter(names))).removeprefix("metrics/") if len(names) == 1 else "metric"
    )
    fields: list[tuple[str, list[str], str]] = [
        ("run", [r.label for r in rows], "bold"),
        ("state", [r.state or "?" for r in rows], ""),
        (
            "epochs",
            [f"{r.epoch if r.epoch is not None else '?'}/{r.total_epochs or '?'}" for r in rows],
            "",
        ),
        (best_label, [_best_text(r) for r in rows], ""),
        ("time (all attempts)", [fmt_duration(r.time_s) for r in rows], ""),
        ("cost", [_money(r.cost) for r in rows], ""),
        ("$ per point", [_money(r.per_point) for r in rows], ""),
    ]
    if len(names) > 1:
        fields.insert(4, ("metric", [printable(r.best_name or "-") for r in rows], "dim"))
    cols = len(rows)
    col_w = max(MIN_COL, (width - LABEL_W) // cols - 1)
    lines: list[tuple[str, str]] = []

    def line(label: str, values: list[str], style: str) -> tuple[str, str]:
        cells = [printable(label)[: LABEL_W - 1].ljust(LABEL_W)]
        for v in values:
            v = printable(v)
            cells.append((v if len(v) <= col_w else v[: col_w - 1] + "…").ljust(col_w + 1))
        return "".join(cells).rstrip()[:width], style

    for label, values, style in fields:
        lines.append(line(label, values, style))
    if len(rows) > 1:
        if differs:
            lines.append(("hyperparameters that differ (train_config.yaml)", "bold"))
            for key in differs:
                lines.append(line(key, [r.params.get(key, "-") for r in rows], ""))
        else:
            lines.append(("train_config.yaml: no hyperparameter differs", "dim"))
    for r in rows:
        if r.config_problem:
            lines.append((f"{r.label}: {printable(r.config_problem)}", "dim"))
    unpriced = [r.label for r in rows if r.price_per_hour is None]
    if unpriced:
        lines.append(
            (
                f"no price for {', '.join(unpriced)}: set price_per_hour (config) or "
                "--price-per-hour for the cost",
                "yellow",
            )
        )
    return lines
