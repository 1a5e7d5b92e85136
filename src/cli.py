"""Command line: `rgpu-tui [PATH]` opens the app; `rgpu-tui COMMAND ...` runs one of the
sub-commands in COMMANDS (the dispatch in main() and the --help text both read that table).

Argument parsing only; the work is done by core (and the app).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from .cli_numbers import OneLineParser, number
from .core.config import ConfigError, add_settings_flags, settings_from_args
from .output import run_guarded

DEFAULT_ROOT = "./runs"
# the ranges of the numeric flags (seconds unless said otherwise)
INTERVAL_RANGE = (0.1, 3600.0)
PUSH_TIMEOUT_RANGE = (1.0, 3600.0)
PUSH_SETTLE_RANGE = (0.0, 300.0)
PREFLIGHT_TIMEOUT_RANGE = (5.0, 3600.0)
LAUNCH_WAIT_RANGE = (0.0, 3600.0)
DEMO_EPOCHS_RANGE = (1, 1000)


def _app_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="rgpu-tui",
        description="Supervise LibreYOLO training runs from the terminal. `rgpu-tui [PATH]` "
        "opens the app on PATH (the options below); `rgpu-tui COMMAND ...` runs one of the "
        "commands listed at the end (`rgpu-tui COMMAND -h` for its options).",
        epilog=_commands_help(),
        formatter_class=_LinesKept,
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument("--version", action=_VersionAction, help="print the version and exit")
    p.add_argument(
        "--interval",
        type=number(*INTERVAL_RANGE),
        default=1.0,
        help="seconds between refreshes, 0.1 to 3600 (default 1)",
    )
    p.add_argument("--theme", default=None, help="Textual theme, e.g. ansi-dark for slow links")
    _add_fake_gpus(p)
    add_settings_flags(p)
    return p


def _add_fake_gpus(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fake-gpus",
        default=None,
        metavar="N",
        help="replace NVML with N simulated GPUs, 0 to 64 (also RGPU_FAKE_GPUS=N); "
        "labelled simulated",
    )
    p.add_argument(
        "--gpu-replay",
        default=None,
        metavar="FILE",
        help="replace NVML with a GPU recording (JSON lines, from snapshot --record-gpus; "
        "also RGPU_GPU_REPLAY=FILE); labelled replay",
    )


def _fake_gpus(args):
    """The GPU source the flags and environment ask for (a GpuSourceChoice); ValueError
    with one line for a bad value or two sources at once."""
    from .core.gpu_source import choose_gpu_source

    return choose_gpu_source(args.fake_gpus, args.gpu_replay)


def _snapshot_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rgpu-tui snapshot", description="Print the runs under PATH once and exit."
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument("--json", action="store_true", help="print JSON (schema_version 1)")
    _add_fake_gpus(p)
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


def _settings(args):
    """The settings, or None after printing the one-line error (the caller exits 2).
    A default config file that cannot be read is a one-line warning; the command goes on."""
    try:
        settings = settings_from_args(args)
    except ConfigError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return None
    for warning in settings.warnings:
        print(f"rgpu-tui: warning: {warning}", file=sys.stderr)
    return settings


def cmd_snapshot(argv: list[str]) -> int:
    args = _snapshot_parser().parse_args(argv)
    from .core.collect import Collector
    from .core.snapshot import snapshot_to_json, snapshot_to_text

    try:
        choice = _fake_gpus(args)
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    if args.record_gpus is not None:
        from .gpu_cli import record_command

        return record_command(args.record_gpus, args.seconds, choice)
    if not os.path.exists(args.path):
        print(f"rgpu-tui: {args.path}: no such file or directory", file=sys.stderr)
        return 2
    settings = _settings(args)
    if settings is None:
        return 2
    collector = Collector(
        args.path,
        fake_gpus=choice.fake_gpus,
        fake_lose=choice.fake_lose,
        gpu_replay=choice.replay,
        settings=settings,
        one_shot=True,
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


# -- rgpu-tui push ------------------------------------------------------------


def _push_parser() -> argparse.ArgumentParser:
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
    p.add_argument(
        "--timeout",
        type=number(*PUSH_TIMEOUT_RANGE),
        default=60.0,
        metavar="S",
        help="seconds to wait for the Hub to answer before giving up, 1 to 3600 (default 60)",
    )
    p.add_argument(
        "--settle",
        type=number(*PUSH_SETTLE_RANGE),
        default=2.0,
        metavar="S",
        help="seconds the checkpoint must be unchanged before it is copied, 0 to 300 (default 2)",
    )
    add_settings_flags(p)
    return p


def _human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


def cmd_push(argv: list[str]) -> int:
    args = _push_parser().parse_args(argv)
    if not os.path.isdir(args.run_dir):
        print(f"rgpu-tui: {args.run_dir}: no such run directory", file=sys.stderr)
        return 2
    settings = _settings(args)
    if settings is None:
        return 2
    import dataclasses

    from .core.hub import Interrupted, PushRequest, file_for_arg, push
    from .core.text import printable

    if args.repo:
        settings = dataclasses.replace(settings, hub_repo=args.repo.strip())
    run_dir = os.path.abspath(args.run_dir)
    request = PushRequest(run_dir, file_for_arg(args.file, run_dir))

    def terminated(signum, frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the record is being written
        raise Interrupted("SIGTERM")

    # SIGTERM (kill, a shutting-down machine) interrupts the push like Ctrl-C: the attempt
    # is recorded as interrupted and the staging copy removed, instead of dying silently
    in_main = threading.current_thread() is threading.main_thread()  # where signals go
    previous = signal.signal(signal.SIGTERM, terminated) if in_main else None
    try:
        result = push(
            request, settings, timeout=args.timeout, settle_s=args.settle, force=args.force
        )
    except Interrupted:
        print("rgpu-tui: push interrupted by SIGTERM (recorded)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("rgpu-tui: push interrupted by SIGINT (recorded)", file=sys.stderr)
        return 128 + signal.SIGINT
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
    for notice in result.notices:
        print(f"rgpu-tui: {printable(notice)}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif result.ok:
        where = f"{result.repo}/{result.path}"
        size = f" ({_human_bytes(result.size)})" if result.size is not None else ""
        if result.skipped_unchanged:
            line = f"{result.file}{size} is unchanged since it was pushed to {where}"
        else:
            line = f"pushed {result.file}{size} to {where}: {result.commit_url}"
        print(printable(line))
    if not result.ok:
        print(f"rgpu-tui: push failed: {printable(result.error)}", file=sys.stderr)
        return 1
    return 0


def cmd_app(argv: list[str]) -> int:
    args = _app_parser().parse_args(argv)
    settings = _settings(args)
    if settings is None:
        return 2
    from .tui.app import RgpuApp

    try:
        choice = _fake_gpus(args)
        app = RgpuApp(
            root=args.path,
            interval=args.interval,
            theme_name=args.theme,
            fake_gpus=choice.fake_gpus,
            fake_lose=choice.fake_lose,
            gpu_replay=choice.replay,
            settings=settings,
        )
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0


# -- launch, stop, preflight, demo ---------------------------------------------------


def _launch_parser() -> argparse.ArgumentParser:
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
    from .core.launch import LaunchError, arg_key

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


def _wait_for_run_dir(record, seconds: float):
    """The launch's state after waiting up to `seconds` for its run directory."""
    from .core.launch import launch_state, record_run_dir

    deadline = time.monotonic() + max(seconds, 0.0)
    while True:
        state = launch_state(record, time.time())
        if state.state != "starting" or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    if state.state == "started" and state.run_dir:
        try:
            record_run_dir(record.project, record.id, state.run_dir)
        except OSError:
            pass
    return state


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
    print(f"rgpu-tui: the run died: {state.error}", file=sys.stderr)
    if state.tail:
        print(f"--- last lines of {state.console_log} ---", file=sys.stderr)
        print("\n".join(state.tail[-10:]), file=sys.stderr)


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
    args = _launch_parser().parse_args(argv)
    settings = _settings(args)
    if settings is None:
        return 2
    from .core.launch import LaunchError, gpu_count_from_nvml, hf_status, launch, make_spec
    from .core.preflight import run_doctor

    try:
        fields = _launch_fields(args)
        gpus = gpu_count_from_nvml() if "device" not in fields else None
        spec = make_spec(settings=settings, gpu_count=gpus, **fields)
    except LaunchError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
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
    state = _wait_for_run_dir(record, args.wait)
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
    settings = _settings(args)
    if settings is None:
        return 2
    if not os.path.isdir(args.run_dir):
        print(f"rgpu-tui: {args.run_dir}: not a directory", file=sys.stderr)
        return 2
    from .core.launch import stop_run
    from .core.text import printable

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


