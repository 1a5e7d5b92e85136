"""Simulated GPUs (source "fake"): deterministic boards for the demo and the tests.

`--fake-gpus N` / RGPU_FAKE_GPUS=N gives N of them (0 to MAX_FAKE_GPUS; 0 means zero
simulated GPUs, not NVML); RGPU_FAKE_GPU_LOSE="1@30,3@90" makes a device "lost" that
many seconds after the first sample. No NVML call is made. While a run is running every
device is busy and its process is the run's pid (round robin over the running runs).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from ..model.snapshot import GpuDevice, GpuProcess, RunInfo

MAX_FAKE_GPUS = 64
SIM_NAME = "RTX 4090"
SIM_TOTAL_MIB = 24564.0


def parse_fake_gpus(raw, what: str = "--fake-gpus") -> int:
    """N from a flag or variable; ValueError with one line unless 0 <= N <= MAX_FAKE_GPUS."""
    text = str(raw).strip()
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= MAX_FAKE_GPUS:
        raise ValueError(f"{what} must be a whole number from 0 to {MAX_FAKE_GPUS}, got {text!r}")
    return n


def fake_gpus_from_env(
    environ: Mapping[str, str] = os.environ,
) -> tuple[int | None, dict[int, float] | None]:
    """RGPU_FAKE_GPUS=N and RGPU_FAKE_GPU_LOSE="1@30,3@90" (index@seconds).

    Unset or empty gives None. Bad values raise ValueError with a one-line message.
    """
    n = None
    raw_n = (environ.get("RGPU_FAKE_GPUS") or "").strip()
    if raw_n:
        n = parse_fake_gpus(raw_n, "RGPU_FAKE_GPUS")
    lose = None
    raw_lose = (environ.get("RGPU_FAKE_GPU_LOSE") or "").strip()
    if raw_lose:
        lose = {}
        for item in raw_lose.split(","):
            item = item.strip()
            if not item:
                continue
            index_text, sep, seconds_text = item.partition("@")
            try:
                if not sep:
                    raise ValueError
                index = int(index_text.strip())
                seconds = float(seconds_text.strip())
                if index < 0 or not math.isfinite(seconds) or seconds < 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"RGPU_FAKE_GPU_LOSE takes index@seconds items like '1@30,3@90', got {item!r}"
                ) from None
            if index in lose:
                raise ValueError(f"RGPU_FAKE_GPU_LOSE names GPU {index} twice")
            if n is not None and n > 0 and index >= n:
                raise ValueError(
                    f"RGPU_FAKE_GPU_LOSE names GPU {index}, but RGPU_FAKE_GPUS={n} "
                    f"has GPUs 0 to {n - 1}"
                )
            lose[index] = seconds
        lose = lose or None
    return n, lose


SIM_MEM_CLOCK = 10501.0
SIM_HEALTH = {  # what does not move: the maximum clocks and link, no memory or XID errors
    "sm_clock_max_mhz": 2790.0,
    "mem_clock_max_mhz": SIM_MEM_CLOCK,
    "pcie_gen_max": 4,
    "pcie_width_max": 16,
    "ecc_corrected": 0,
    "ecc_uncorrected": 0,
    "retired_pages": 0,
    "remapped_rows": 0,
    "remap_pending": False,
    "xid_count": 0,
}


class SimulatedGpus:
    """`devices(now, runs)`: N simulated boards; the clock starts at the first call."""

    def __init__(self, count: int, lose: dict[int, float] | None = None) -> None:
        if not 0 <= count <= MAX_FAKE_GPUS:
            raise ValueError(f"simulated GPUs: from 0 to {MAX_FAKE_GPUS}, got {count}")
        self.count = count
        self.lose = dict(lose or {})
        self._t0: float | None = None

    def devices(self, now: float, runs: tuple[RunInfo, ...]) -> list[GpuDevice]:
        if self._t0 is None:
            self._t0 = now
        t0 = self._t0
        running = sorted((r for r in runs if r.state == "running"), key=lambda r: r.run_dir)
        devices = []
        total = SIM_TOTAL_MIB
        for i in range(self.count):
            uuid = f"GPU-fake-0000-{i:04d}"
            lose_after = self.lose.get(i)
            if lose_after is not None and now - t0 >= lose_after:
                devices.append(GpuDevice(index=i, name=SIM_NAME, uuid=uuid, state="lost", minor=i))
                continue
            phase = i * 1.7

            def wave(period: float, lo: float, hi: float, phase=phase, digits=1) -> float:
                # time since the first sample: the same screen whatever the wall clock
                s = math.sin(2 * math.pi * (now - t0) / period + phase)
                return round(lo + (hi - lo) * (s + 1) / 2, digits)

            if running:
                mem_used = round(total * wave(300.0, 0.60, 0.80, digits=4))
                run = running[i % len(running)]
                processes = ()
                if isinstance(run.pid, int) and run.pid > 0:
                    processes = (
                        GpuProcess(
                            pid=run.pid,
                            name="python",
                            used_mib=float(mem_used - 420),
                            run_dir=run.run_dir,
                            kind="run",
                            local_pid=run.pid,
                        ),
                    )
                devices.append(
                    GpuDevice(
                        index=i,
                        name=SIM_NAME,
                        uuid=uuid,
                        state="ok",
                        util_percent=wave(37.0, 80.0, 98.0),
                        mem_util_percent=wave(41.0, 35.0, 60.0),
                        mem_used_mib=float(mem_used),
                        mem_total_mib=total,
                        temperature_c=round(wave(240.0, 55.0, 80.0)),
                        power_w=wave(29.0, 250.0, 430.0),
                        power_limit_w=450.0,
                        sm_clock_mhz=round(wave(53.0, 2430.0, 2580.0)),
                        fan_percent=round(wave(180.0, 40.0, 70.0)),
                        pstate="P2",
                        mig_mode="disabled",
                        processes=processes,
                        minor=i,
                        runs=tuple(sorted({p.run_dir for p in processes if p.run_dir})),
                        clock_events=(),
                        mem_clock_mhz=SIM_MEM_CLOCK,
                        pcie_gen=4,
                        pcie_width=16,
                        pcie_tx_kbs=round(wave(19.0, 800.0, 2400.0)),
                        pcie_rx_kbs=round(wave(23.0, 9000.0, 26000.0)),
                        **SIM_HEALTH,
                    )
                )
            else:
                devices.append(
                    GpuDevice(
                        index=i,
                        name=SIM_NAME,
                        uuid=uuid,
                        state="ok",
                        util_percent=wave(23.0, 0.0, 2.0),
                        mem_util_percent=0.0,
                        mem_used_mib=400.0,
                        mem_total_mib=total,
                        temperature_c=round(wave(300.0, 34.0, 40.0)),
                        power_w=wave(31.0, 55.0, 65.0),
                        power_limit_w=450.0,
                        sm_clock_mhz=210.0,
                        fan_percent=30.0,
                        pstate="P8",
                        mig_mode="disabled",
                        minor=i,
                        clock_events=("gpu_idle",),
                        mem_clock_mhz=405.0,
                        pcie_gen=1,  # an idle link drops its generation to save power
                        pcie_width=16,
                        pcie_tx_kbs=0.0,
                        pcie_rx_kbs=0.0,
                        **SIM_HEALTH,
                    )
                )
        return devices
