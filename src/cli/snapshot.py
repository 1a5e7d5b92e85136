"""`rgpu-tui snapshot` (what the app shows, once) and `rgpu-tui cost` (what the machine has
cost and will cost): the two read-only commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .gpus import add_gpu_source_flags, gpu_source_or_none, settings_and_gpu_source
from .options import DEFAULT_ROOT, add_settings_flags, settings_or_none


def _snapshot_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui snapshot", description="Print the runs under PATH once and exit."
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument("--json", action="store_true", help="print JSON (schema_version 1)")
    add_gpu_source_flags(p)
    p.add_argument(
        "--record-gpus",
        default=None,
        metavar="FILE",
        help="record NVML's GPUs to FILE (the --gpu-replay format) instead of printing",
    )
    p.add_argument(
        "--seconds",
        type=float,
        default=10.0,
        metavar="N",
        help="with --record-gpus: how long to record, one sample a second (default 10)",
    )
    add_settings_flags(p)
    return p


def cmd_snapshot(argv: list[str]) -> int:
    args = _snapshot_parser().parse_args(argv)
    from ..core.away.price_feed import price_feed
    from ..core.model.snapshot_json import snapshot_to_json
    from ..core.picture.collect import Collector
    from ..core.render.snapshot_text import snapshot_to_text

    choice = gpu_source_or_none(args)
    if choice is None:
        return 2
    if args.record_gpus is not None:
        from .gpus import record_command

        return record_command(args.record_gpus, args.seconds, choice)
    if not os.path.exists(args.path):
        print(f"rgpu-tui: {args.path}: no such file or directory", file=sys.stderr)
        return 2
    settings = settings_or_none(args)
    if settings is None:
        return 2
    price = price_feed(settings, start=False)
    if price is not None:
        price.read_once()  # one look: price_command once, within its timeout
    collector = Collector(
        args.path,
        **choice.collector_args(),
        settings=settings,
        one_shot=True,
        price=price,
    )
    try:
        # a run directory given as PATH is the selected run; a root selects the newest
        snap = collector.refresh(now=time.time(), selected=os.path.abspath(args.path))
    finally:
        collector.close()
    if args.json:
        json.dump(snapshot_to_json(snap), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(snapshot_to_text(snap))
    return 0


def _cost_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui cost",
        description="What the machine has cost and will cost, and whether to stop or destroy "
        "it; works before renting too (pass the prices as flags).",
    )
    p.add_argument(
        "path",
        nargs="?",
        default=DEFAULT_ROOT,
        help="runs root or one run directory: the newest run is costed, and its disk is the "
        "default disk size (default ./runs; need not exist)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (the `cost` of snapshot --json)")
    add_gpu_source_flags(p)
    add_settings_flags(p)
    return p


def cmd_cost(argv: list[str]) -> int:
    args = _cost_parser().parse_args(argv)
    got = settings_and_gpu_source(args)
    if got is None:
        return 2
    settings, choice = got
    from ..core.away.price_feed import price_feed
    from ..core.machine.gpu import GpuMonitor
    from ..core.model.snapshot_json import cost_to_json
    from ..core.picture.cost import cost_once, cost_to_text, disk_gb_for, disk_view

    now = time.time()
    runs, run = (), None
    if os.path.exists(args.path):
        from ..core.picture.watch import RunsWatcher

        snap = RunsWatcher(args.path).refresh(now, selected=os.path.abspath(args.path))
        runs, run = snap.runs, snap.selected_run
    system = disk_view(args.path)
    monitor = GpuMonitor(choice.fake_gpus, fake_lose=choice.fake_lose, replay=choice.replay)
    try:  # the GPUs the price is for (the price per GPU; simulated ones said so)
        gpus = monitor.sample(now, runs, None)
    finally:
        monitor.close()
    price = price_feed(settings, start=False)
    reading = price.read_once() if price is not None else None
    cost = cost_once(settings, time.time(), runs, run, gpus, system, reading)
    if args.json:
        json.dump(cost_to_json(cost), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(cost_to_text(cost, settings, now, disk_gb_for(settings, system), run, gpus))
    return 0