def cmd_preflight(argv: list[str]) -> int:
    p = OneLineParser(
        prog="rgpu-tui preflight",
        description="Check that torch in this environment can use every GPU: version, "
        "CUDA availability, and one 2000x2000 matmul per GPU. Exit 1 when it cannot.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--timeout",
        type=number(*PREFLIGHT_TIMEOUT_RANGE),
        default=120.0,
        metavar="S",
        help="seconds the check may take, 5 to 3600 (default 120)",
    )
    args = p.parse_args(argv)
    from .core.preflight import gpu_preflight, preflight_to_text

    report = gpu_preflight(timeout=args.timeout)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(preflight_to_text(report))
    return 0 if report.ok else 1


def cmd_demo(argv: list[str]) -> int:
    p = OneLineParser(
        prog="rgpu-tui demo",
        description="Train yolo9-t for real on the CPU on a small synthetic dataset and "
        "watch it in the app (with simulated GPUs when there is no NVIDIA driver).",
    )
    p.add_argument("--dir", default=None, help="work directory (default ~/.cache/rgpu-tui/demo)")
    p.add_argument(
        "--epochs",
        type=number(*DEMO_EPOCHS_RANGE, integer=True, unit="epochs"),
        default=40,
        help="epochs to train, 1 to 1000 (default 40)",
    )
    p.add_argument("--no-doctor", action="store_true", help="skip `libreyolo doctor`")
    p.add_argument("--no-app", action="store_true", help="launch and print; do not open the app")
    _add_fake_gpus(p)
    add_settings_flags(p)
    args = p.parse_args(argv)
    settings = _settings(args)
    if settings is None:
        return 2
    try:
        choice = _fake_gpus(args)  # before anything starts: a bad value starts nothing
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    from .core.demo import default_demo_dir, demo_dataset, libreyolo_problem, start_demo
    from .core.launch import LaunchError

    problem = libreyolo_problem()
    if problem:
        print(f"rgpu-tui: {problem}", file=sys.stderr)
        return 1
    work_dir = os.path.abspath(args.dir) if args.dir else default_demo_dir()
    print(f"demo directory: {work_dir}")
    try:
        data_yaml = demo_dataset(work_dir)
    except OSError as exc:
        print(f"rgpu-tui: cannot write the demo dataset in {work_dir}: {exc}", file=sys.stderr)
        return 1
    print(f"dataset: {data_yaml} (16 train / 8 val images, 128 px, 3 classes)")
    if not args.no_doctor:
        from .core.preflight import run_doctor

        print("checking the dataset with libreyolo doctor...", flush=True)
        doctor = run_doctor(data_yaml, 128)
        print(f"libreyolo doctor: {len(doctor.errors)} error(s), {len(doctor.warnings)} warning(s)")
        for line in doctor.errors + doctor.warnings:
            print(f"  {line}")
        if not doctor.ok:
            return 1
    try:
        demo = start_demo(work_dir, epochs=args.epochs, settings=settings)
    except LaunchError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 1
    record = demo.record
    print(f"started: pid {record.pid}")
    print(f"command: {record.command}")
    print(f"console log: {record.console_log}")
    print(f"runs root: {demo.runs_root}")
    if args.no_app:
        state = _wait_for_run_dir(record, 30.0)
        if state.state == "died":
            _print_died(state)
            return 1
        where = state.run_dir or "not yet known (still starting)"
        print(f"run directory: {where}")
        print(f"watch it: rgpu-tui {demo.runs_root}")
        return 0
    fake_n = choice.fake_gpus
    if choice.nvml and not _nvml_available():
        fake_n = 2
        print("no NVIDIA GPU/driver here: the app shows 2 simulated GPUs (labelled simulated)")
    from .tui.app import RgpuApp

    app = RgpuApp(
        root=demo.runs_root,
        fake_gpus=fake_n,
        fake_lose=choice.fake_lose,
        gpu_replay=choice.replay,
        settings=settings,
    )
    app.run()
    from .core.launch import launch_alive

    if launch_alive(record):
        state = _wait_for_run_dir(record, 0)
        print(f"the demo run goes on in the background (pid {record.pid}); stop it with:")
        print(f"  rgpu-tui stop {state.run_dir}" if state.run_dir else f"  kill -INT {record.pid}")
    return app.return_code or 0


