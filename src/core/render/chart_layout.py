"""The chart view as rows of text: what the app's chart view, a fleet host's and
`rgpu-tui chart` show, from the runs' RunCharts and the reading options.

    smooth 0.6 e · y linear y · x epoch x · ←/→ cursor · / metric · m panels 1/2
    ── live_exp  ── other_exp          ✦ best on Hub ✧ best not pushed ↻ resume ...
    <panels, side by side as the width allows, as many rows as the height allows>
    epoch 23  live_exp 23m05s $1.20   other_exp 25m00s ?     (the cursor's readout)

- The runs drawn: up to six, each in a colour of its own that stays while it is shown
  (`run_colours`: a hash of the run picks the colour, the next free one on a clash).
- Smoothing: debiased EMA (as TensorBoard: `ema`), the raw line faint behind; a constant
  series stays raw. For a run that keeps one row in `stride`, the weight is weight^stride.
- x: epoch, time spent (every attempt) or dollars (time x the machine's price); a run
  without a `time` in its rows, or without a price, is drawn against epochs, and the
  status row says why.
- Each panel's title: the metric, and per run its last value (or the value at the
  cursor's epoch: raw, ~smoothed), with min and max and their epochs for a single run.
- The marks on each panel's axis row: ✦ best epoch with best.pt on the Hub, ✧ best
  epoch not pushed (or changed since), ↻ an attempt began again, ✗ a diverged loss,
  ╵ a saved epoch_N.pt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.formatting import fmt_duration, fmt_money, fmt_number
from ..base.text import printable
from ..model.snapshot import RunChart, RunInfo, Snapshot
from ..picture.charts import default_panels, run_label
from ..picture.cost import run_spent
from .chart_draw import Curve, Mark, Row, XAxis, draw_panel, nice_ceil, text_row

COLOURS = ("cyan", "magenta", "yellow", "green", "bright_blue", "bright_red")
SMOOTHING = (0.0, 0.6, 0.9)
X_KINDS = ("epoch", "time", "cost")
Y_MODES = ("linear", "robust", "log")
Y_NAMES = {"linear": "linear", "robust": "no outliers", "log": "log"}
PANEL_MIN_H = 8  # title, 5 plot rows, the axis and its labels
PANEL_FIRST_H = 6  # title, 3 plot rows, the axis, its labels: two such fit a short page
PANEL_MIN_W = 40
MARKS_LEGEND = "✦ best on Hub  ✧ best not pushed  ↻ resume  ✗ diverged  ╵ epoch_N.pt"


@dataclass(frozen=True)
class ChartOptions:
    smooth: float = 0.0
    y_mode: str = "linear"
    x_kind: str = "epoch"
    cursor: int | None = None  # an epoch; None: no cursor
    picked: tuple[str, ...] = ()  # metrics picked with `/`, shown first
    only_picked: bool = False  # the picked metrics and no others (`rgpu-tui chart --metric`)
    page: int = 0


@dataclass(frozen=True)
class ShownRun:
    """One run as the chart view draws it."""

    key: str  # what identifies it for its colour (run_dir, or host + run_dir)
    label: str  # printable
    chart: RunChart
    info: RunInfo | None = None
    price_per_hour: float | None = None
    colour: str = COLOURS[0]


def shown_run(
    key: str,
    run_dir: str,
    snap: Snapshot,
    colour: str,
    *,
    host: str | None = None,
    label: str | None = None,
) -> ShownRun | None:
    """The one ShownRun builder (the app's chart view, a fleet host's, `rgpu-tui chart`):
    run `run_dir` of `snap` with its chart, its RunInfo, its label (run_label: its name,
    with its host; `label` when the caller had to tell two runs of one name apart) and
    the price of `snap`'s cost, the machine's price as the cost pane shows it (the
    settings' price_per_hour, or price_command's answer where a refresh read it). None
    while the run's chart is not in the snapshot."""
    chart = snap.chart(run_dir)
    if chart is None:
        return None
    info = snap.run(run_dir)
    if label is None:
        label = run_label(run_dir, info.name if info is not None else None, host)
    price = snap.cost.price_per_hour if snap.cost is not None else None
    return ShownRun(key, label, chart, info, price, colour)


