"""Collector: the one place that builds a full Snapshot.

Runs (RunsWatcher), the machine (SystemMonitor) and the GPUs (GpuMonitor), in
that order: the GPU waste signals need the runs and the host CPU. The app's
refresh worker and `rgpu-tui snapshot` both call `refresh`, so the screen and
the JSON never disagree.
"""

from __future__ import annotations

from dataclasses import replace

from .gpu import GpuMonitor
from .snapshot import Snapshot
from .system import SystemMonitor
from .watch import RunsWatcher


class Collector:
    def __init__(
        self,
        root: str,
        *,
        fake_gpus: int | None = None,
        fake_lose: dict[int, float] | None = None,
        interval: float = 1.0,
        log_keep: int = 1000,
    ) -> None:
        self.runs = RunsWatcher(root, log_keep=log_keep)
        self.system = SystemMonitor(root)
        self.gpus = GpuMonitor(fake_gpus, interval=interval, fake_lose=fake_lose)

    def refresh(self, now: float, selected: str | None = None) -> Snapshot:
        snap = self.runs.refresh(now, selected)
        system = self.system.sample(now, snap.runs)
        gpus = self.gpus.sample(now, snap.runs, system.cpu_percent)
        return replace(snap, gpus=gpus, system=system)

    def close(self) -> None:
        self.gpus.close()
