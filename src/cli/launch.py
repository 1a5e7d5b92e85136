"""`rgpu-tui launch KEY=VALUE...` (start `libreyolo train` detached, after `libreyolo doctor`)
and `rgpu-tui stop RUN_DIR` (SIGINT, SIGTERM, SIGKILL): the commands that start and stop a
run. The launch, the wait for its run directory and the stop are core's (core.launch.launch,
core.launch.launch_wait, core.launch.stop); here the arguments are read and the results printed."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .numbers import OneLineParser, number
from .options import DEFAULT_ROOT, add_settings_flags, settings_or_none

LAUNCH_WAIT_RANGE = (0.0, 3600.0)  # seconds


def launch_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="rgpu-tui launch",
        description="Start `libreyolo train KEY=VALUE...` detached (it survives this shell), "
        "after checking the dataset with `libreyolo doctor`. The keys model, data, epochs, "
        "batch, imgsz, device (default: every GPU, else cpu) fill the launch fields; any "
        "other KEY=VALUE is passed to libreyolo literally. Example: "
        "rgpu-tui launch --name exp -- data=/data/coco.yaml epochs=50 cache=ram",
    )
    p.add_argument("--project", default=None, help=f"runs root (default {DEFAULT_ROOT})")
    p.add_argument("--name", default=None, help="run name (libreyolo makes NAME2 on a clash)")
    p.add_argument("--no-doctor", action="store_true", help="skip `libreyolo doctor DATA`")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--wait",
        type=number(*LAUNCH_WAIT_RANGE),
        default=20.0,
        metavar="S",
        help="seconds to wait for the run directory, 0 to 3600 (default 20)",
    )
    p.add_argument("args", nargs="*", metavar="KEY=VALUE", help="libreyolo train arguments")
    add_settings_flags(p)
    return p


def _launch_fields(args) -> dict:
    """KEY=VALUE items -> make_spec keyword arguments (unknown keys go to extra)."""
    from ..core.launch.launch_spec import LaunchError, arg_key

    fields: dict = {"extra": []}
    for item in args.args:
        key = arg_key(item) if "=" in item and not item.startswith("-") else None
        if key in ("model", "data", "epochs", "batch", "imgsz", "device", "project", "name"):
            if key in fields:
                raise LaunchError(f"{key} is given twice")
            fields[key] = item.split("=", 1)[1]
        else:
            fields["extra"].append(item)
    for key in ("project", "name"):
        flag = getattr(args, key)
        if flag is not None:
            if key in fields:
                raise LaunchError(f"{key} is given both as --{key} and as {key}=")
            fields[key] = flag
    if "data" not in fields:
        raise LaunchError("give the dataset: data=/path/to/data.yaml")
    fields.setdefault("project", DEFAULT_ROOT)
    return fields


def _print_launch(record, state, hf) -> None:
    print(f"started: pid {record.pid}")
    print(f"command: {record.command}")
    print(f"console log: {record.console_log}")
    token = "set (passed through the environment)" if hf.token_set else "not set"
    print(f"HF_TOKEN: {token}; HF_HOME: {hf.home}")
    if state.state == "started":
        print(f"run directory: {state.run_dir}")
    elif state.state == "starting":
        print("run directory: not yet known (still starting; see the console log)")


def _print_died(state) -> None:
    from ..core.launch.launch_wait import died_lines

    first, *rest = died_lines(state)
    print(f"rgpu-tui: {first}", file=sys.stderr)
    for line in rest:
        print(line, file=sys.stderr)


def _launch_json(record, state, hf, doctor) -> dict:
    return {
        "launch": record.to_json(),
        "pid": record.pid,
        "command": record.command,
        "console_log": record.console_log,
        "run_dir": state.run_dir,
        "state": state.state,
        "error": state.error,
        "hf_token_set": hf.token_set,
        "hf_home": hf.home,
        "doctor": doctor.to_json() if doctor is not None else None,
    }


def cmd_launch(argv: list[str]) -> int:
    args = launch_parser().parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    from ..core.launch.doctor import run_doctor
    from ..core.launch.launch import launch
    from ..core.launch.launch_spec import (
        LaunchError,
        gpu_count_from_nvml,
        hf_status,
        libreyolo_executable,
        libreyolo_missing,
        make_spec,
    )
    from ..core.launch.launch_wait import wait_for_run_dir

    try:
        fields = _launch_fields(args)
        gpus = gpu_count_from_nvml() if "device" not in fields else None
        spec = make_spec(settings=settings, gpu_count=gpus, **fields)
    except LaunchError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    if libreyolo_executable() is None:  # not the dataset's fault: before the doctor
        print(f"rgpu-tui: {libreyolo_missing()}", file=sys.stderr)
        return 1
    doctor = None
    if not args.no_doctor:
        if not args.json:
            print(f"checking {spec.data} with libreyolo doctor...", file=sys.stderr)
        doctor = run_doctor(spec.data, spec.imgsz)
        if not doctor.ok:
            if args.json:
                json.dump({"state": "refused", "doctor": doctor.to_json()}, sys.stdout, indent=2)
                sys.stdout.write("\n")
            print(doctor.output, file=sys.stderr)
            print("rgpu-tui: the dataset has errors: not launched", file=sys.stderr)
            return 1
        if doctor.warnings and not args.json:
            print("\n".join(f"warning: {w}" for w in doctor.warnings), file=sys.stderr)
            print("launching anyway (warnings do not block a launch)", file=sys.stderr)
    try:
        record = launch(spec)
    except LaunchError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 1
    state = wait_for_run_dir(record, args.wait)
    hf = hf_status()
    if args.json:
        json.dump(_launch_json(record, state, hf, doctor), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_launch(record, state, hf)
    if state.state == "died":
        _print_died(state)
        return 1
    return 0


def cmd_stop(argv: list[str]) -> int:
    p = OneLineParser(
        prog="rgpu-tui stop",
        description="Stop a run: SIGINT (libreyolo records it as failed), SIGTERM after "
        "stop_term_after s, SIGKILL after stop_kill_after s. Only status.json's pid is "
        "signalled, and only if that process started from 10 min before to 1 min after the "
        "run's started_at (or exactly when rgpu-tui launched it) and is python, libreyolo or "
        "torchrun; else nothing is sent and it exits 1. Returns when the run has ended.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (holds status.json)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_settings_flags(p)
    args = p.parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    if not os.path.isdir(args.run_dir):
        print(f"rgpu-tui: {args.run_dir}: not a directory", file=sys.stderr)
        return 2
    from ..core.base.text import printable
    from ..core.launch.stop import stop_run

    nexts = {"sigint": "SIGTERM", "sigterm": "SIGKILL"}
    last = {"phase": None, "tick": None}

    def progress(phase: str, left: float | None) -> None:
        tick = None if left is None else int(left // 10)
        if args.json or (phase, tick) == (last["phase"], last["tick"]):
            return
        if phase in nexts and phase != last["phase"]:
            print(f"{phase.upper()} sent; {nexts[phase]} in {left:.0f} s", file=sys.stderr)
        elif phase in nexts:
            print(f"  waiting: {nexts[phase]} in {left:.0f} s", file=sys.stderr)
        elif phase == "sigkill" and phase != last["phase"]:
            print("SIGKILL sent", file=sys.stderr)
        last["phase"], last["tick"] = phase, tick

    result = stop_run(os.path.abspath(args.run_dir), settings, on_progress=progress)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif result.ok:
        sent = ", ".join(result.signals_sent) or "nothing (it was not running)"
        target = f" to {result.target}" if result.target and result.signals_sent else ""
        line = f"stopped: {result.final_state} after {result.seconds:.1f} s (sent {sent}{target})"
        print(printable(line))
    else:
        print(f"rgpu-tui: {printable(result.error)}", file=sys.stderr)
    return 0 if result.ok else 1
