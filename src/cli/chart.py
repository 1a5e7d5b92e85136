"""`rgpu-tui chart RUN_DIR...` (a run's metrics as line charts, several runs overlaid) and
`rgpu-tui compare RUN_DIR...` (the compare table): the chart view of the app, printed once.

Both read each run directory once (core.picture.charts.charts_once) and draw with the app's
own code (core.render.chart_layout, core.render.compare). Colours only on a terminal
(never when piped, nor with NO_COLOR or TERM=dumb); run names and metric names are made
printable before they are drawn.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time

from .numbers import OneLineParser, number
from .options import add_settings_flags, settings_or_none
from .output import styled_stdout

MAX_RUNS = 6
PANEL_ROWS = 12  # a panel's rows when --height is not given


def _runs_arg(p) -> None:
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (up to 6)")


def _chart_parser() -> OneLineParser:
    p = OneLineParser(
        prog="rgpu-tui chart",
        description="Print a run's metrics as line charts (several runs overlaid, up to 6).",
    )
    _runs_arg(p)
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="NAME",
        help="a metric to draw, as the views name it (mAP50-95) or its column "
        "(metrics/mAP50-95); repeat for more; only those are drawn (default: the model "
        "family's panels)",
    )
    p.add_argument(
        "--smooth",
        type=number(0.0, 0.999, unit=""),
        default=0.0,
        metavar="A",
        help="debiased EMA weight, 0 (off) to 0.999; the raw line is drawn faint behind",
    )
    p.add_argument("--x", choices=("epoch", "time", "cost"), default="epoch", help="the x-axis")
    p.add_argument("--y", choices=("linear", "robust", "log"), default="linear", help="the y-axis")
    p.add_argument("--width", type=number(20, 1000, integer=True, unit="columns"), default=None)
    p.add_argument("--height", type=number(6, 1000, integer=True, unit="rows"), default=None)
    p.add_argument("--json", action="store_true", help="print the series drawn as JSON")
    add_settings_flags(p)
    return p


def _compare_parser() -> OneLineParser:
    p = OneLineParser(
        prog="rgpu-tui compare",
        description="Compare runs: state, epochs, best metric, time, cost, $ per point, "
        "and the hyperparameters that differ (train_config.yaml).",
    )
    _runs_arg(p)
    p.add_argument("--width", type=number(40, 1000, integer=True, unit="columns"), default=None)
    p.add_argument("--json", action="store_true", help='print {"runs": [...], "differs": [...]}')
    add_settings_flags(p)
    return p


def _shown(args, settings, metrics=()):
    """(ShownRuns of the run directories, the columns `metrics` name), or None after a
    one-line error (an unknown metric name offers the nearest one)."""
    from ..core.picture.charts import (
        MAX_METRICS,
        ChartRequest,
        charts_once,
        charts_snapshot,
        metric_candidates,
        resolve_metrics,
        run_label,
    )
    from ..core.render.chart_layout import run_colours, shown_run

    if len(args.run_dirs) > MAX_RUNS:
        print(f"rgpu-tui: at most {MAX_RUNS} runs at once", file=sys.stderr)
        return None
    if len(metrics) > MAX_METRICS:
        print(f"rgpu-tui: at most {MAX_METRICS} metrics at once", file=sys.stderr)
        return None
    for d in args.run_dirs:
        if not os.path.isdir(d):
            print(f"rgpu-tui: {d}: not a run directory", file=sys.stderr)
            return None
    wanted = metric_candidates(metrics)
    request = ChartRequest(tuple(args.run_dirs), wanted, defaults=not metrics)
    got = charts_once(args.run_dirs, request, settings, time.time())
    names, problem = resolve_metrics(metrics, (c for _i, chart in got for c in chart.columns))
    if problem:
        print(f"rgpu-tui: {problem}", file=sys.stderr)
        return None
    keys = [chart.run_dir for _info, chart in got]
    labels = [run_label(chart.run_dir) for _i, chart in got]
    if len(set(labels)) < len(labels):  # two runs of the same name: their paths
        labels = [chart.run_dir for _i, chart in got]
    colours = run_colours(keys, labels)
    snap = charts_snapshot(got, settings, time.time())  # the price: the snapshot's cost's
    runs = [
        shown_run(key, key, snap, colours[key], label=label)
        for key, label in zip(keys, labels, strict=True)
    ]
    return [run for run in runs if run is not None], names


def _colour() -> bool:
    stream = styled_stdout()
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _print_rows(rows) -> None:
    """Rows of (plain, spans): coloured on a terminal, plain text otherwise."""
    if not _colour():
        for plain, _spans in rows:
            print(plain.rstrip())
        return
    from rich.console import Console
    from rich.text import Text

    stream = styled_stdout()  # escapes of ours, text made printable
    console = Console(file=stream, force_terminal=True, highlight=False, soft_wrap=True)
    for plain, spans in rows:
        text = Text(plain.rstrip())
        for a, b, style in spans:
            text.stylize(style, a, b)
        console.print(text)


def cmd_chart(argv: list[str]) -> int:
    args = _chart_parser().parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    from ..core.render.chart_layout import (
        ChartOptions,
        chart_json,
        chart_rows,
        grid,
        panel_metrics,
    )

    shown = _shown(args, settings, args.metric)
    if shown is None:
        return 2
    runs, names = shown
    options = ChartOptions(
        smooth=args.smooth, y_mode=args.y, x_kind=args.x, picked=names, only_picked=bool(names)
    )
    if args.json:
        import json

        print(json.dumps(chart_json(runs, options), indent=1, allow_nan=False, default=str))
        return 0
    size = shutil.get_terminal_size((100, 40))
    width = args.width or max(size.columns, 40)
    height = args.height
    if height is None:  # every panel, none paged
        cols, _rows = grid(width, PANEL_ROWS)
        height = 2 + max(1, math.ceil(len(panel_metrics(runs, options)) / cols)) * PANEL_ROWS
    _print_rows(chart_rows(runs, options, width, height, keys=False))
    return 0


def cmd_compare(argv: list[str]) -> int:
    args = _compare_parser().parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    from ..core.render.compare import compare_json, compare_lines, compare_rows

    shown = _shown(args, settings)
    if shown is None:
        return 2
    runs, _names = shown
    rows, differs = compare_rows(runs)
    if args.json:
        import json

        print(json.dumps(compare_json(rows, differs), indent=1, allow_nan=False, default=str))
        return 0
    width = args.width or max(shutil.get_terminal_size((100, 40)).columns, 40)
    _print_rows(
        [
            (text, ((0, len(text), style),) if style else ())
            for text, style in compare_lines(rows, differs, width)
        ]
    )
    return 0
