"""`rgpu-tui demo`: a real (tiny, CPU) libreyolo training to watch.

A deterministic synthetic YOLO dataset (coloured rectangles, 3 classes) is
written to a work directory and trained from scratch with yolo9-t through the
same launcher as the app's launch form. The tests use the same generator.

The demo's steps are here too (`launch_demo`, then `wait_without_app` or the
app, then `after_app_lines`): each says its lines through a `say` callable and
stops with DemoFailed; the command only prints them and runs the app.

PIL is imported only when a dataset is made: it comes with libreyolo (the
`train` extra), not with rgpu-tui itself.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .doctor import run_doctor
from .launch import (
    INSTALL_HINT,
    LaunchError,
    LaunchRecord,
    launch,
    launch_alive,
    libreyolo_executable,
    make_spec,
)
from .launch_wait import died_lines, wait_for_run_dir

CLASS_NAMES = ("red", "green", "blue")
_CLASS_COLOURS = ((220, 40, 40), (40, 200, 60), (50, 70, 230))
LIGHT_BG = (90, 160)  # the tests' dataset (kept byte-identical)
DARK_BG = (10, 50)  # the demo's

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


def _draw_image(rng: random.Random, imgsz: int, background: tuple[int, int]):
    from PIL import Image, ImageDraw

    bg = tuple(rng.randint(*background) for _ in range(3))
    img = Image.new("RGB", (imgsz, imgsz), bg)
    draw = ImageDraw.Draw(img)
    labels: list[str] = []
    min_side = max(8, imgsz // 8)
    max_side = max(min_side + 1, imgsz // 2)
    for _ in range(rng.randint(1, 3)):
        cls = rng.randrange(len(CLASS_NAMES))
        w = rng.randint(min_side, max_side)
        h = rng.randint(min_side, max_side)
        x0 = rng.randint(0, imgsz - w)
        y0 = rng.randint(0, imgsz - h)
        draw.rectangle((x0, y0, x0 + w - 1, y0 + h - 1), fill=_CLASS_COLOURS[cls])
        xc = (x0 + w / 2) / imgsz
        yc = (y0 + h / 2) / imgsz
        labels.append(f"{cls} {xc:.6f} {yc:.6f} {w / imgsz:.6f} {h / imgsz:.6f}")
    return img, labels


def make_dataset(
    root: Path | str,
    n_train: int = 16,
    n_val: int = 8,
    imgsz: int = 128,
    seed: int = 0,
    *,
    background: tuple[int, int] = LIGHT_BG,
) -> Path:
    """Write a YOLO-format dataset under ``root`` and return the absolute data.yaml path.

    Layout: images/{train,val}/*.png, labels/{train,val}/*.txt, data.yaml.
    The same arguments always produce byte-identical label files and images.
    background: the range of each channel of the flat background colour.
    """
    root = Path(root).resolve()
    rng = random.Random(seed)
    for split, count in (("train", n_train), ("val", n_val)):
        img_dir = root / "images" / split
        lbl_dir = root / "labels" / split
        img_dir.mkdir(parents=True, exist_ok=True)
        lbl_dir.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            img, labels = _draw_image(rng, imgsz, background)
            stem = f"{split}_{i:04d}"
            img.save(img_dir / f"{stem}.png")
            (lbl_dir / f"{stem}.txt").write_text("\n".join(labels) + "\n")
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(CLASS_NAMES))
    data_yaml = root / "data.yaml"
    text = (
        f"path: {root}\ntrain: images/train\nval: images/val\nnc: {len(CLASS_NAMES)}\n"
        f"names:\n{names}\n"
    )
    tmp = data_yaml.with_name(f".data.yaml.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, data_yaml)  # written last: its presence means the dataset is whole
    return data_yaml


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
    """Why the demo cannot train here (None: it can)."""
    import importlib.util

    if importlib.util.find_spec("libreyolo") is None or libreyolo_executable() is None:
        return f"the demo trains with libreyolo, which is not installed: {INSTALL_HINT}"
    return None


@dataclass(frozen=True)
class Demo:
    work_dir: str
    data_yaml: str
    runs_root: str
    record: LaunchRecord


def demo_dataset(work_dir: str) -> str:
    """The demo dataset under work_dir/dataset (made once; deterministic)."""
    root = os.path.join(work_dir, "dataset")
    data_yaml = os.path.join(root, "data.yaml")
    if not os.path.isfile(data_yaml):
        make_dataset(Path(root), n_train=16, n_val=8, imgsz=DEMO_IMGSZ, seed=0, background=DARK_BG)
    return data_yaml


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
    from .gpu import GpuMonitor

    monitor = GpuMonitor()
    try:
        return monitor.sample(time.time(), (), None).available
    finally:
        monitor.close()


def after_app_lines(demo: Demo) -> list[str]:
    """What to say when the app closes: the run goes on, and how to stop it."""
    record = demo.record
    if not launch_alive(record):
        return []
    state = wait_for_run_dir(record, 0)
    how = f"rgpu-tui stop {state.run_dir}" if state.run_dir else f"kill -INT {record.pid}"
    return [
        f"the demo run goes on in the background (pid {record.pid}); stop it with:",
        f"  {how}",
    ]
