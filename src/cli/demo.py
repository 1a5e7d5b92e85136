"""`rgpu-tui demo`: train yolo9-t for real on the CPU and watch it in the app. The steps
(libreyolo here, the dataset, the doctor, the launch, the wait, what to say afterwards) are
core.launch.demo's; here the arguments are read, the lines printed and the app run."""

from __future__ import annotations

import sys

from ..core.base.invocation import command
from .gpus import add_gpu_source_flags, settings_and_gpu_source
from .numbers import OneLineParser, number
from .options import add_settings_flags

DEMO_EPOCHS_RANGE = (1, 1000)


def _say(line: str) -> None:
    print(line, flush=True)


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
    p.add_argument(
        "--clear",
        action="store_true",
        help="remove the demo runs of the work directory (not while one trains), say what "
        "it freed, and exit: each run keeps a few hundred MB of checkpoints",
    )
    add_gpu_source_flags(p)
    add_settings_flags(p)
    args = p.parse_args(argv)
    got = settings_and_gpu_source(args)  # before anything starts: a bad value starts nothing
    if got is None:
        return 2
    settings, choice = got
    if args.clear:
        from ..core.launch import demo as steps

        try:
            steps.clear_demo(args.dir, say=_say)
        except steps.DemoFailed as exc:
            print(f"rgpu-tui: {exc.message}", file=sys.stderr)
            return 1
        return 0
    if not args.no_app:  # before anything starts: no training the app could not show
        from .app import no_terminal

        refused = no_terminal(
            "rgpu-tui demo", f"`{command()} demo --no-app` launches and prints the run's progress"
        )
        if refused:
            print(refused, file=sys.stderr)
            return 2
    from ..core.launch import demo as steps

    try:
        demo = steps.launch_demo(
            args.dir, epochs=args.epochs, settings=settings, doctor=not args.no_doctor, say=_say
        )
        if args.no_app:
            steps.wait_without_app(demo, say=_say)
            return 0
    except steps.DemoFailed as exc:
        if exc.message:
            print(f"rgpu-tui: {exc.message}", file=sys.stderr)
        for line in exc.details:
            print(line, file=sys.stderr)
        return 1
    fake_gpus = steps.app_fake_gpus(choice, say=_say)
    from ..tui.app import RgpuApp

    app = RgpuApp(
        root=demo.runs_root,
        fake_gpus=fake_gpus,
        fake_lose=choice.fake_lose,
        gpu_replay=choice.replay,
        settings=settings,
    )
    app.run()
    for line in steps.after_app_lines(demo):
        print(line)
    return app.return_code or 0
