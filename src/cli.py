"""Command line: `rgpu-tui [PATH]` opens the app; `rgpu-tui snapshot` prints once;
`rgpu-tui cost` prints the money.

Argument parsing only; the work is done by core (and the app).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .core.config import ConfigError, add_settings_flags, settings_from_args

DEFAULT_ROOT = "./runs"


def _app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui",
        description="Supervise LibreYOLO training runs from the terminal. "
        "Sub-commands: `rgpu-tui snapshot [PATH] [--json]` prints what the app shows, once; "
        "`rgpu-tui cost [PATH] [--json]` prints what the machine costs.",
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default 1)"
    )
    p.add_argument("--theme", default=None, help="Textual theme, e.g. ansi-dark for slow links")
    _add_fake_gpus(p)
    add_settings_flags(p)
    return p


def _add_fake_gpus(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fake-gpus",
        type=int,
        default=None,
        metavar="N",
        help="replace NVML with N simulated GPUs (also RGPU_FAKE_GPUS=N); labelled simulated",
    )


def _fake_gpus(args) -> tuple[int | None, dict[int, float] | None]:
    """--fake-gpus wins over RGPU_FAKE_GPUS; RGPU_FAKE_GPU_LOSE=i@s loses device i after s."""
    from .core.gpu import fake_gpus_from_env

    env_n, lose = fake_gpus_from_env()
    n = args.fake_gpus if args.fake_gpus is not None else env_n
    if n is not None and n < 0:
        raise ValueError("--fake-gpus must be 0 or more")
    return n, lose


def _snapshot_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui snapshot", description="Print the runs under PATH once and exit."
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument("--json", action="store_true", help="print JSON (schema_version 1)")
    _add_fake_gpus(p)
    add_settings_flags(p)
    return p


def _settings(args):
    """The settings, or None after printing the one-line error (the caller exits 2)."""
    try:
        return settings_from_args(args)
    except ConfigError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return None


def cmd_snapshot(argv: list[str]) -> int:
    args = _snapshot_parser().parse_args(argv)
    from .core.collect import Collector
    from .core.snapshot import snapshot_to_json, snapshot_to_text

    if not os.path.exists(args.path):
        print(f"rgpu-tui: {args.path}: no such file or directory", file=sys.stderr)
        return 2
    settings = _settings(args)
    if settings is None:
        return 2
    try:
        fake_n, fake_lose = _fake_gpus(args)
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    collector = Collector(
        args.path, fake_gpus=fake_n, fake_lose=fake_lose, settings=settings, one_shot=True
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
    add_settings_flags(p)
    return p


def cmd_cost(argv: list[str]) -> int:
    args = _cost_parser().parse_args(argv)
    settings = _settings(args)
    if settings is None:
        return 2
    from .core.cost import cost_once, cost_to_text, disk_gb_for, disk_view
    from .core.snapshot import cost_to_json

    now = time.time()
    runs, run = (), None
    if os.path.exists(args.path):
        from .core.watch import RunsWatcher

        snap = RunsWatcher(args.path).refresh(now, selected=os.path.abspath(args.path))
        runs, run = snap.runs, snap.selected_run
    system = disk_view(args.path)
    cost = cost_once(settings, now, runs, run, None, system)
    if args.json:
        json.dump(cost_to_json(cost), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(cost_to_text(cost, settings, now, disk_gb_for(settings, system), run))
    return 0


def cmd_app(argv: list[str]) -> int:
    args = _app_parser().parse_args(argv)
    if args.interval <= 0:
        print("rgpu-tui: --interval must be a positive number of seconds", file=sys.stderr)
        return 2
    settings = _settings(args)
    if settings is None:
        return 2
    from .tui.app import RgpuApp

    try:
        fake_n, fake_lose = _fake_gpus(args)
        app = RgpuApp(
            root=args.path,
            interval=args.interval,
            theme_name=args.theme,
            fake_gpus=fake_n,
            fake_lose=fake_lose,
            settings=settings,
        )
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "snapshot":
        return cmd_snapshot(argv[1:])
    if argv and argv[0] == "cost":
        return cmd_cost(argv[1:])
    return cmd_app(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
