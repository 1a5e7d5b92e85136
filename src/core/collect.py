"""Collector: the one place that builds a full Snapshot.

Runs (RunsWatcher), the machine (SystemMonitor), the GPUs (GpuMonitor) and the
money (CostTracker), in that order: the GPU waste signals need the runs and the
host CPU, and idle money needs the GPUs. The app's
refresh worker and `rgpu-tui snapshot` both call `refresh`, so the screen and
the JSON never disagree.
"""

from __future__ import annotations

from dataclasses import replace

from .config import Settings
from .cost import CostTracker, cost_once
from .gpu import GpuMonitor
from .gpu_replay import GpuRecording
from .hub import AutoPushState, PushRequest, auto_push_requests
from .snapshot import GpuView, RunInfo, Snapshot
from .system import SystemMonitor
from .watch import RunsWatcher


def with_gpu_indices(runs: tuple[RunInfo, ...], gpus: GpuView) -> tuple[RunInfo, ...]:
    """The runs, each with the sorted indices of the GPUs whose `runs` name it."""
    used: dict[str, list[int]] = {}
    for d in gpus.devices:
        for run_dir in d.runs:
            used.setdefault(run_dir, []).append(d.index)
    out = []
    for r in runs:
        indices = tuple(sorted(set(used.get(r.run_dir, ()))))
        out.append(r if r.gpu_indices == indices else replace(r, gpu_indices=indices))
    return tuple(out)


class Collector:
    def __init__(
        self,
        root: str,
        *,
        fake_gpus: int | None = None,
        fake_lose: dict[int, float] | None = None,
        gpu_replay: GpuRecording | None = None,
        interval: float = 1.0,
        log_keep: int = 1000,
        settings: Settings | None = None,
        one_shot: bool = False,
    ) -> None:
        """`one_shot`: a single look (`rgpu-tui snapshot`), which cannot see idle time, so
        the idle figures are unknown rather than zero."""
        self.runs = RunsWatcher(root, log_keep=log_keep)
        self.system = SystemMonitor(root)
        self.gpus = GpuMonitor(fake_gpus, interval=interval, fake_lose=fake_lose, replay=gpu_replay)
        self.settings = settings or Settings()
        self.one_shot = one_shot
        self.cost = CostTracker(self.settings)
        self._auto_push: dict[str, AutoPushState] = {}

    def refresh(self, now: float, selected: str | None = None) -> Snapshot:
        snap = self.runs.refresh(now, selected)
        system = self.system.sample(now, snap.runs)
        gpus = self.gpus.sample(now, snap.runs, system.cpu_percent)
        snap = replace(snap, runs=with_gpu_indices(snap.runs, gpus))
        if self.one_shot:
            cost = cost_once(self.settings, now, snap.runs, snap.selected_run, gpus, system)
        else:
            cost = self.cost.sample(now, snap.runs, snap.selected_run, gpus, system)
        return replace(snap, gpus=gpus, system=system, cost=cost)

    def auto_push_requests(self, snap: Snapshot) -> list[PushRequest]:
        """What settings.auto_push asks to push now, for every running run."""
        out: list[PushRequest] = []
        for run in snap.runs:
            if run.state != "running":
                continue
            watcher = self.runs.watcher(run.run_dir)
            if watcher is None:
                continue
            state = self._auto_push.setdefault(run.run_dir, AutoPushState())
            out.extend(
                auto_push_requests(run.run_dir, self.settings, watcher.metrics.last_row, state)
            )
        return out

    def close(self) -> None:
        self.gpus.close()
