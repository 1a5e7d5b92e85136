"""`rgpu-tui resume RUN_DIR [--from best|last|epoch_N|PATH]`: continue a DEAD, FAILED or STOPPED run
from its newest complete checkpoint (or the one named), in its own directory, detached like
`launch`. The checks, the command and the start are core's
(core.launch.resume); here the arguments are read and the result printed."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .launch import LAUNCH_WAIT_RANGE, _print_died
from .numbers import OneLineParser, number
from .options import add_settings_flags, settings_or_none


def resume_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="rgpu-tui resume",
        description="Resume a run that died or failed: start `libreyolo train "
        "model=RUN_DIR/weights/CHECKPOINT resume=True data=DATA device=DEVICE` detached (it "
        "survives this shell), continuing in RUN_DIR. CHECKPOINT is the newest complete one "
        "of last.pt, epoch_N.pt and best.pt (a torn file, e.g. a 0-byte last.pt left by a "
        "kill, is renamed NAME.torn-TIME and skipped), or the one --from names. DATA and "
        "DEVICE are the run's own (its train_config.yaml); libreyolo restores every other "
        "setting from the checkpoint. Refused (exit 1) while the run's process is alive, "
        "for a completed run, and without a complete checkpoint.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (holds weights/)")
    p.add_argument(
        "--from",
        dest="choice",
        default=None,
        metavar="CHECKPOINT",
        help="best, last, epoch_N or the path of a .pt checkpoint (default: the newest "
        "complete one of last.pt, epoch_N.pt and best.pt, by the epoch it holds)",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="PATH",
        help="the dataset's data.yaml, when not where train_config.yaml says (a new machine)",
    )
    p.add_argument(
        "--device",
        default=None,
        metavar="DEVICE",
        help="GPU indices such as 0,1 or cpu (default: the run's own)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--wait",
        type=number(*LAUNCH_WAIT_RANGE),
        default=20.0,
        metavar="S",
        help="seconds to wait for the resumed run to rewrite status.json, 0 to 3600 (default 20)",
    )
    add_settings_flags(p)
    return p


def cmd_resume(argv: list[str]) -> int:
    args = resume_parser().parse_args(argv)
    if settings_or_none(args) is None:
        return 2
    from ..core.launch.launch_spec import hf_status
    from ..core.launch.launch_wait import wait_for_run_dir
    from ..core.launch.resume import ResumeError, start_resume

    try:
        plan, record = start_resume(
            args.run_dir, data=args.data, device=args.device, choice=args.choice
        )
    except ResumeError as exc:
        if args.json:
            json.dump({"state": "refused", "error": str(exc)}, sys.stdout, indent=2)
            sys.stdout.write("\n")
        print(f"rgpu-tui: not resumed: {exc}", file=sys.stderr)
        return 1
    state = wait_for_run_dir(record, args.wait)
    elsewhere = state.run_dir is not None and state.run_dir != plan.run_dir
    if args.json:
        out = {
            "launch": record.to_json(),
            "pid": record.pid,
            "command": record.command,
            "console_log": record.console_log,
            "run_dir": plan.run_dir,
            "resumed_in": state.run_dir,
            "state": state.state,
            "error": state.error,
            "plan": plan.to_json(),
            "hf_token_set": record.hf_token_set,
        }
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for notice in plan.notices:
            print(f"rgpu-tui: {notice}", file=sys.stderr)
        done = plan.completed_epochs
        total = f"/{plan.total_epochs}" if plan.total_epochs else ""
        since = f" after epoch {done}{total}" if done is not None else ""
        print(f"resumed: pid {record.pid} ({plan.state}{since}) {plan.from_text()}")
        for old, new in zip(plan.set_aside, plan.set_aside_as, strict=False):
            print(f"set aside: {os.path.basename(old)} (torn) kept as {new}")
        print(f"command: {record.command}")
        print(f"console log: {record.console_log}")
        hf = hf_status()
        token = "set (passed through the environment)" if hf.token_set else "not set"
        print(f"HF_TOKEN: {token}; HF_HOME: {hf.home}")
        if state.state == "started":
            print(f"run directory: {state.run_dir}")
        elif state.state == "starting":
            print(f"run directory: {plan.run_dir} (still starting; see the console log)")
    if elsewhere:
        print(
            f"rgpu-tui: warning: libreyolo writes into {state.run_dir}, not {plan.run_dir}",
            file=sys.stderr,
        )
    if state.state == "died":
        _print_died(state)
        return 1
    return 0
