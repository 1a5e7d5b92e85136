"""GpuMonitor: the GPUs once a refresh, from one source, with their runs and their waste.

One `sample(now, runs, cpu_percent)` call per refresh, from the refresh worker, returns a
GpuView. The source is one of
- NVML (source "nvml", core.machine.nvml_source): the real boards, started lazily;
- simulated GPUs (source "fake", core.machine.gpu_sim): `fake_gpus=N` deterministic boards for
  the demo and the tests, no NVML at all; N = 0 is zero GPUs (the pane says so);
- a recording (source "replay", core.machine.gpu_replay): `replay=GpuRecording` plays a file
  written by `rgpu-tui snapshot --record-gpus`, by its clock.
NVML's and a recording's processes are mapped to runs by core.machine.gpu_procs (a run's pid tree,
the other ranks of its job, and /dev/nvidiaN inside containers); the waste signals
(straggler, starved, idle) and each GPU's history come from core.machine.gpu_waste.
"""

from __future__ import annotations

import threading

from ..base.values import num as _num
from ..model.snapshot import GpuView, RunInfo
from .gpu_procs import MAPPED_STATES, ProcessAttributor, run_pids
from .gpu_replay import GpuRecording, ReplaySource
from .gpu_sim import MAX_FAKE_GPUS, SimulatedGpus, fake_gpus_from_env
from .gpu_waste import (
    IDLE_UTIL,
    STARVED_GUESS,
    STRAGGLER_WINDOW_S,
    WasteTracker,
    find_stragglers,
    is_idle,
    parse_profile_summary,
    read_profile_verdict,
    straggler_warning,
    window_mean,
)
from .nvml_source import INIT_RETRY_S, NvmlSource

__all__ = [
    "IDLE_UTIL",
    "INIT_RETRY_S",
    "MAPPED_STATES",
    "MAX_FAKE_GPUS",
    "STARVED_GUESS",
    "STRAGGLER_WINDOW_S",
    "GpuMonitor",
    "fake_gpus_from_env",
    "find_stragglers",
    "is_idle",
    "parse_profile_summary",
    "read_profile_verdict",
    "run_pids",
    "straggler_warning",
    "window_mean",
]

ZERO_SIMULATED = "No GPUs: zero simulated GPUs asked for (--fake-gpus 0 or RGPU_FAKE_GPUS=0)"


class GpuMonitor:
    """Samples the GPUs once a refresh.

    `sample` is meant for one worker thread at a time; a lock keeps a `close`
    from another thread from cutting into it.
    """

    def __init__(
        self,
        fake_gpus: int | None = None,
        *,
        interval: float = 1.0,
        history_seconds: float = 600.0,
        nvml=None,
        fake_lose: dict[int, float] | None = None,
        replay: GpuRecording | None = None,
        attributor: ProcessAttributor | None = None,
    ):
        if fake_gpus is not None and replay is not None:
            raise ValueError("choose one GPU source: simulated GPUs or a GPU recording, not both")
        self._sim: SimulatedGpus | None = None
        self._source: NvmlSource | ReplaySource | None = None
        if fake_gpus is not None:
            self._sim = SimulatedGpus(fake_gpus, fake_lose)
            self.source = "fake"
        elif replay is not None:
            self._source = ReplaySource(replay)
            self.source = "replay"
        else:
            self._source = NvmlSource(nvml)
            self.source = "nvml"
        self.attributor = attributor or ProcessAttributor()
        self._waste = WasteTracker(interval, history_seconds)
        self.history_len = self._waste.history_len
        self._lock = threading.Lock()

    def sample(self, now: float, runs: tuple[RunInfo, ...], cpu_percent: float | None) -> GpuView:
        with self._lock:
            try:
                runs = tuple(runs or ())
                namespace = None
                if self._sim is not None:
                    if self._sim.count == 0:
                        return GpuView(available=False, reason=ZERO_SIMULATED, source=self.source)
                    devices = self._sim.devices(now, runs)
                    driver = "simulated"
                else:
                    got = self._source.read(now)
                    if isinstance(got, GpuView):
                        return got
                    devices, namespace = self.attributor.attribute(now, runs, got)
                    driver = self._source.driver_version
                out, idle, warnings = self._waste.finish(now, runs, _num(cpu_percent), devices)
                return GpuView(
                    available=True,
                    reason=None,
                    source=self.source,
                    driver_version=driver,
                    devices=out,
                    idle=idle,
                    warnings=warnings,
                    pid_namespace=namespace,
                )
            except Exception as exc:  # never raise into the refresh worker
                detail = " ".join(f"{type(exc).__name__}: {exc}".split())
                return GpuView(
                    available=False,
                    reason=f"GPU monitor failed ({detail}): GPU panel off",
                    source=self.source,
                )

    def close(self) -> None:
        with self._lock:
            if self._source is not None:
                self._source.close()
