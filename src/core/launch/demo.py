"""`rgpu-tui demo`: a real (tiny, CPU) libreyolo training to watch.

A deterministic synthetic YOLO dataset (core.launch.synthetic_dataset) is written to
a work directory and trained from scratch with yolo9-t through the same
launcher as the app's launch form.

The demo's steps are here too (`launch_demo`, then `wait_without_app` or the
app, then `after_app_lines`): each says its lines through a `say` callable and
stops with DemoFailed; the command only prints them and runs the app.

Nothing here needs libreyolo's Python: the dataset is written without PIL, and
libreyolo is the executable a launch starts (on PATH when rgpu-tui is
installed apart from training).
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.formatting import fmt_bytes
from ..base.invocation import command
from ..records.launch_records import LaunchRecord
from ..records.launch_runs import launch_alive
from .demo_runs import DemoRuns, clear_demo_runs, demo_runs
from .doctor import run_doctor
from .launch import launch
from .launch_spec import LaunchError, libreyolo_executable, libreyolo_missing, make_spec
from .launch_wait import died_lines, wait_for_run_dir
from .synthetic_dataset import BALANCED_MARK, DARK_BG, make_dataset

DEMO_NAME = "demo"
DEMO_IMGSZ = 128
NO_APP_WAIT_S = 30.0  # --no-app: how long to wait for the run directory
SIMULATED_GPUS = 2  # what the app shows where there is no NVIDIA driver
DEMO_ARGS = (
    "pretrained=False",
    "workers=0",
    "amp=False",
    "eval_interval=1",
    "save_period=5",
)


def default_demo_dir(environ=None) -> str:
    """~/.cache/rgpu-tui/demo (XDG_CACHE_HOME honoured), else a new temp directory."""
    env = os.environ if environ is None else environ
    cache = env.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(cache, "rgpu-tui", "demo")
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="rgpu-tui-demo-")


def libreyolo_problem() -> str | None:
    """Why the demo cannot train here (None: it can): no `libreyolo` to launch, beside this
    Python or on PATH (this Python need not import it: the launch runs the executable)."""
    if libreyolo_executable() is None:
        return f"the demo trains with libreyolo: {libreyolo_missing()}"
    return None


@dataclass(frozen=True)
class Demo:
    work_dir: str
    data_yaml: str
    runs_root: str
    record: LaunchRecord


def demo_dataset(work_dir: str) -> str:
    """The demo dataset under work_dir/dataset (made once; deterministic): balanced, so that
    `libreyolo doctor` finds nothing to warn about. One made by an older rgpu-tui (not
    balanced: a doctor warning every time) is made again."""
    root = os.path.join(work_dir, "dataset")
    data_yaml = os.path.join(root, "data.yaml")
    try:
        with open(data_yaml, encoding="utf-8", errors="replace") as f:
            current = f.readline() == BALANCED_MARK.splitlines(keepends=True)[0]
    except OSError:
        current = False
    if not current:
        make_dataset(Path(root), n_train=16, n_val=8, imgsz=DEMO_IMGSZ, seed=0,
                     background=DARK_BG, balanced=True)  # fmt: skip
    return data_yaml


CLEAR_HINT = "`rgpu-tui demo --clear` removes the demo runs once none is training"


def demo_data_yaml(work_dir: str) -> str:
    return os.path.join(os.path.abspath(work_dir), "dataset", "data.yaml")


def runs_of(work_dir: str) -> DemoRuns:
    """The demo runs of this work directory, measured (core.launch.demo_runs)."""
    return demo_runs(work_dir, demo_data_yaml(work_dir), DEMO_NAME)


def runs_line(runs: DemoRuns, what: str = "demo runs") -> str | None:
    """'3 demo runs in DIR: 1.0 GB on disk (`rgpu-tui demo --clear` removes ...)'."""
    n = len(runs.run_dirs)
    if not n:
        return None
    noun = what if n > 1 else what.replace("runs", "run")
    return f"{n} {noun} in {runs.runs_root}: {fmt_bytes(runs.bytes)} on disk ({CLEAR_HINT})"


def clear_demo(work_dir: str | None, *, say: Say) -> None:
    """`rgpu-tui demo --clear`: remove this work directory's demo runs (never while one
    trains: DemoFailed naming it), and say what it freed."""
    work_dir = os.path.abspath(work_dir) if work_dir else default_demo_dir()
    runs = runs_of(work_dir)
    if runs.training:
        pid, where = runs.training[0]
        how = f"rgpu-tui stop {where}" if os.path.isdir(where) else f"kill -INT {pid}"
        raise DemoFailed(
            f"a demo run is still training (pid {pid}): stop it first ({how}); nothing removed"
        )
    if not runs.run_dirs:
        say(f"no demo runs in {runs.runs_root}: nothing to remove")
        return
    freed = clear_demo_runs(runs)
    n = len(runs.run_dirs)
    say(f"removed {n} demo run{'s' if n > 1 else ''} from {runs.runs_root}: {fmt_bytes(freed)}")


def start_demo(work_dir: str, epochs: int = 40, env=None, settings=None) -> Demo:
    """Make the dataset and launch the demo run under work_dir/runs (returns at once)."""
    work_dir = os.path.abspath(work_dir)
    data_yaml = demo_dataset(work_dir)
    runs_root = os.path.join(work_dir, "runs")
    spec = make_spec(
        data_yaml,
        runs_root,
        settings=settings,
        model="yolo9-t",
        epochs=epochs,
        batch=4,
        imgsz=DEMO_IMGSZ,
        device="cpu",
        name=DEMO_NAME,
        extra=DEMO_ARGS,
    )
    run_env = dict(os.environ if env is None else env)
    run_env.setdefault("HF_HUB_OFFLINE", "1")  # trains from scratch: never fetch weights
    run_env.setdefault("MPLBACKEND", "Agg")
    record = launch(spec, env=run_env)
    return Demo(work_dir, data_yaml, runs_root, record)


# -- the demo's steps (`rgpu-tui demo`) ------------------------------------------------

Say = Callable[[str], None]


class DemoFailed(Exception):
    """The demo cannot go on: `message` (one line; empty when the steps already said why)
    and `details` (more lines, e.g. the end of the console log)."""

    def __init__(self, message: str = "", details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.details = tuple(details)


def launch_demo(work_dir: str | None, *, epochs: int, settings, doctor: bool, say: Say) -> Demo:
    """The demo up to its launch: libreyolo is here, the work directory (default
    default_demo_dir()), the dataset, `libreyolo doctor` on it (unless doctor=False), the
    launch. Each step says its lines; DemoFailed when one cannot go on (then nothing runs)."""
    problem = libreyolo_problem()
    if problem:
        raise DemoFailed(problem)
    work_dir = os.path.abspath(work_dir) if work_dir else default_demo_dir()
    say(f"demo directory: {work_dir}")
    earlier = runs_line(runs_of(work_dir), "earlier demo runs")
    if earlier:
        say(earlier)
    try:
        data_yaml = demo_dataset(work_dir)
    except OSError as exc:
        raise DemoFailed(f"cannot write the demo dataset in {work_dir}: {exc}") from None
    say(f"dataset: {data_yaml} (16 train / 8 val images, {DEMO_IMGSZ} px, 3 classes)")
    if doctor:
        say("checking the dataset with libreyolo doctor...")
        report = run_doctor(data_yaml, DEMO_IMGSZ)
        say(f"libreyolo doctor: {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
        for line in report.errors + report.warnings:
            say(f"  {line}")
        if not report.ok:
            raise DemoFailed()
    try:
        demo = start_demo(work_dir, epochs=epochs, settings=settings)
    except LaunchError as exc:
        raise DemoFailed(str(exc)) from None
    record = demo.record
    say(f"started: pid {record.pid}")
    say(f"command: {record.command}")
    say(f"console log: {record.console_log}")
    say(f"runs root: {demo.runs_root}")
    return demo


def wait_without_app(demo: Demo, *, say: Say, seconds: float = NO_APP_WAIT_S) -> None:
    """`demo --no-app`: wait for the run directory, then say where it is and how to watch
    it; DemoFailed (with the end of the console log) when the run died."""
    state = wait_for_run_dir(demo.record, seconds)
    if state.state == "died":
        first, *rest = died_lines(state)
        raise DemoFailed(first, rest)
    say(f"run directory: {state.run_dir or 'not yet known (still starting)'}")
    say(f"watch it: rgpu-tui {demo.runs_root}")
    used = runs_line(runs_of(demo.work_dir))
    if used:
        say(used)


def app_fake_gpus(choice, *, say: Say) -> int | None:
    """The simulated GPUs the demo's app shows: the flags' choice (a GpuSourceChoice), or
    SIMULATED_GPUS when NVML was asked for and there is none here (said)."""
    if choice.nvml and not nvml_available():
        say(
            f"no NVIDIA GPU/driver here: the app shows {SIMULATED_GPUS} simulated GPUs "
            "(labelled simulated)"
        )
        return SIMULATED_GPUS
    return choice.fake_gpus


def nvml_available() -> bool:
    from ..machine.gpu import GpuMonitor

    monitor = GpuMonitor()
    try:
        return monitor.sample(time.time(), (), None).available
    finally:
        monitor.close()


def after_app_lines(demo: Demo) -> list[str]:
    """What to say when the app closes: the run goes on, and how to stop it; what the demo
    runs use on disk now, and how to clear them."""
    record = demo.record
    used = runs_line(runs_of(demo.work_dir))
    out = [used] if used else []
    if not launch_alive(record):
        return out
    state = wait_for_run_dir(record, 0)
    if state.run_dir:
        how = f"{command()} stop {shlex.quote(state.run_dir)}"
    else:
        how = f"kill -INT {record.pid}"
    return [
        f"the demo run goes on in the background (pid {record.pid}); stop it with:",
        f"  {how}",
        *out,
    ]
