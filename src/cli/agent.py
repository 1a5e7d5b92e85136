"""`rgpu-tui agent [ROOT]`: the remote end of `rgpu-tui fleet`, run by `ssh HOST`.

JSON lines on stdout (hello, the full Snapshot, then deltas), commands on stdin; the
protocol and the loop are core.fleet.agent's. What it says about itself that is not a line of
the protocol (a settings warning) goes to stderr, which the fleet shows when the agent
does not start.
"""

from __future__ import annotations

import os
import sys

from .app import INTERVAL_RANGE
from .gpus import add_gpu_source_flags, settings_and_gpu_source
from .numbers import OneLineParser, number
from .options import DEFAULT_ROOT, add_settings_flags

# twice the app's 1 s: the link budget (bench/bench_fleet.py: <= 2 KB/s per host with 8 GPUs
# and a live run); `rgpu-tui agent --interval 1` in remote_command for the app's pace
DEFAULT_INTERVAL = 2.0


def _parser() -> OneLineParser:
    p = OneLineParser(
        prog="rgpu-tui agent",
        description="The remote end of `rgpu-tui fleet` (run it as `ssh HOST rgpu-tui agent "
        "ROOT`): writes a hello line, the Snapshot of ROOT as JSON, then one line per refresh "
        "with what changed; reads commands (push, stop, resume, refresh, select) on stdin, "
        "one JSON object a line. Ends with status 0 when stdin closes; runs keep going.",
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument(
        "--interval",
        type=number(*INTERVAL_RANGE),
        default=DEFAULT_INTERVAL,
        help=f"seconds between refreshes, 0.1 to 3600 (default {DEFAULT_INTERVAL:g})",
    )
    add_gpu_source_flags(p)
    add_settings_flags(p)
    return p


def cmd_agent(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    got = settings_and_gpu_source(args)
    if got is None:
        return 2
    settings, choice = got

    from ..core.away.headless import Stop
    from ..core.away.price_feed import price_feed
    from ..core.fleet.agent import Agent, LineWriter
    from ..core.model.snapshot_json import LOG_TAIL_LEN
    from ..core.picture.collect import Collector

    # the fleet quotes ROOT for the remote shell, so a ~ arrives as typed
    root = os.path.abspath(os.path.expanduser(args.path))
    stop = Stop()
    collector = None
    try:
        collector = Collector(
            root,
            **choice.collector_args(),
            interval=args.interval,
            log_keep=LOG_TAIL_LEN,  # the log lines a snapshot carries
            settings=settings,
            price=price_feed(settings),
        )
        writer = LineWriter(sys.stdout.buffer)
        agent = Agent(collector, settings, writer, root=root, interval=args.interval)
        agent.run(stop, sys.stdin.fileno())
    finally:
        if collector is not None:
            collector.close()
        stop.close()
    return 0
