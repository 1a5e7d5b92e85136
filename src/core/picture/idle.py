"""The one idle clock: how long the machine has been idle, and idle in all, as watched.

Idle is no run running or starting (a launch without its status.json yet is busy) and every
GPU under 5% (GpuView.idle); without GPU readings, no run running or starting
(`machine_idle`); never while a training sets up before its status.json
(core.machine.setup_procs: the Collector tells the cost tracker). Idle time is counted
between two samples that are both idle, at most GAP_CAP_S per gap: a gap in sampling (a
suspended laptop, a stalled refresh, the app not running) is not idle time anybody saw.
The GPU header's "IDLE 12m", the idle banner, the idle money and `snapshot --json` all read
this clock (through CostTracker and the Collector), so they never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..machine.gpu_waste import any_busy
from ..model.snapshot import GpuView, RunInfo

GAP_CAP_S = 120.0  # one gap between samples counts at most this much idle time


def machine_idle(runs: Iterable[RunInfo], gpus: GpuView | None) -> bool:
    """Idle: the GPU monitor's verdict; without GPU readings, no run running or starting."""
    if gpus is not None and gpus.available:
        return bool(gpus.idle)
    return not any_busy(runs)


@dataclass(frozen=True)
class IdleReading:
    idle: bool
    stretch_seconds: float | None  # the current idle stretch; None when not idle
    total_seconds: float  # every idle second seen


class IdleClock:
    """Call `sample(now, idle)` once a refresh. Not thread-safe (its owner locks)."""

    def __init__(self, gap_cap: float = GAP_CAP_S) -> None:
        self.gap_cap = gap_cap
        self._last_at: float | None = None
        self._last_idle = False
        self._total = 0.0
        self._stretch = 0.0

    def sample(self, now: float, idle: bool) -> IdleReading:
        if idle and self._last_idle and self._last_at is not None:
            gap = now - self._last_at
            if gap > 0:
                seen = min(gap, self.gap_cap)
                self._total += seen
                self._stretch += seen
        else:
            self._stretch = 0.0
        if self._last_at is None or now >= self._last_at:  # the clock went back: keep the later
            self._last_at = now
        self._last_idle = idle
        return IdleReading(idle, self._stretch if idle else None, self._total)
