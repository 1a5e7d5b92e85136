"""What a launch runs: the fields, their checks, the exact argv and how it is shown.

A LaunchSpec holds what to train (`make_spec` builds one from what the user typed
and refuses, in one line, anything wrong: a missing data.yaml, keys given twice,
stray words, the HF token on the command line). `build_argv` turns it into the argv
of `libreyolo train key=value ...` (the `libreyolo` beside this Python first, else on
PATH: `libreyolo_executable`); `display_command` shows it as a shell would need it.
`hf_status` says what the run will see of Hugging Face (token set, cache). Starting
it is core.launch.launch's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

INSTALL_EXTRA = "rgpu-tui[train]"  # brings libreyolo, and torch with it
INSTALL_HINT = f"pip install '{INSTALL_EXTRA}'"
DEFAULT_NAME = "exp"  # libreyolo's own default

FIELD_KEYS = ("model", "data", "epochs", "batch", "imgsz", "device", "project", "name")


class LaunchError(ValueError):
    """A launch that cannot start; str(error) is one line to show the user."""


# -- the command ----------------------------------------------------------------


@dataclass(frozen=True)
class LaunchSpec:
    """What to train. Paths are absolute (make_spec resolves them)."""

    data: str
    project: str
    model: str = "LibreYOLO9s.pt"
    epochs: int = 100
    batch: int = -1
    imgsz: str = "640"
    device: str = "cpu"
    name: str = DEFAULT_NAME
    extra: tuple[str, ...] = ()  # literal argv items, after the fields


def default_device(gpu_count: int | None) -> str:
    """Every GPU NVML sees ("0,1,..."), or "cpu" when there is none."""
    if not gpu_count or gpu_count <= 0:
        return "cpu"
    return ",".join(str(i) for i in range(gpu_count))


def split_extra(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """Extra arguments as a shell would split them (no shell ever runs them)."""
    if text is None:
        return ()
    if not isinstance(text, str):
        return tuple(str(item) for item in text)
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # "No closing quotation"
        raise LaunchError(f"extra arguments: {str(exc).lower()}") from None


def arg_key(item: str) -> str | None:
    """The key of a `key=value` item (`--key value` style gives `key` too)."""
    if item.startswith("-"):
        return item.lstrip("-").split("=", 1)[0].replace("-", "_") or None
    if "=" in item:
        return item.split("=", 1)[0].strip().replace("-", "_") or None
    return None


def make_spec(
    data: str,
    project: str,
    *,
    settings=None,
    gpu_count: int | None = None,
    model: str | None = None,
    epochs: int | str | None = None,
    batch: int | str | None = None,
    imgsz: int | str | None = None,
    device: str | None = None,
    name: str | None = None,
    extra: str | Sequence[str] | None = None,
    check_files: bool = True,
) -> LaunchSpec:
    """A checked LaunchSpec; raises LaunchError with one line saying what is wrong.

    Unset values take their defaults: model from settings.model, epochs 100,
    batch -1, imgsz 640, device from gpu_count, name "exp".
    check_files=False checks everything but the filesystem (data.yaml is a file, the
    project is not one): no stat, open or lookup on PATH, so a screen can check each
    keystroke on its own thread and leave the filesystem to a worker (a slow NFS path
    would freeze it).
    """
    data = (data or "").strip()
    if not data:
        raise LaunchError("data: give the path of the dataset's data.yaml")
    data = os.path.abspath(os.path.expanduser(data))
    if check_files and not os.path.isfile(data):
        what = "is a directory, not a data.yaml" if os.path.isdir(data) else "does not exist"
        raise LaunchError(f"data: {data} {what}")
    project = (project or "").strip()
    if not project:
        raise LaunchError("project: give the runs root")
    project = os.path.abspath(os.path.expanduser(project))
    if check_files and os.path.exists(project) and not os.path.isdir(project):
        raise LaunchError(f"project: {project} is not a directory")
    default_model = getattr(settings, "model", None) or LaunchSpec.model
    model = (model or "").strip() if model is not None else default_model
    if not model:
        raise LaunchError("model: give a model name or a weights file")
    name = (name or "").strip() if name is not None else DEFAULT_NAME
    if not name or "/" in name or name in (".", ".."):
        raise LaunchError(f"name: {name!r} is not a directory name")
    device = (device or "").strip() if device is not None else default_device(gpu_count)
    if not device:
        raise LaunchError("device: give GPU indices such as 0,1 or cpu")
    spec = LaunchSpec(
        data=data,
        project=project,
        model=model,
        epochs=_int_field("epochs", epochs, 100, minimum=1),
        batch=_int_field("batch", batch, -1, minimum=-1),
        imgsz=_imgsz(imgsz),
        device=device,
        name=name,
        extra=split_extra(extra),
    )
    check_spec(spec)
    return spec


NAME_TRIES = 10_000  # a project with more NAME2..NAMEn than this: the next name is not said


def free_name(project: str, name: str, extra: Sequence[str] = ()) -> str | None:
    """The directory libreyolo trains `name` into under `project` (1.6.0,
    training/trainer.py `_get_save_dir`): `name` when `project/name` does not exist or
    `exist_ok=True` is among the extra arguments, else the first free NAME2, NAME3, ...;
    None past NAME_TRIES (a hostile project). Stats files: a worker's question."""
    for item in extra:
        if arg_key(item) == "exist_ok" and item.split("=", 1)[1].strip().lower() == "true":
            return name
    if not os.path.exists(os.path.join(project, name)):
        return name
    for i in range(2, NAME_TRIES + 2):
        candidate = f"{name}{i}"
        if not os.path.exists(os.path.join(project, candidate)):
            return candidate
    return None


