"""SystemMonitor: CPU, memory, swap and the disk that holds the runs root.

One `sample(now, runs)` call per refresh returns a SystemView. Every reading
is taken on its own: one that fails (no load average on this OS, a psutil
error) becomes None and the others stay. Warnings are short sentences about
what may soon kill a run: a full disk, a checkpoint that will not fit, a disk
filling up, a machine about to swap itself to death.

Kept cheap: a run's `weights/` directory is listed again only when its
(device, inode, mtime) changed, as in discovery.RunFinder (same "racily clean"
rule); a checkpoint that was still being written when it was seen (its mtime
within YOUNG_NS of the look) is re-stat'ed on later samples until it settles,
because torch.save writes in place and a growing file does not touch the
directory's mtime.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import deque
from dataclasses import dataclass, field

import psutil

from ..base.formatting import fmt_bytes
from ..model.snapshot import DiskInfo, RunInfo, SystemView
from ..run.discovery import RACY_NS

DISK_FULL_FRACTION = 0.10  # warn when free < 10% of the disk
CHECKPOINT_FACTOR = 2  # warn when free < 2x the largest checkpoint
FULL_IN_WARN_HOURS = 24.0
GROWTH_SAMPLE_EVERY_S = 10.0  # one (now, used) point kept per 10 s
GROWTH_MIN_SPAN_S = 60.0  # a rate needs at least this much history
SWAP_WARN_FRACTION = 0.50
RAM_AVAILABLE_WARN_FRACTION = 0.05
YOUNG_NS = 30_000_000_000  # a checkpoint modified this recently may still grow
CHECKPOINT_SUFFIX = ".pt"


def existing_path(path: str) -> str:
    """`path` itself, or its nearest parent that exists (the runs root may not yet)."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return p


def _hours_text(hours: float) -> str:
    if hours < 1:
        return f"~{max(round(hours * 60), 1)} min"
    return f"~{hours:.1f} h"


@dataclass
class _Checkpoint:
    size: int
    young: bool  # still being written when last seen: stat it again


@dataclass
class _WeightsDir:
    key: tuple[int, int, int]  # (dev, ino, mtime_ns) of the directory
    settled: bool  # listed well after its mtime: later changes show in the mtime
    files: dict[str, _Checkpoint] = field(default_factory=dict)


