"""Command line: `rgpu-tui [PATH]` opens the app; `rgpu-tui snapshot` prints once.

Argument parsing only; the work is done by core (and the app).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

DEFAULT_ROOT = "./runs"


def _app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui",
        description="Supervise LibreYOLO training runs from the terminal. "
        "Sub-command: `rgpu-tui snapshot [PATH] [--json]` prints what the app shows, once.",
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default 1)"
    )
    p.add_argument("--theme", default=None, help="Textual theme, e.g. ansi-dark for slow links")
    return p


def _snapshot_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui snapshot", description="Print the runs under PATH once and exit."
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument("--json", action="store_true", help="print JSON (schema_version 1)")
    return p


def cmd_snapshot(argv: list[str]) -> int:
    args = _snapshot_parser().parse_args(argv)
    from .core.snapshot import snapshot_to_json, snapshot_to_text
    from .core.watch import RunsWatcher

    if not os.path.exists(args.path):
        print(f"rgpu-tui: {args.path}: no such file or directory", file=sys.stderr)
        return 2
    watcher = RunsWatcher(args.path)
    # a run directory given as PATH is the selected run; a root selects the newest
    snap = watcher.refresh(now=time.time(), selected=os.path.abspath(args.path))
    if args.json:
        json.dump(snapshot_to_json(snap), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(snapshot_to_text(snap))
    return 0


def cmd_app(argv: list[str]) -> int:
    args = _app_parser().parse_args(argv)
    if args.interval <= 0:
        print("rgpu-tui: --interval must be a positive number of seconds", file=sys.stderr)
        return 2
    from .tui.app import RgpuApp

    try:
        app = RgpuApp(root=args.path, interval=args.interval, theme_name=args.theme)
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "snapshot":
        return cmd_snapshot(argv[1:])
    return cmd_app(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