def _fnv(text: str) -> int:
    h = 0x811C9DC5
    for b in text.encode("utf-8", "surrogateescape"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def run_colours(keys: Sequence[str], names: Sequence[str] | None = None) -> dict[str, str]:
    """A colour per key: the hash of its name (the key itself without names: give the
    run's name under its root, so the colour does not depend on where the root is) picks
    it, or the next free one when two runs would share."""
    taken: set[int] = set()
    out = {}
    for i, key in enumerate(keys):
        want = _fnv(names[i] if names is not None else key) % len(COLOURS)
        for j in range(len(COLOURS)):
            c = (want + j) % len(COLOURS)
            if c not in taken or len(taken) >= len(COLOURS):
                taken.add(c)
                out[key] = COLOURS[c]
                break
    return out


def ema(values: Sequence[float | None], weight: float, stride: int = 1) -> list[float | None]:
    """Debiased exponential moving average over the finite values (gaps stay gaps); a
    constant series, or weight 0, is returned as it is."""
    values = list(values)
    finite = [v for v in values if v is not None]
    if weight <= 0 or len(set(finite)) <= 1:
        return values
    w = weight ** max(stride, 1)
    out: list[float | None] = []
    last, n = 0.0, 0
    for v in values:
        if v is None:
            out.append(None)
            continue
        last = last * w + (1 - w) * v
        n += 1
        value = last / (1 - w**n)
        out.append(value if math.isfinite(value) else None)
    return out


def x_values(chart: RunChart, kind: str, price: float | None) -> list[float] | None:
    """The run's x per epoch for `kind`; None when it has none (no time, no price)."""
    if kind == "epoch":
        return [float(e) for e in chart.epochs]
    if not chart.spent_seconds or len(chart.spent_seconds) != len(chart.epochs):
        return None
    if kind == "time":
        return list(chart.spent_seconds)
    if price is None:
        return None
    return [s / 3600.0 * price for s in chart.spent_seconds]


def x_note(runs: Sequence[ShownRun], kind: str) -> str | None:
    """Why the x-axis is epochs when `kind` was asked for, or None."""
    if kind == "epoch" or not runs:
        return None
    no_time = [r.label for r in runs if not r.chart.spent_seconds]
    if no_time:
        return f"no time in the metrics rows of {', '.join(no_time)}: x is epochs"
    if kind == "cost":
        no_price = [r.label for r in runs if r.price_per_hour is None]
        if no_price:
            return (
                f"no price for {', '.join(no_price)} (price_per_hour in the config or "
                "--price-per-hour): x is epochs"
            )
    return None


def panel_metrics(runs: Sequence[ShownRun], options: ChartOptions) -> list[str]:
    """The panels: the picked metrics, then (unless only those) each run's defaults (the
    first run's first)."""
    names = list(options.picked)
    if options.only_picked:
        return list(dict.fromkeys(names))
    for r in runs:
        have = [s.name for s in r.chart.series]
        names += have or list(
            default_panels(r.chart.family, r.chart.columns, r.chart.best_metric_name)
        )
    return list(dict.fromkeys(names))


def grid(width: int, height: int) -> tuple[int, int]:
    """(columns, rows) of panels that fit."""
    cols = max(1, min(3, width // PANEL_MIN_W))
    rows = max(1, height // PANEL_MIN_H, min(2, height // PANEL_FIRST_H))  # train/loss, headline
    return cols, rows


def _index_of(chart: RunChart, epoch: int | None) -> int | None:
    if epoch is None or not chart.epochs:
        return None
    # the kept epoch at or before the cursor
    lo, hi = 0, len(chart.epochs)
    while lo < hi:
        mid = (lo + hi) // 2
        if chart.epochs[mid] <= epoch:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1 if lo else None


def _min_max(epochs, values) -> tuple:
    lo = hi = None
    for e, v in zip(epochs, values, strict=False):
        if v is None:
            continue
        if lo is None or v < lo[1]:
            lo = (e, v)
        if hi is None or v >= hi[1]:
            hi = (e, v)
    return lo, hi


def _title(name: str, runs: Sequence[ShownRun], options: ChartOptions) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = [(printable(name.removeprefix("metrics/")), "bold")]
    for r in runs:
        s = r.chart.metric(name)
        if s is None:
            continue
        colour = r.colour if len(runs) > 1 else ""
        i = _index_of(r.chart, options.cursor) if options.cursor is not None else None
        if options.cursor is not None:
            if i is None or s.values[i] is None:
                parts.append(("  -", colour))
                continue
            v = s.values[i]
            text = f"  {fmt_number(v)}"
            if options.smooth:
                sm = ema(s.values, options.smooth, r.chart.stride)[i]
                text += f" ~{fmt_number(sm)}"
            parts.append((text, colour))
            continue
        pairs = zip(reversed(r.chart.epochs), reversed(s.values), strict=True)
        last = next(((e, v) for e, v in pairs if v is not None), None)
        if last is None:
            parts.append(("  -", colour))
            continue
        parts.append((f"  {fmt_number(last[1])}", colour))
        if len(runs) == 1:
            lo, hi = _min_max(r.chart.epochs, s.values)
            parts.append((f" @ep{last[0]}", "dim"))
            if lo and hi and lo[1] != hi[1]:
                parts.append((f"  min {fmt_number(lo[1])} @{lo[0]}", "dim"))
                parts.append((f"  max {fmt_number(hi[1])} @{hi[0]}", "dim"))
    return parts


def _marks(r: ShownRun, xs: list[float], multi: bool) -> list[Mark]:
    chart = r.chart
    where = dict(zip(chart.epochs, xs, strict=False))
    colour = r.colour if multi else ""

    def at(epoch: int) -> float | None:
        return where.get(epoch) if where else None

    out = []
    for e in chart.saved:
        x = at(e)
        if x is not None:
            out.append(Mark(x, "╵", f"dim {colour}".strip(), 1))
    for e in chart.resumes:
        x = at(e)
        if x is not None:
            out.append(Mark(x, "↻", f"bold {colour or 'yellow'}", 2))
    if chart.best_epoch is not None and at(chart.best_epoch) is not None:
        pushed = chart.best_pushed is True
        style = f"bold {colour or ('green' if pushed else 'yellow')}"
        out.append(Mark(at(chart.best_epoch), "✦" if pushed else "✧", style, 3))
    for e in chart.diverged:
        x = at(e)
        if x is not None:
            out.append(Mark(x, "✗", "bold red", 4))
    return out


def shared_axis(runs: Sequence[ShownRun], kind: str) -> XAxis:
    """One x-range for every panel: from the first point to a round number past the
    last (the total epochs of a run whose end is known, when that is nearer)."""
    lo, hi = None, None
    for r in runs:
        xs = x_values(r.chart, kind, r.price_per_hour)
        if not xs:
            continue
        lo = xs[0] if lo is None else min(lo, xs[0])
        hi = xs[-1] if hi is None else max(hi, xs[-1])
    if lo is None:
        return XAxis(0.0, 1.0, kind)
    if kind != "epoch":
        return XAxis(0.0, nice_ceil(hi), kind)
    end = nice_ceil(hi)
    totals = [r.info.total_epochs for r in runs if r.info and r.info.total_epochs]
    if totals and hi <= max(totals) < end:
        end = float(max(totals))
    return XAxis(min(lo, 1.0) if lo >= 0 else lo, max(end, lo + 1), kind)


def draw_metric(
    name: str,
    runs: Sequence[ShownRun],
    options: ChartOptions,
    axis: XAxis,
    kind: str,
    width: int,
    height: int,
) -> list[Row]:
    curves, marks = [], []
    multi = len(runs) > 1
    for r in runs:
        s = r.chart.metric(name)
        xs = x_values(r.chart, kind, r.price_per_hour)
        if xs is None:
            continue
        if s is not None:
            if options.smooth:
                curves.append(Curve(xs, s.values, f"dim {r.colour}"))
                curves.append(Curve(xs, ema(s.values, options.smooth, r.chart.stride), r.colour))
            else:
                curves.append(Curve(xs, s.values, r.colour))
        marks += _marks(r, xs, multi)
    cursor_x = None
    if options.cursor is not None and runs:
        first = runs[0]
        xs = x_values(first.chart, kind, first.price_per_hour)
        i = _index_of(first.chart, options.cursor)
        if xs and i is not None:
            cursor_x = xs[i]
    missing = "no values yet" if any(r.chart.metric(name) for r in runs) else "not in this run"
    return draw_panel(
        _title(name, runs, options),
        curves,
        width,
        height,
        axis,
        marks=marks,
        y_mode=options.y_mode,
        cursor=cursor_x,
        empty=missing,
    )


def status_row(
    runs: Sequence[ShownRun], options: ChartOptions, pages: int, width: int, keys: bool = True
) -> Row:
    """The reading options, each after its key: `e smooth 0.6  y linear  x epoch ...`
    (without the keys where there are none: `rgpu-tui chart`)."""
    smooth = f"{options.smooth:g}" if options.smooth else "off"
    if not keys:
        y = Y_NAMES.get(options.y_mode, options.y_mode)
        return text_row([(f"smooth {smooth} · y {y} · x {options.x_kind}", "dim")], width)
    parts = [
        ("e", "bold"),
        (f" smooth {smooth}  ", ""),
        ("y", "bold"),
        (f" {Y_NAMES.get(options.y_mode, options.y_mode)}  ", ""),
        ("x", "bold"),
        (f" {options.x_kind}  ", ""),
        ("←/→", "bold"),
        (" cursor  ", "dim"),
        ("/", "bold"),
        (" metric", "dim"),
    ]
    if pages > 1:
        parts += [("  m", "bold"), (f" panels {options.page % pages + 1}/{pages}", "dim")]
    return text_row(parts, width)


def legend_row(runs: Sequence[ShownRun], width: int) -> Row:
    parts: list[tuple[str, str]] = []
    if len(runs) > 1:
        for r in runs:
            parts += [("━━ ", f"bold {r.colour}"), (f"{r.label}  ", "")]
    parts.append((MARKS_LEGEND, "dim"))
    return text_row(parts, width)


def readout_row(runs: Sequence[ShownRun], options: ChartOptions, width: int) -> Row:
    """The cursor's epoch, and each run's time and money spent up to it."""
    if options.cursor is None:
        return text_row([("←/→: an epoch's values in every panel", "dim")], width)
    parts: list[tuple[str, str]] = [(f"epoch {options.cursor}", "bold")]
    for r in runs:
        i = _index_of(r.chart, options.cursor)
        colour = r.colour if len(runs) > 1 else ""
        if i is None:
            parts.append((f"   {r.label} -", colour))
            continue
        spent = r.chart.spent_seconds[i] if r.chart.spent_seconds else None
        money = (
            spent / 3600.0 * r.price_per_hour if spent is not None and r.price_per_hour else None
        )
        if r.price_per_hour == 0 and spent is not None:
            money = 0.0
        text = f"   {r.label} ep{r.chart.epochs[i]} {fmt_duration(spent)}"
        text += f" {fmt_money(money)}" if money is not None else " $?"
        parts.append((text, colour))
    return text_row(parts, width)


def chart_rows(
    runs: Sequence[ShownRun], options: ChartOptions, width: int, height: int, keys: bool = True
) -> list[Row]:
    """The whole view, `height` rows of at most `width` cells; `keys`: the keys that
    change it are named (the app), or not (`rgpu-tui chart`: no cursor row either)."""
    if not runs:
        return [
            text_row(
                [("No run to chart: select one (enter) or mark runs (space).", "italic")], width
            )
        ]
    kind = options.x_kind
    note = x_note(runs, kind)
    if note is not None:
        kind = "epoch"
    names = panel_metrics(runs, options)
    problems = [f"{r.label}: {printable(r.chart.problem)}" for r in runs if r.chart.problem]
    said = 1 if problems and names else 0  # a run with nothing to draw beside ones drawn
    body_h = max(height - (3 if keys or options.cursor is not None else 2) - said, 1)
    cols, rows_n = grid(width, body_h)
    per_page = cols * rows_n
    pages = max(1, math.ceil(len(names) / per_page))
    page = options.page % pages
    shown = names[page * per_page : (page + 1) * per_page]
    out = [status_row(runs, options, pages, width, keys), legend_row(runs, width)]
    if note is not None:
        out[1] = text_row([(note, "yellow")], width)
    if not names or said:
        out.append(text_row([("; ".join(problems) or "no numeric metrics yet", "italic")], width))
    if not names:
        return out
    axis = shared_axis(runs, kind)
    used_rows = math.ceil(len(shown) / cols)
    panel_h = max(body_h // max(used_rows, 1), 1)
    gap = 1
    panel_w = (width - gap * (cols - 1)) // cols
    for band in range(used_rows):
        names_here = shown[band * cols : (band + 1) * cols]
        drawn = [draw_metric(n, runs, options, axis, kind, panel_w, panel_h) for n in names_here]
        for line in range(panel_h):
            text, spans = "", []
            for j, panel in enumerate(drawn):
                plain, pspans = panel[line] if line < len(panel) else ("", ())
                start = j * (panel_w + gap)
                text = text.ljust(start) + plain
                spans += [(start + a, start + b, s) for a, b, s in pspans]
            styled = max((b for _a, b, _s in spans), default=0)  # a styled space stays
            text = text[:width]
            text = text[: max(len(text.rstrip()), min(styled, len(text)))]
            n = len(text)
            out.append((text, tuple((a, min(b, n), s) for a, b, s in spans if a < n)))
    last = height - 1 if keys or options.cursor is not None else height
    while len(out) < last:
        out.append(("", ()))
    out = out[:last]
    if last < height:
        out.append(readout_row(runs, options, width))
    return out


def chart_json(runs: Sequence[ShownRun], options: ChartOptions) -> dict:
    """The series the chart draws, per run: its epochs, the x values (time spent, dollars),
    and per metric the raw values and the smoothed ones, gaps as null (the same rules)."""
    names = panel_metrics(runs, options)
    out_runs = []
    for r in runs:
        chart = r.chart
        metrics = {}
        for name in names:
            s = chart.metric(name)
            if s is None:
                continue
            metrics[name] = {
                "raw": list(s.values),
                "smoothed": ema(s.values, options.smooth, chart.stride),
            }
        elapsed, spent = run_spent(r.info, r.price_per_hour)
        out_runs.append(
            {
                "run_dir": chart.run_dir,
                "name": r.label,
                "state": r.info.state if r.info is not None else None,
                "epochs": list(chart.epochs),
                "time_seconds": list(chart.spent_seconds) or None,
                "cost": x_values(chart, "cost", r.price_per_hour),
                "price_per_hour": r.price_per_hour,
                # the run's time and money, every view's (core.picture.cost.run_spent)
                "elapsed_seconds": elapsed,
                "spent": spent,
                "rows": chart.rows,
                "stride": chart.stride,
                "resumes": list(chart.resumes),
                "diverged": list(chart.diverged),
                "saved": list(chart.saved),
                "best_epoch": chart.best_epoch,
                "best_metric": chart.best_metric,
                "best_metric_name": chart.best_metric_name,
                "best_on_hub": chart.best_pushed,
                "problem": chart.problem,
                "metrics": metrics,
            }
        )
    note = x_note(runs, options.x_kind)
    return {
        "x": "epoch" if note else options.x_kind,
        "x_note": note,
        "smooth": options.smooth,
        "y": options.y_mode,
        "metrics": names,
        "runs": out_runs,
    }
