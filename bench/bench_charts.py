#!/usr/bin/env python
"""What the chart view costs: drawing a chart, and the live app with the charts open.

1. **Render** (in this process): one 100x20 chart of 4 runs x 300 epochs (a loss-like
   curve each, a few gaps), median of `--repeat` draws: rgpu-tui's own braille renderer
   (core.render.chart_draw.draw_panel, with its rows turned into Rich Text as the app
   paints them) against plotext (braille marker, its own axes and ticks; skipped when
   plotext is not installed), and the size of one ANSI frame of each (what a redraw would
   send, 256 colours). Also the whole chart view at 120x40 (core.render.chart_layout:
   4 panels, 4 runs) and the debiased EMA of 4 x 300 points.
2. **Live** (`--live`): the real console script in a pseudo-terminal at 120x40 (as
   bench/bench_app.py: 8 simulated GPUs, a run replayed at one epoch every 2 s with 10 log
   lines a second and 200 epochs of history, the completed fixture run, a price set);
   after a warm-up `v` opens the chart view; then CPU (% of one core) and bytes/s to the
   terminal are measured over `--seconds`, in truecolor (COLORTERM=truecolor) and in 256
   colours. Against the budget: <= 1% of a core, <= 4 KB/s.

It asserts nothing; it prints a table (or --json).

    .venv/bin/python bench/bench_charts.py                    # render only, seconds
    .venv/bin/python bench/bench_charts.py --live             # + the live app, about 3 minutes
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bench_app
import benchlib

from rgpu_tui.core.model.snapshot import ChartSeries, RunChart
from rgpu_tui.core.render.chart_draw import Curve, XAxis, draw_panel
from rgpu_tui.core.render.chart_layout import COLOURS, ChartOptions, ShownRun, chart_rows, ema

BUDGET = {"cpu": 1.0, "bytes": 4096.0}


def curves(runs: int = 4, epochs: int = 300) -> list[tuple[list[float], list[float | None]]]:
    out = []
    for r in range(runs):
        xs = [float(e) for e in range(1, epochs + 1)]
        ys: list[float | None] = [
            5.0 / math.sqrt(e) + 0.3 * r + 0.05 * math.sin(e / 3.0 + r)
            for e in range(1, epochs + 1)
        ]
        for gap in range(50 + r, epochs, 97):
            ys[gap] = None
        out.append((xs, ys))
    return out


def ansi_bytes(rows) -> int:
    """One frame of these rows as a 256-colour terminal gets it (Rich's own encoding)."""
    from io import StringIO

    from rich.console import Console
    from rich.text import Span, Text

    buf = StringIO()
    console = Console(file=buf, force_terminal=True, color_system="256", width=200)
    for plain, spans in rows:
        text = Text(plain)
        text.spans = [Span(a, b, s) for a, b, s in spans]
        console.print(text)
    return len(buf.getvalue().encode())


def time_ms(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), max(times)


def render_bench(repeat: int) -> dict:
    data = curves()
    axis = XAxis(1, 300)
    out: dict = {}

    def ours():
        cs = [Curve(xs, ys, COLOURS[i]) for i, (xs, ys) in enumerate(data)]
        return draw_panel([("train/box_loss", "bold")], cs, 100, 20, axis)

    out["own_ms"], out["own_max_ms"] = time_ms(ours, repeat)
    out["own_frame_bytes"] = ansi_bytes(ours())
    try:
        import plotext as plt
    except ImportError:
        out["plotext"] = "not installed"
    else:
        out["plotext_version"] = benchlib.package_version("plotext")

        def theirs() -> str:
            """Four braille lines, plotext's axes, ticks and title, as a string."""
            points = [
                (
                    [x for x, y in zip(xs, ys, strict=True) if y is not None],
                    [y for y in ys if y is not None],
                )
                for xs, ys in data
            ]
            if hasattr(plt, "clear_figure"):  # plotext 5
                plt.clear_figure()
                plt.plotsize(100, 20)
                for i, (px, py) in enumerate(points):
                    plt.plot(px, py, marker="braille", color=i + 1)
                plt.title("train/box_loss")
                return plt.build()
            fig = plt.figure  # plotext 6: one figure object, signals drawn onto it
            fig.clear.all()
            fig.plot_size(100, 20)
            for px, py in points:
                fig.draw(fig.signal(px, py, marker="braille"))
            fig.title("train/box_loss")
            return str(fig.build())

        out["plotext_ms"], out["plotext_max_ms"] = time_ms(theirs, repeat)
        out["plotext_frame_bytes"] = len(theirs().encode())

    shown = []
    names = ("train/box_loss", "train/cls_loss", "metrics/mAP50", "lr/group0")
    for i, (xs, ys) in enumerate(data):
        series = tuple(ChartSeries(n, tuple(ys)) for n in names)
        chart = RunChart(run_dir=f"/r{i}", epochs=tuple(int(x) for x in xs), series=series,
                         spent_seconds=tuple(60.0 * x for x in xs), rows=300)  # fmt: skip
        shown.append(ShownRun(f"/r{i}", f"run{i}", chart, None, 3.48, COLOURS[i]))
    for label, options in (("view", ChartOptions()), ("view_smooth", ChartOptions(smooth=0.6))):
        out[f"{label}_120x40_ms"], _ = time_ms(
            lambda o=options: chart_rows(shown, o, 88, 32), repeat
        )
        out[f"{label}_120x40_bytes"] = ansi_bytes(chart_rows(shown, options, 88, 32))
    out["ema_4x300_ms"], _ = time_ms(lambda: [ema(ys, 0.6) for _xs, ys in data], repeat)
    return out


def live_session(args, root: Path, base: Path, colorterm: str | None) -> dict:
    """bench_app's pty session, with `v` pressed after the warm-up."""
    args.colorterm = colorterm
    env = bench_app.app_env(base, colorterm)
    argv = bench_app.app_argv(args, root)
    pid, fd = bench_app.spawn_in_pty(argv, env, 120, 40)
    rec = bench_app.Recorder(fd)
    res: dict = {"colours": colorterm or "256"}
    try:
        proc = bench_app.psutil.Process(pid)
        time.sleep(args.warmup)
        os.write(fd, b"v")
        time.sleep(args.warmup)
        found = rec.first_time(b"smooth", 0.0) is not None
        res["chart_view_seen"] = found
        t0, c0, b0 = time.monotonic(), bench_app.cpu_seconds(proc), rec.bytes_now()
        time.sleep(args.seconds)
        t1, c1, b1 = time.monotonic(), bench_app.cpu_seconds(proc), rec.bytes_now()
        res["cpu_percent"] = 100.0 * (c1 - c0) / (t1 - t0)
        res["bytes_per_s"] = (b1 - b0) / (t1 - t0)
    finally:
        res.update(bench_app.stop_child(pid, fd))
        rec.thread.join(2.0)
        os.close(fd)
    return res


def live_bench(args) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory(prefix="rgpu-bench-charts-") as tmp:
        base = Path(tmp)
        root = bench_app.make_root(base)
        replayer = bench_app.start_replayer(root / bench_app.LIVE_RUN, 200, 1000)
        try:
            for colorterm in ("truecolor", None):
                for _ in range(args.live_repeat):
                    out.append(live_session(args, root, base, colorterm))
        finally:
            bench_app.stop_replayer(replayer)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=20, help="draws per renderer (20)")
    p.add_argument("--live", action="store_true", help="also measure the live app in a pty")
    p.add_argument("--seconds", type=float, default=40.0, help="live: measured window (40)")
    p.add_argument("--warmup", type=float, default=8.0, help="live: before and after `v` (8)")
    p.add_argument("--live-repeat", type=int, default=1, help="live: windows per colour mode")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    # what bench_app's argv builder reads
    args.app, args.gpus, args.price, args.theme = bench_app.DEFAULT_APP, 8, True, None
    res = {"machine": bench_app.machine(), "render": render_bench(args.repeat)}
    if args.live:
        res["live"] = live_bench(args)
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    r = res["render"]
    print("render: one 100x20 chart, 4 runs x 300 epochs (median of", args.repeat, "draws)")
    print(f"  rgpu-tui braille  {r['own_ms']:7.2f} ms  frame {r['own_frame_bytes']:6d} B")
    if "plotext_ms" in r:
        print(
            f"  plotext {r['plotext_version']:<9} {r['plotext_ms']:7.2f} ms  "
            f"frame {r['plotext_frame_bytes']:6d} B"
        )
    else:
        print("  plotext: not installed")
    print(f"  chart view 88x32 (4 panels x 4 runs): {r['view_120x40_ms']:.2f} ms, "
          f"{r['view_120x40_bytes']} B; smoothed {r['view_smooth_120x40_ms']:.2f} ms")  # fmt: skip
    print(f"  EMA 4 x 300: {r['ema_4x300_ms']:.3f} ms")
    for s in res.get("live", []):
        cpu, rate = s["cpu_percent"], s["bytes_per_s"]
        print(
            f"live 120x40 charts open, {s['colours']:>9}: CPU {cpu:.2f}% "
            f"({'met' if cpu <= BUDGET['cpu'] else 'OVER'}), {rate / 1000:.2f} KB/s "
            f"({'met' if rate <= BUDGET['bytes'] else 'OVER'}); view seen: {s['chart_view_seen']}"
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