def _int_field(key: str, value, default: int, minimum: int) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise LaunchError(f"{key}: must be a whole number, got {value!r}") from None
    if key == "batch" and number == 0:
        raise LaunchError(f"batch: must be -1 (auto) or 1 or more, got {number}")
    if number < minimum:
        hint = " (-1 means auto)" if key == "batch" else ""
        raise LaunchError(f"{key}: must be {minimum} or more{hint}, got {number}")
    return number


def _imgsz(value) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return "640"
    text = str(value).strip().lower()
    if not re.fullmatch(r"[1-9]\d*(x[1-9]\d*)?", text):
        raise LaunchError(f"imgsz: must be a size such as 640 or 480x640, got {value!r}")
    return text


def check_spec(spec: LaunchSpec, environ: Mapping[str, str] | None = None) -> None:
    """Refuse what would go wrong or leak: keys given twice, stray words, the HF token."""
    seen = set()
    for item in spec.extra:
        if item.startswith("-"):  # `--help` would make libreyolo print and exit: "died"
            raise LaunchError(
                f"extra arguments: {item!r} is not a KEY=VALUE argument "
                "(libreyolo train takes KEY=VALUE only)"
            )
        key = arg_key(item)
        if key is None:
            raise LaunchError(f"extra arguments: {item!r} is not key=value")
        if key in FIELD_KEYS:
            raise LaunchError(f"extra arguments: {key} has its own field; set it there")
        if key in seen:
            raise LaunchError(f"extra arguments: {key} is given twice")
        seen.add(key)
    token = (os.environ if environ is None else environ).get("HF_TOKEN") or ""
    # the arguments only: which libreyolo runs them is not the user's text (and looking it
    # up would touch the filesystem)
    if len(token) >= 8 and any(token in item for item in build_argv(spec, "libreyolo")[1:]):
        raise LaunchError(
            "the HF token must not be on the command line (everyone on the machine can read "
            "it there); the run gets it from the environment"
        )


def libreyolo_executable() -> str | None:
    """The `libreyolo` console script beside this Python, else on PATH; None if missing."""
    beside = os.path.join(os.path.dirname(sys.executable), "libreyolo")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("libreyolo")


def libreyolo_missing() -> str:
    """What to say when libreyolo_executable() finds none: where it looked, what to do.
    rgpu-tui installed apart (pipx, uv tool) has no libreyolo beside its Python, and need
    not: the training environment's is found on PATH."""
    return (
        f"no `libreyolo` in {os.path.dirname(sys.executable)} (beside rgpu-tui's Python) or "
        f"on PATH: install it in the training environment ({INSTALL_HINT} or pip install "
        "libreyolo) and activate that environment, or put its bin/ folder on PATH"
    )


def build_argv(spec: LaunchSpec, executable: str | None = None) -> list[str]:
    """The exact argv of the run: `libreyolo train key=value ...`."""
    exe = executable or libreyolo_executable() or "libreyolo"
    return [
        exe,
        "train",
        f"model={spec.model}",
        f"data={spec.data}",
        f"epochs={spec.epochs}",
        f"batch={spec.batch}",
        f"imgsz={spec.imgsz}",
        f"device={spec.device}",
        f"project={spec.project}",
        f"name={spec.name}",
        *spec.extra,
    ]


def display_command(argv: Sequence[str]) -> str:
    """The command as a shell would need it typed (for display only)."""
    return shlex.join(list(argv))


@dataclass(frozen=True)
class HfStatus:
    token_set: bool  # HF_TOKEN is set (its value is never shown or stored)
    home: str  # where HF_HOME points (the Hub cache)
    home_from_env: bool


def hf_status(environ: Mapping[str, str] | None = None) -> HfStatus:
    env = os.environ if environ is None else environ
    home = env.get("HF_HOME") or ""
    if home:
        return HfStatus(bool(env.get("HF_TOKEN")), os.path.expanduser(home), True)
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return HfStatus(bool(env.get("HF_TOKEN")), os.path.join(cache, "huggingface"), False)


def gpu_count_from_nvml() -> int:
    """How many GPUs NVML sees now (0 when NVML is unavailable); never raises."""
    try:
        from ..machine.gpu import GpuMonitor

        monitor = GpuMonitor()
        try:
            view = monitor.sample(time.time(), (), None)
        finally:
            monitor.close()
        return len(view.devices) if view.available else 0
    except Exception:
        return 0
