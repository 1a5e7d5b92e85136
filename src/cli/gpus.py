"""The GPU-source flags (`--fake-gpus N`, `--gpu-replay FILE`) of the app, snapshot and demo,
and `rgpu-tui snapshot --record-gpus FILE --seconds N`: record NVML's GPUs for a bug report
or a replay (`--gpu-replay FILE`). Argument checks and messages only; the choice is
core.machine.gpu_source.choose_gpu_source, the recorder core.machine.gpu_replay.record_gpus."""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

from .options import settings_or_none

if TYPE_CHECKING:  # imported when used: the flags are on every command's parser
    from ..core.base.config import Settings
    from ..core.machine.gpu_source import GpuSourceChoice


def add_gpu_source_flags(p: argparse.ArgumentParser) -> None:
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


def gpu_source(args) -> GpuSourceChoice:
    """The GPU source the flags and environment ask for; ValueError with one line for a bad
    value or two sources at once."""
    from ..core.machine.gpu_source import choose_gpu_source

    return choose_gpu_source(args.fake_gpus, args.gpu_replay)


def gpu_source_or_none(args) -> GpuSourceChoice | None:
    """The GPU source, or None after printing the one-line error (the caller exits 2)."""
    try:
        return gpu_source(args)
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return None


def settings_and_gpu_source(args) -> tuple[Settings, GpuSourceChoice] | None:
    """The settings and the GPU source of a command's arguments, or None after printing the
    one-line error of the first that is wrong (the caller exits 2)."""
    settings = settings_or_none(args)
    if settings is None:
        return None
    choice = gpu_source_or_none(args)
    return None if choice is None else (settings, choice)


def record_command(path: str, seconds: float, choice: GpuSourceChoice) -> int:
    """0 when recorded; 2 for a bad request; 1 when NVML had nothing to record."""
    from ..core.base.text import printable
    from ..core.machine.gpu_replay import MAX_RECORD_SECONDS, RecordingError, record_gpus

    if not choice.nvml:
        print(
            "rgpu-tui: --record-gpus records NVML's GPUs: drop --fake-gpus/--gpu-replay "
            "(and RGPU_FAKE_GPUS/RGPU_GPU_REPLAY)",
            file=sys.stderr,
        )
        return 2
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_RECORD_SECONDS):
        print(
            f"rgpu-tui: --seconds must be more than 0 and at most {MAX_RECORD_SECONDS:g}",
            file=sys.stderr,
        )
        return 2
    print(f"recording NVML's GPUs for {seconds:g} s to {printable(path)}...", file=sys.stderr)
    try:
        samples = record_gpus(path, seconds)
    except RecordingError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 1
    print(f"recorded {samples} sample(s) to {printable(path)}; play them with --gpu-replay")
    return 0
