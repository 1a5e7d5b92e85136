"""Which GPU source the command line asks for: NVML (the default), simulated GPUs
(--fake-gpus N / RGPU_FAKE_GPUS=N) or a recording (--gpu-replay FILE / RGPU_GPU_REPLAY).

A flag wins over its own variable; simulated and recorded GPUs cannot both be chosen.
Every mistake raises ValueError with one line (the command prints it and exits 2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .gpu_replay import GpuRecording, load_recording
from .gpu_sim import fake_gpus_from_env, parse_fake_gpus

BOTH_SOURCES = (
    "choose one GPU source: simulated GPUs (--fake-gpus or RGPU_FAKE_GPUS) or a GPU "
    "recording (--gpu-replay or RGPU_GPU_REPLAY), not both"
)


@dataclass(frozen=True)
class GpuSourceChoice:
    fake_gpus: int | None = None  # simulated GPUs (0 is zero of them)
    fake_lose: dict[int, float] | None = None
    replay: GpuRecording | None = None

    @property
    def nvml(self) -> bool:
        return self.fake_gpus is None and self.replay is None

    def collector_args(self) -> dict:
        """This source as the keyword arguments of core.picture.collect.Collector (and the
        app's)."""
        return {"fake_gpus": self.fake_gpus, "fake_lose": self.fake_lose, "gpu_replay": self.replay}


def choose_gpu_source(
    fake_flag: str | int | None,
    replay_flag: str | None,
    environ: Mapping[str, str] = os.environ,
) -> GpuSourceChoice:
    env_n, lose = fake_gpus_from_env(environ)
    n = parse_fake_gpus(fake_flag) if fake_flag is not None else env_n
    replay_path = replay_flag
    if replay_path is None:
        replay_path = (environ.get("RGPU_GPU_REPLAY") or "").strip() or None
    if replay_flag is not None and not str(replay_flag).strip():
        raise ValueError("--gpu-replay needs a file")
    if n is not None and replay_path is not None:
        raise ValueError(BOTH_SOURCES)
    if replay_path is not None:
        return GpuSourceChoice(replay=load_recording(replay_path))
    return GpuSourceChoice(fake_gpus=n, fake_lose=lose if n is not None else None)