class SystemMonitor:
    """Samples the machine once a refresh. Not thread-safe: one worker calls it."""

    def __init__(self, root: str, *, growth_window_s: float = 1800.0):
        self.root = os.path.abspath(root)
        self.growth_window_s = float(growth_window_s)
        maxlen = int(self.growth_window_s / GROWTH_SAMPLE_EVERY_S) + 2
        self._growth: deque[tuple[float, int]] = deque(maxlen=max(maxlen, 2))
        self._growth_dev: int | None = None
        self._cpu_primed = False
        self._weights: dict[str, _WeightsDir] = {}
        self.listed = 0  # weights directories listed by the last sample (tests, benchmarks)

    # -- the one entry point -------------------------------------------------

    def sample(self, now: float, runs: tuple[RunInfo, ...] = ()) -> SystemView:
        try:
            return self._sample(now, runs)
        except Exception as exc:  # never raise into the refresh loop
            return SystemView(
                cpu_percent=None,
                cpu_max_percent=None,
                load_avg=None,
                mem_used_bytes=None,
                mem_total_bytes=None,
                swap_used_bytes=None,
                swap_total_bytes=None,
                disk=None,
                warnings=(f"System readings failed: {type(exc).__name__}: {exc}",),
            )

    def _sample(self, now: float, runs: tuple[RunInfo, ...]) -> SystemView:
        warnings: list[str] = []
        cpu, cpu_max = self._cpu()
        load = self._load()

        mem_used = mem_total = None
        try:
            vm = psutil.virtual_memory()
            mem_total = int(vm.total)
            available = int(vm.available)
            mem_used = mem_total - available
            if mem_total > 0 and available < RAM_AVAILABLE_WARN_FRACTION * mem_total:
                warnings.append(
                    f"Only {fmt_bytes(available)} of {fmt_bytes(mem_total)} RAM available: "
                    "a trainer may be OOM-killed"
                )
        except Exception:
            mem_used = mem_total = None

        swap_used = swap_total = None
        try:
            sw = psutil.swap_memory()
            swap_used, swap_total = int(sw.used), int(sw.total)
            if swap_total > 0 and swap_used > SWAP_WARN_FRACTION * swap_total:
                warnings.append(
                    f"Swap {100 * swap_used / swap_total:.0f}% used "
                    f"({fmt_bytes(swap_used)} of {fmt_bytes(swap_total)}): "
                    "a trainer may be OOM-killed"
                )
        except Exception:
            swap_used = swap_total = None

        disk = self._disk()
        largest = self._largest_checkpoint(runs)
        full_in_hours = None
        if disk is not None:
            if disk.total_bytes > 0 and disk.free_bytes < DISK_FULL_FRACTION * disk.total_bytes:
                pct = 100 * (disk.total_bytes - disk.free_bytes) / disk.total_bytes
                warnings.append(
                    f"Disk {pct:.0f}% full: {fmt_bytes(disk.free_bytes)} free on {disk.path}"
                )
            if largest is not None and disk.free_bytes < CHECKPOINT_FACTOR * largest:
                warnings.append(
                    f"{fmt_bytes(disk.free_bytes)} free is less than twice the largest checkpoint "
                    f"({fmt_bytes(largest)}): the next save may fail"
                )
            rate = self._growth_rate(now, disk)  # bytes per second
            if rate is not None and rate > 0:
                full_in_hours = disk.free_bytes / rate / 3600.0
                if full_in_hours < FULL_IN_WARN_HOURS:
                    warnings.append(
                        f"Disk full in {_hours_text(full_in_hours)} at the current rate "
                        f"({fmt_bytes(rate * 3600)}/h)"
                    )

        return SystemView(
            cpu_percent=cpu,
            cpu_max_percent=cpu_max,
            load_avg=load,
            mem_used_bytes=mem_used,
            mem_total_bytes=mem_total,
            swap_used_bytes=swap_used,
            swap_total_bytes=swap_total,
            disk=disk,
            largest_checkpoint_bytes=largest,
            disk_full_in_hours=full_in_hours,
            warnings=tuple(warnings),
        )

    # -- readings --------------------------------------------------------------

    def _cpu(self) -> tuple[float | None, float | None]:
        """Mean and busiest core since the previous sample; None on the first one."""
        try:
            per_core = [float(v) for v in psutil.cpu_percent(interval=None, percpu=True)]
        except Exception:
            return None, None
        primed, self._cpu_primed = self._cpu_primed, True
        if not primed or not per_core:
            return None, None
        return sum(per_core) / len(per_core), max(per_core)

    @staticmethod
    def _load() -> tuple[float, float, float] | None:
        try:
            one, five, fifteen = os.getloadavg()
            return (float(one), float(five), float(fifteen))
        except Exception:  # OSError, or no getloadavg on this platform
            return None

    def _disk(self) -> DiskInfo | None:
        path = existing_path(self.root)
        try:
            usage = shutil.disk_usage(path)
            return DiskInfo(
                path=path,
                total_bytes=int(usage.total),
                used_bytes=int(usage.used),
                free_bytes=int(usage.free),
            )
        except Exception:
            return None

    # -- disk growth -------------------------------------------------------------

    def _growth_rate(self, now: float, disk: DiskInfo) -> float | None:
        """Least-squares growth of used bytes over the window, in bytes/s; None if unknown."""
        try:
            dev = os.stat(disk.path).st_dev
        except OSError:
            dev = None
        pts = self._growth
        if dev != self._growth_dev or (pts and now < pts[-1][0]):
            pts.clear()  # another disk, or the clock went back: start over
            self._growth_dev = dev
        while pts and pts[0][0] < now - self.growth_window_s:
            pts.popleft()
        current = (now, disk.used_bytes)
        if not pts or now - pts[-1][0] >= GROWTH_SAMPLE_EVERY_S:
            pts.append(current)
            points = list(pts)
        else:
            points = [*pts, current]  # fit the freshest value, keep the subsample
        if len(points) < 2 or points[-1][0] - points[0][0] < GROWTH_MIN_SPAN_S:
            return None
        t0 = points[0][0]
        ts = [t - t0 for t, _ in points]
        us = [float(u) for _, u in points]
        n = len(points)
        tm = sum(ts) / n
        um = sum(us) / n
        var = sum((t - tm) ** 2 for t in ts)
        if var <= 0:
            return None
        return sum((t - tm) * (u - um) for t, u in zip(ts, us, strict=True)) / var

    # -- checkpoints ---------------------------------------------------------------

    def _largest_checkpoint(self, runs: tuple[RunInfo, ...]) -> int | None:
        self.listed = 0
        largest: int | None = None
        wanted: set[str] = set()
        for run in runs:
            wdir = os.path.join(run.run_dir, "weights")
            wanted.add(wdir)
            size = self._largest_in(wdir)
            if size is not None and (largest is None or size > largest):
                largest = size
        for gone in set(self._weights) - wanted:
            del self._weights[gone]
        return largest

    def _largest_in(self, wdir: str) -> int | None:
        try:
            st = os.stat(wdir)
        except OSError:
            self._weights.pop(wdir, None)
            return None
        key = (st.st_dev, st.st_ino, st.st_mtime_ns)
        entry = self._weights.get(wdir)
        if entry is None or entry.key != key or not entry.settled:
            entry = self._list(wdir, key)
            self._weights[wdir] = entry
        else:
            for name, ck in list(entry.files.items()):
                if not ck.young:
                    continue
                try:
                    fst = os.stat(os.path.join(wdir, name))
                except OSError:
                    del entry.files[name]
                    continue
                ck.size = fst.st_size
                ck.young = time.time_ns() - fst.st_mtime_ns < YOUNG_NS
        if not entry.files:
            return None
        return max(ck.size for ck in entry.files.values())

    def _list(self, wdir: str, key: tuple[int, int, int]) -> _WeightsDir:
        self.listed += 1
        entry = _WeightsDir(key=key, settled=time.time_ns() - key[2] > RACY_NS)
        try:
            with os.scandir(wdir) as it:
                for de in it:
                    if not de.name.endswith(CHECKPOINT_SUFFIX):
                        continue
                    try:
                        if not de.is_file():
                            continue
                        fst = de.stat()
                    except OSError:
                        continue
                    entry.files[de.name] = _Checkpoint(
                        size=fst.st_size,
                        young=time.time_ns() - fst.st_mtime_ns < YOUNG_NS,
                    )
        except OSError:
            pass
        return entry
