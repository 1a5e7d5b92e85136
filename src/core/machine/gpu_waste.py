"""Waste the GPUs show: stragglers, starved runs, idle machines; and each GPU's history.

Pure functions below, and `WasteTracker`, which keeps the history (one reading a
refresh) and the stretches the signals need:
- straggler: one GPU of a run well below the run's other GPUs (every rank of a
  multi-GPU run counts: a GPU is the run's when `GpuDevice.runs` names it);
- starved: a run's GPUs under 50% for 2 minutes while the host CPU is pegged
  (libreyolo's profile_summary.json verdict is shown when the run has one);
- idle: every GPU under 5% and no run running or starting (how long: the one idle clock,
  core.picture.idle).
"""

from __future__ import annotations

import math
import os
import statistics
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..base.safeio import read_regular
from ..base.values import parse_json
from ..model.snapshot import GpuDevice, RunInfo
from .gpu_health import slowdown_reason

IDLE_UTIL = 5.0  # every GPU under this and no run running: idle
STRAGGLER_WINDOW_S = 60.0
STRAGGLER_RATIO = 0.70  # under 70% of the median of the run's other GPUs
STRAGGLER_MIN_SPAN_S = 30.0  # a GPU is judged once its window holds this much history
STRAGGLER_MIN_OTHERS = 20.0  # other GPUs' median under this: nothing to straggle behind
STARVED_UTIL = 50.0
STARVED_SECONDS = 120.0
STARVED_CPU = 85.0
PROFILE_SUMMARY = "profile_summary.json"
MAX_PROFILE_BYTES = 1024 * 1024

_BOUND_LABELS = {  # libreyolo's profile_summary.json "bound" values
    "dataloader": "data-loader bound",
    "host / launch": "host/launch bound",
    "compute": "compute bound",
    "memory-pressure": "memory pressure",
}
STARVED_GUESS = "GPU starved — likely the data loader (more workers, cache, a larger batch)"


def _pct(value) -> str:
    return f"{value:.0f}%"


def window_mean(samples: Iterable[tuple[float, float | None]], now: float, window: float):
    """(mean, span) of the readings taken in (now - window, now]; (None, 0) when none.

    span is how far back the oldest reading in the window lies.
    """
    total = 0.0
    count = 0
    oldest = None
    for t, value in samples:
        if value is None or t > now or t <= now - window:
            continue
        total += value
        count += 1
        if oldest is None or t < oldest:
            oldest = t
    if not count:
        return None, 0.0
    return total / count, now - oldest


def find_stragglers(
    means: Mapping[int, float],
    ratio: float = STRAGGLER_RATIO,
    min_others: float = STRAGGLER_MIN_OTHERS,
) -> list[tuple[int, float, float]]:
    """The GPUs of one run that lag: [(index, its mean, median of the others)].

    A GPU lags when its mean utilisation is below `ratio` times the median of
    the run's other GPUs' means. A run needs two GPUs or more; others that are
    themselves nearly idle (median under `min_others`) set no pace.
    """
    out = []
    if len(means) < 2:
        return out
    for index in sorted(means):
        others = [m for i, m in means.items() if i != index]
        median = statistics.median(others)
        if median >= min_others and means[index] < ratio * median:
            out.append((index, means[index], median))
    return out


def straggler_warning(
    index: int, run_name: str, mean: float, others: float, reason: str | None = None
) -> str:
    """With `reason` (core.machine.gpu_health.slowdown_reason), why it lags."""
    return (
        f"GPU {index} straggling in run {run_name}: "
        f"{_pct(mean)} vs {_pct(others)} on its other GPUs"
    ) + (f": {reason}" if reason else "")


def starved_warning(verdict: str, gpus: Iterable[GpuDevice]) -> str:
    """The starved sentence, and what the run's GPUs say about themselves when one is
    slowed (thermal throttling, a power cap, a narrow PCIe link...)."""
    reasons = [f"GPU {d.index} {r}" for d in gpus if (r := slowdown_reason(d))]
    return verdict + (f"; {', '.join(reasons)}" if reasons else "")


# a run in these states keeps the machine busy: a running one, and a launch that has no
# status.json yet (it is loading the model and the dataset, its GPUs still cold)
BUSY_STATES = frozenset({"running", "starting"})


def any_busy(runs: Iterable[RunInfo]) -> bool:
    return any(r.state in BUSY_STATES for r in runs)


def is_idle(devices: Iterable[GpuDevice], runs: Iterable[RunInfo]) -> bool:
    """Every GPU that answers is under IDLE_UTIL and no run is running or starting.

    Lost devices and devices that report no utilisation are not counted as
    busy, but at least one device must give a reading.
    """
    if any_busy(runs):
        return False
    readings = [d.util_percent for d in devices if d.state == "ok" and d.util_percent is not None]
    return bool(readings) and all(u < IDLE_UTIL for u in readings)


def parse_profile_summary(data) -> str | None:
    """The starved sentence from libreyolo's profile_summary.json; None if unusable.

    libreyolo's TrainStepProfiler writes {"bound": "dataloader" | "compute" |
    "host / launch" | "memory-pressure", "bound_why": "...", "real": {...}}.
    """
    if not isinstance(data, dict):
        return None
    bound = data.get("bound")
    if not isinstance(bound, str) or not bound.strip():
        return None
    bound = " ".join(bound.split())
    label = _BOUND_LABELS.get(bound, bound)
    why = data.get("bound_why")
    text = f"GPU starved — profiler verdict: {label}"
    if isinstance(why, str) and why.strip():
        text += f": {why.strip()}"
    return " ".join(text.split())  # one line


