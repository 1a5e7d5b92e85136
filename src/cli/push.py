"""`rgpu-tui push RUN_DIR`: push one checkpoint of a run to the Hugging Face Hub (the push
itself is core.hub.push.push; SIGTERM and Ctrl-C interrupt it and are recorded)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..core.base.formatting import fmt_bytes
from .interrupts import interrupted, sigterm_interrupts
from .numbers import OneLineParser, number
from .options import add_hub_timeout_flag, add_settings_flags, settings_or_none

PUSH_SETTLE_RANGE = (0.0, 300.0)  # seconds


def push_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="rgpu-tui push",
        description="Push one checkpoint of a run (and its small artifacts) to the Hugging Face "
        "Hub in one commit. The token comes from HF_TOKEN or `hf auth login`; the repo is "
        "created private when missing; an unchanged file makes no new commit.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory")
    p.add_argument(
        "--file",
        default=None,
        metavar="best|last|epoch_N|artifacts|PATH",
        help="what to push (default best, or last when there is no best.pt)",
    )
    p.add_argument("--repo", default=None, metavar="ORG/NAME", help="Hub repo (wins over hub_repo)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--force", action="store_true", help="push even if this file was pushed unchanged"
    )
    add_hub_timeout_flag(p)
    p.add_argument(
        "--settle",
        type=number(*PUSH_SETTLE_RANGE),
        default=2.0,
        metavar="S",
        help="seconds the checkpoint must be unchanged before it is copied, 0 to 300 (default 2)",
    )
    add_settings_flags(p)
    return p


def cmd_push(argv: list[str]) -> int:
    args = push_parser().parse_args(argv)
    if not os.path.isdir(args.run_dir):
        print(f"rgpu-tui: {args.run_dir}: no such run directory", file=sys.stderr)
        return 2
    settings = settings_or_none(args)
    if settings is None:
        return 2
    import dataclasses

    from ..core.base.text import printable
    from ..core.hub.push import Interrupted, PushRequest, file_for_arg, push

    if args.repo:
        settings = dataclasses.replace(settings, hub_repo=args.repo.strip())
    run_dir = os.path.abspath(args.run_dir)
    request = PushRequest(run_dir, file_for_arg(args.file, run_dir))

    # SIGTERM (kill, a shutting-down machine) interrupts the push like Ctrl-C: the attempt
    # is recorded as interrupted and the staging copy removed, instead of dying silently
    try:
        with sigterm_interrupts():
            result = push(
                request, settings, timeout=args.timeout, settle_s=args.settle, force=args.force
            )
    except (Interrupted, KeyboardInterrupt) as exc:
        return interrupted(exc, "push", "recorded")
    for notice in result.notices:
        print(f"rgpu-tui: {printable(notice)}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif result.ok:
        where = f"{result.repo}/{result.path}"
        size = f" ({fmt_bytes(result.size)})" if result.size is not None else ""
        if result.skipped_unchanged:
            line = f"{result.file}{size} is unchanged since it was pushed to {where}"
        else:
            line = f"pushed {result.file}{size} to {where}: {result.commit_url}"
        print(printable(line))
    if not result.ok:
        print(f"rgpu-tui: push failed: {printable(result.error)}", file=sys.stderr)
        return 1
    return 0
