"""Collector: the one place that builds a full Snapshot.

Runs (RunsWatcher), the machine (SystemMonitor), the GPUs (GpuMonitor) and the
money (CostTracker), in that order: the GPU waste signals need the runs and the
host CPU, and idle money needs the GPUs. The idle time the GPU header shows is the
cost tracker's (the one idle clock, core.picture.idle). The app's
refresh worker and `rgpu-tui snapshot` both call `refresh`, so the screen and
the JSON never disagree.

This is the read path: it writes nothing, and imports nothing that launches, pushes
or stops (a test holds it to that). Auto-push, which acts, is core.hub.auto_push.
"""

from __future__ import annotations

from dataclasses import replace

from ..base.config import Settings
from ..machine.gpu import GpuMonitor
from ..machine.gpu_replay import GpuRecording
from ..machine.setup_procs import SetupWatcher
from ..machine.system import SystemMonitor
from ..model.snapshot import GpuView, RunInfo, Snapshot
from ..records.autostop_files import AutostopFiles, PlanReader
from .charts import ChartBuilder, ChartRequest
from .cost import CostTracker, cost_once
from .price import PriceSource
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
        price: PriceSource | None = None,
        setup: SetupWatcher | None = None,
    ) -> None:
        """`one_shot`: a single look (`rgpu-tui snapshot`), which cannot see idle time, so
        the idle figures are unknown rather than zero. `price`: price_command's feed
        (core.away.price_feed), read from memory each refresh and closed with the Collector.
        `setup`: what finds trainings setting up (tests point it at a device folder)."""
        self.settings = settings or Settings()
        self.runs = RunsWatcher(root, log_keep=log_keep, settings=self.settings)
        self.system = SystemMonitor(root)
        self.gpus = GpuMonitor(fake_gpus, interval=interval, fake_lose=fake_lose, replay=gpu_replay)
        self.one_shot = one_shot
        self.cost = CostTracker(self.settings)
        self.price = price
        self.setup = setup or SetupWatcher()
        # what the root's `rgpu-tui watch` plans for autostop (read, never acted on here)
        self.autostop = PlanReader(AutostopFiles.for_root(self.runs.root))
        self.charts = ChartBuilder(self.settings)

    def refresh(
        self, now: float, selected: str | None = None, charts: ChartRequest | None = None
    ) -> Snapshot:
        """`charts`: the runs (and metrics) whose RunCharts the Snapshot carries; None:
        none (the chart view is closed)."""
        snap = self.runs.refresh(now, selected)
        system = self.system.sample(now, snap.runs)
        gpus = self.gpus.sample(now, snap.runs, system.cpu_percent)
        snap = replace(snap, runs=with_gpu_indices(snap.runs, gpus))
        setup = self.setup.sample(now, snap.runs)  # setting up is busy, never idle
        if setup and gpus.idle:
            gpus = replace(gpus, idle=False)
        price = self.price.reading() if self.price is not None else None
        args = (now, snap.runs, snap.selected_run, gpus, system, price)
        if self.one_shot:
            cost = cost_once(self.settings, *args, setting_up=bool(setup))
        else:
            cost = self.cost.sample(*args, setting_up=bool(setup))
        if gpus.idle and cost.idle_now_seconds is not None:
            gpus = replace(gpus, idle_seconds=cost.idle_now_seconds)
        autostop = self.autostop.read()
        built = self.charts.build(charts, self.runs, snap.runs, now)
        return replace(
            snap, gpus=gpus, system=system, cost=cost, autostop=autostop, charts=built, setup=setup
        )

    def close(self) -> None:
        self.gpus.close()
        if self.price is not None:
            self.price.close()