def read_profile_verdict(run_dir: str) -> str | None:
    """The verdict in RUN_DIR/profile_summary.json, or None (missing, malformed, huge, or
    not a regular file: a FIFO there is never opened for reading, so it cannot block)."""
    try:
        raw = read_regular(os.path.join(run_dir, PROFILE_SUMMARY), MAX_PROFILE_BYTES)
    except OSError:
        return None
    if len(raw) > MAX_PROFILE_BYTES:
        return None
    try:
        data = parse_json(raw)  # ValueError also for JSON nested too deep
    except ValueError:
        return None
    return parse_profile_summary(data)


class WasteTracker:
    """Keeps each GPU's readings and the stretches behind the waste signals.

    `finish(now, runs, cpu_percent, devices)` returns (devices with flags and
    history, idle, warnings).
    """

    def __init__(self, interval: float, history_seconds: float) -> None:
        self.interval = interval if interval and interval > 0 else 1.0
        self.history_len = max(1, int(round(max(history_seconds, 0.0) / self.interval)))
        # enough samples for the straggler window too
        self._keep = max(self.history_len, int(math.ceil(STRAGGLER_WINDOW_S / self.interval)) + 1)
        self._samples: dict[int, deque[tuple[float, float | None, float | None]]] = {}
        # the shown histories, kept apart so a refresh copies them whole (tuple of a deque,
        # no per-sample Python): util and memory, the last history_len samples
        self._shown: dict[int, tuple[deque, deque]] = {}
        self._low_since: dict[str, float] = {}  # run_dir -> first sample of the low stretch

    def _record(self, index: int, now: float, util: float | None, mem: float | None) -> None:
        d = self._samples.get(index)
        if d is None:
            d = self._samples[index] = deque(maxlen=self._keep)
            n = self.history_len
            self._shown[index] = (deque(maxlen=n), deque(maxlen=n))
        d.append((now, util, mem))
        utils, mems = self._shown[index]
        utils.append(util)
        mems.append(mem)

    def finish(
        self,
        now: float,
        runs: tuple[RunInfo, ...],
        cpu_percent: float | None,
        devices: list[GpuDevice],
    ) -> tuple[tuple[GpuDevice, ...], bool, tuple[str, ...]]:
        for d in devices:
            ok = d.state == "ok"
            self._record(
                d.index, now, d.util_percent if ok else None, d.mem_used_mib if ok else None
            )

        flags: dict[int, list[str]] = {d.index: [] for d in devices}
        for d in devices:
            if d.state == "lost":
                flags[d.index].append("lost")
        warnings: list[str] = []

        # which GPUs each run uses (every rank of it)
        on_gpus: dict[str, list[GpuDevice]] = {}
        for d in devices:
            if d.state != "ok":
                continue
            for run_dir in d.runs:
                on_gpus.setdefault(run_dir, []).append(d)
        running = [r for r in runs if r.state == "running"]

        # straggler
        for r in running:
            gpus = on_gpus.get(r.run_dir, [])
            if len(gpus) < 2:
                continue
            means = {}
            for d in gpus:
                mean, span = window_mean(
                    ((t, u) for t, u, _m in self._samples[d.index]), now, STRAGGLER_WINDOW_S
                )
                if mean is not None and span >= STRAGGLER_MIN_SPAN_S:
                    means[d.index] = mean
            by_index = {d.index: d for d in gpus}
            for index, mean, others in find_stragglers(means):
                if "straggler" not in flags[index]:
                    flags[index].append("straggler")
                reason = slowdown_reason(by_index[index])
                warnings.append(straggler_warning(index, r.name, mean, others, reason))

        # starved
        live = set()
        for r in running:
            utils = [
                d.util_percent for d in on_gpus.get(r.run_dir, []) if d.util_percent is not None
            ]
            if not utils or sum(utils) / len(utils) >= STARVED_UTIL:
                continue
            live.add(r.run_dir)
            since = self._low_since.setdefault(r.run_dir, now)
            if now < since:  # the clock went back
                since = self._low_since[r.run_dir] = now
            cpu_pegged = cpu_percent is not None and cpu_percent > STARVED_CPU
            if now - since >= STARVED_SECONDS and cpu_pegged:
                for d in on_gpus[r.run_dir]:
                    if "starved" not in flags[d.index]:
                        flags[d.index].append("starved")
                verdict = read_profile_verdict(r.run_dir) or STARVED_GUESS
                warnings.append(starved_warning(verdict, on_gpus[r.run_dir]))
        for run_dir in list(self._low_since):
            if run_dir not in live:
                del self._low_since[run_dir]

        # idle
        idle = is_idle(devices, runs)
        if idle:
            for d in devices:
                if d.state == "ok":
                    flags[d.index].append("idle")

        out = []
        for d in devices:
            utils, mems = self._shown[d.index]
            out.append(
                replace(
                    d,
                    flags=tuple(flags[d.index]),
                    util_history=tuple(utils),
                    mem_history=tuple(mems),
                )
            )
        return tuple(out), idle, tuple(dict.fromkeys(warnings))
