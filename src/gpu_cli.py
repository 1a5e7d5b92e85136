"""`rgpu-tui snapshot --record-gpus FILE --seconds N`: record NVML's GPUs for a bug report
or a replay (`--gpu-replay FILE`). Argument checks and messages only; the recorder is
core.gpu_replay.record_gpus."""

from __future__ import annotations

import math
import sys

from .core.gpu_replay import MAX_RECORD_SECONDS, RecordingError, record_gpus
from .core.gpu_source import GpuSourceChoice
from .core.text import printable


def record_command(path: str, seconds: float, choice: GpuSourceChoice) -> int:
    """0 when recorded; 2 for a bad request; 1 when NVML had nothing to record."""
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