def _nvml_available() -> bool:
    from .core.gpu import GpuMonitor

    monitor = GpuMonitor()
    try:
        return monitor.sample(time.time(), (), None).available
    finally:
        monitor.close()


# -- the command table, --help and --version ----------------------------------------

# name -> (function, one-line summary); main() dispatches on it and --help lists it
COMMANDS = {
    "snapshot": (cmd_snapshot, "print what the app shows, once (--json: the Snapshot)"),
    "cost": (cmd_cost, "what the machine has cost and will cost; stop or destroy it"),
    "push": (cmd_push, "push a run's checkpoint and small artifacts to the Hugging Face Hub"),
    "launch": (cmd_launch, "start `libreyolo train KEY=VALUE...` detached, after doctor"),
    "stop": (cmd_stop, "stop a run: SIGINT, then SIGTERM, then SIGKILL"),
    "preflight": (cmd_preflight, "check that torch can use every GPU (one matmul each)"),
    "demo": (cmd_demo, "train yolo9-t for real on the CPU and watch it in the app"),
    "watch": (
        lambda argv: __import__("rgpu_tui.cli_watch", fromlist=["_"]).cmd_watch(argv),
        "watch with no screen: one line per event, and notify_command for it",
    ),
    "help": (lambda _argv: cmd_app(["--help"]), "this help (also -h, --help)"),
}


class _LinesKept(argparse.HelpFormatter):
    """argparse's help, except that a text with line breaks (the command table) is kept as
    written instead of being wrapped into one paragraph."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _commands_help() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {summary}" for name, (_f, summary) in COMMANDS.items()]
    return "commands:\n" + "\n".join(lines)


def version_text() -> str:
    """`rgpu-tui VERSION (textual VERSION, fast paths on)`: from the installed distributions'
    metadata, and which of the app's fast paths this Textual allows (probed, not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    from .tui import compat

    def installed(dist: str) -> str | None:
        try:
            return version(dist)
        except PackageNotFoundError:
            return None

    own = installed("rgpu-tui") or "version unknown (not installed as a distribution)"
    textual = installed("textual") or "not installed"
    return f"rgpu-tui {own} (textual {textual}, {compat.probe().text()})"


class _VersionAction(argparse.Action):
    """--version: computed only when asked for (not each time the parser is built)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


@run_guarded
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        command, _summary = COMMANDS[argv[0]]
        return command(argv[1:])
    return cmd_app(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
