"""`rgpu-tui pull REPO RUN`: argument parsing and printing; the work is core.hub.hub_pull."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..core.base.formatting import fmt_bytes
from .interrupts import interrupted, sigterm_interrupts
from .numbers import OneLineParser
from .options import add_hub_timeout_flag, settings_or_none


def _pull_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="rgpu-tui pull",
        description="Download what `rgpu-tui push` put on the Hugging Face Hub for RUN into "
        "DIR/RUN/ in libreyolo's layout (weights/best.pt, weights/last.pt, weights/epoch_N.pt, "
        "and status.json, metrics.jsonl, results.csv, summary.json, train_config.yaml), each "
        "file verified against the Hub's hash before it takes its name. A different local "
        "file is not replaced without --force; an identical one is left as it is.",
    )
    p.add_argument("repo", metavar="REPO", help="the Hub repo, ORG/NAME")
    p.add_argument("run", metavar="RUN", help="the run's name (its directory name when pushed)")
    p.add_argument(
        "--to", default=".", metavar="DIR", help="where RUN/ goes (default: this directory)"
    )
    p.add_argument(
        "--file",
        default="best",
        choices=("best", "last", "all"),
        help="best.pt (default; last.pt when the repo has no best.pt), last.pt, or all: "
        "best.pt, last.pt, every epoch_N.pt and the small artifacts",
    )
    p.add_argument("--force", action="store_true", help="replace a different local file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_hub_timeout_flag(p)
    p.add_argument(
        "--hub-path",
        default=None,
        metavar="TEMPLATE",
        help="where the push put the files (default: the hub_path setting, {run}/{file})",
    )
    p.add_argument("--config", default=None, metavar="FILE", help="read settings from FILE instead")
    return p


def cmd_pull(argv: list[str]) -> int:
    args = _pull_parser().parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    from ..core.base.text import printable
    from ..core.hub.hub_pull import ALREADY_HERE, DOWNLOADED, PullArgumentError, pull
    from ..core.hub.push import Interrupted

    hub_path = args.hub_path if args.hub_path is not None else settings.hub_path

    def downloading(rel: str, size: int) -> None:  # a big file on a slow link takes a while
        if not args.json:
            print(f"downloading {rel} ({fmt_bytes(size)})...", flush=True)

    # SIGTERM ends a download like Ctrl-C: its temporary file is removed on the way out
    try:
        with sigterm_interrupts():
            result = pull(
                args.repo.strip(), args.run, hub_path=hub_path, to_dir=args.to, which=args.file,
                force=args.force, timeout=args.timeout, on_download=downloading,
            )  # fmt: skip
    except PullArgumentError as exc:
        print(f"rgpu-tui: {printable(str(exc))}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt) as exc:
        return interrupted(exc, "pull", "nothing half-written")
    for notice in result.notices:
        print(f"rgpu-tui: {printable(notice)}", file=sys.stderr)
    for f in result.files:
        if f.error:
            print(f"rgpu-tui: {printable(f.error)}", file=sys.stderr)
    if result.error:
        print(f"rgpu-tui: pull failed: {printable(result.error)}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for f in result.files:
            sha = f" sha256 {f.sha256[:12]}" if f.sha256 else ""
            if f.outcome == DOWNLOADED:
                print(printable(f"downloaded {f.rel} ({fmt_bytes(f.size or 0)},{sha})"))
            elif f.outcome == ALREADY_HERE:
                print(printable(f"{f.rel} already here ({sha.strip()})"))
        if result.files and result.revision:
            where = os.path.join(args.to, args.run) if args.to != "." else args.run
            print(printable(f"{result.repo}@{result.revision[:12]} -> {where}"))
    return 0 if result.ok else 1
