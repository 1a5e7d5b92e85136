"""GPU health that explains a slow epoch: every field read from the stand-in
pynvml (tests/unit/gpu_fakes.py), N/A (None) where the board or driver does not give it, never
0; recorded and replayed; the straggler and starved alerts say why; exported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pynvml
import pytest

from rgpu_tui.core.machine.gpu import GpuMonitor
from rgpu_tui.core.machine.gpu_health import (
    CLOCK_EVENT_NAMES,
    HEALTH_FIELDS,
    SLOW_EVERY_S,
    clock_event_names,
    slowdown_reason,
)
from rgpu_tui.core.machine.gpu_replay import ReplaySource, load_recording, record_gpus
from rgpu_tui.core.machine.gpu_waste import STARVED_GUESS
from rgpu_tui.core.machine.nvml_source import NvmlSource
from rgpu_tui.core.model.snapshot import GpuDevice, GpuView, Snapshot
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.render.prometheus import families

from ..gpu_fakes import MIB, T0, FakeGpu, FakeNvml, dev, gpus, proc, run_info

HEALTH_QUERIES = (
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetFanSpeed", "nvmlDeviceGetPerformanceState", "nvmlDeviceGetClockInfo",
    "nvmlDeviceRegisterEvents",
)  # fmt: skip


def sick_board() -> FakeGpu:
    return FakeGpu(
        temp=87,
        sm_clock=1410,
        clock_events=0x4 | 0x40,  # sw power cap, hw thermal
        mem_clock=2619,
        sm_clock_max=1980,
        mem_clock_max=2619,
        pcie=(3, 5, 8, 16),
        pcie_kbs=(2048, 30720),
        ecc=(12, 1),
        retired=((0x1000, 0x2000), (0x3000,)),
        retired_pending=0,
        remapped=(2, 1, 1, 0),
        xids=[79, 48],
    )


def read_one(fake: FakeNvml, now: float = T0) -> GpuDevice:
    got = NvmlSource(fake).read(now)
    assert not isinstance(got, GpuView), got
    return got[0].device


def test_every_health_field_is_read_from_nvml() -> None:
    fake = FakeNvml([sick_board()])
    source = NvmlSource(fake)
    d = source.read(T0)[0].device
    assert d.clock_events == ("sw_power_cap", "hw_thermal")
    assert (d.sm_clock_mhz, d.sm_clock_max_mhz) == (1410.0, 1980.0)
    assert (d.mem_clock_mhz, d.mem_clock_max_mhz) == (2619.0, 2619.0)
    assert (d.pcie_gen, d.pcie_gen_max, d.pcie_width, d.pcie_width_max) == (3, 5, 8, 16)
    assert (d.pcie_tx_kbs, d.pcie_rx_kbs) == (2048.0, 30720.0)
    assert (d.ecc_corrected, d.ecc_uncorrected) == (12, 1)
    assert (d.retired_pages, d.remapped_rows, d.remap_pending) == (3, 3, True)
    assert (d.xid_count, d.xid_last) == (2, 48)  # both events, the last one's XID
    assert (d.fan_percent, d.pstate) == (45.0, "P2")
    # XID errors are counted since the monitor started: a new one adds, none keeps the count
    fake.gpus[0].xids.append(13)
    d = source.read(T0 + 1)[0].device
    assert (d.xid_count, d.xid_last) == (3, 13)
    assert (source.read(T0 + 2)[0].device.xid_count) == 3
    assert fake.calls["nvmlEventSetCreate"] == 1  # one event set per GPU per NVML start


def test_what_the_board_does_not_give_is_none_never_zero() -> None:
    board = FakeGpu(unsupported=set(HEALTH_QUERIES), events=False)
    d = read_one(FakeNvml([board]))
    for name in HEALTH_FIELDS + ("fan_percent", "pstate"):
        assert getattr(d, name) is None, name
    assert d.util_percent == 50.0  # the rest still reads
    missing = FakeGpu(missing=set(HEALTH_QUERIES))  # a driver without the functions
    assert all(getattr(read_one(FakeNvml([missing])), n) is None for n in HEALTH_FIELDS)
    # NVML_VALUE_NOT_AVAILABLE and nonsense are unknown too
    odd = FakeGpu(pcie=(0xFFFFFFFF, 5, -1, 16), pcie_kbs=(0xFFFFFFFF, 1.5), ecc=(-3, True))
    d = read_one(FakeNvml([odd]))
    assert (d.pcie_gen, d.pcie_width, d.pcie_tx_kbs) == (None, None, None)
    assert (d.ecc_corrected, d.ecc_uncorrected) == (None, None)


def test_an_older_driver_gives_the_throttle_reasons() -> None:
    board = FakeGpu(clock_events=0x8, missing={"nvmlDeviceGetCurrentClocksEventReasons"})
    assert read_one(FakeNvml([board])).clock_events == ("hw_slowdown",)
    assert read_one(FakeNvml([FakeGpu(clock_events=0)])).clock_events == ()  # known: none


def test_slow_counters_and_fixed_values_are_not_asked_each_refresh() -> None:
    fake = FakeNvml([sick_board()])
    source = NvmlSource(fake)
    for k in range(5):
        source.read(T0 + k)
    assert fake.calls["nvmlDeviceGetTotalEccErrors"] == 2  # corrected, uncorrected: once
    assert fake.calls["nvmlDeviceGetMaxPcieLinkWidth"] == 1
    fake.gpus[0].ecc = (13, 2)
    assert source.read(T0 + 5)[0].device.ecc_corrected == 12  # within SLOW_EVERY_S
    assert source.read(T0 + SLOW_EVERY_S + 1)[0].device.ecc_corrected == 13


def test_clock_event_names() -> None:
    assert clock_event_names(0) == ()
    assert clock_event_names(0x1FF) == CLOCK_EVENT_NAMES
    assert clock_event_names(None) is None and clock_event_names(-1) is None
    assert clock_event_names(True) is None and clock_event_names(1.5) is None


@pytest.mark.parametrize(
    "fields, said",
    [
        ({"clock_events": ("hw_thermal",), "temperature_c": 87.0}, "thermal throttling at 87C"),
        ({"clock_events": ("sw_power_cap",), "power_w": 299.6, "power_limit_w": 300.0},
         "power capped at 300 of 300 W"),
        ({"clock_events": ("sync_boost",)}, "held back by sync boost"),
        ({"clock_events": ("hw_slowdown",)}, "hardware slowdown"),
        ({"xid_count": 2, "xid_last": 79}, "2 XID errors (last XID 79)"),
        ({"pcie_width": 8, "pcie_width_max": 16}, "PCIe link x8 of x16"),
        ({"pcie_gen": 1, "pcie_gen_max": 4, "util_percent": 90.0}, "PCIe link gen 1 of 4"),
        ({"sm_clock_mhz": 900.0, "sm_clock_max_mhz": 1980.0, "clock_events": ()},
         "SM clock 900 of 1980 MHz"),
    ],
)  # fmt: skip
def test_slowdown_reasons(fields: dict, said: str) -> None:
    assert slowdown_reason(GpuDevice(0, "x", "u", "ok", **fields)).startswith(said)


def test_no_reason_when_nothing_is_known_or_all_is_well() -> None:
    assert slowdown_reason(GpuDevice(0, "x", "u", "ok")) is None
    idle_link = GpuDevice(0, "x", "u", "ok", pcie_gen=1, pcie_gen_max=4, util_percent=0.0)
    assert slowdown_reason(idle_link) is None  # an idle link drops its generation on purpose


def _straggler(tmp_path: Path, utils: list[int]):
    fake = FakeNvml(gpus(len(utils)))
    for g, u in zip(fake.gpus, utils, strict=True):
        g.util = u
        g.compute = [proc(os.getpid(), 4000 * MIB)]
    return fake, run_info(str(tmp_path / "exp7"), os.getpid(), name="exp7")


def test_the_straggler_alert_says_why(tmp_path: Path) -> None:
    fake, run = _straggler(tmp_path, [95, 95, 95, 61])
    fake.gpus[3].clock_events = 0x40
    fake.gpus[3].temp = 87
    mon = GpuMonitor(nvml=fake)
    for k in range(61):
        view = mon.sample(T0 + k, (run,), 20.0)
    assert view.warnings == (
        "GPU 3 straggling in run exp7: 61% vs 95% on its other GPUs: thermal throttling at 87C",
    )


def test_the_starved_alert_says_why(tmp_path: Path) -> None:
    fake = FakeNvml(gpus(2, util=30))
    for g in fake.gpus:
        g.compute = [proc(os.getpid(), 4000 * MIB)]
    fake.gpus[1].clock_events = 0x4
    fake.gpus[1].power_mw, fake.gpus[1].limit_mw = 300_000, 300_000
    run = run_info(str(tmp_path / "slow"), os.getpid(), name="slow")
    mon = GpuMonitor(nvml=fake)
    for k in range(121):
        view = mon.sample(T0 + k, (run,), 95.0)
    assert view.warnings == (f"{STARVED_GUESS}; GPU 1 power capped at 300 of 300 W",)
    assert "starved" in dev(view, 1).flags


def test_recorded_and_replayed(tmp_path: Path) -> None:
    fake = FakeNvml([sick_board(), FakeGpu(unsupported=set(HEALTH_QUERIES), events=False)])
    out = tmp_path / "rec.jsonl"
    t = [0.0]

    def clock() -> float:
        return t[0]

    def sleep(s: float) -> None:
        t[0] += s

    record_gpus(str(out), 1, source=NvmlSource(fake), clock=clock, wall=clock, sleep=sleep)
    first = json.loads(out.read_text().splitlines()[0])["devices"]
    assert first[0]["clock_events"] == ["sw_power_cap", "hw_thermal"]
    assert first[0]["xid_count"] == 2 and first[0]["remap_pending"] is True
    assert "pcie_gen" not in first[1] and "clock_events" not in first[1]  # N/A: left out
    played = ReplaySource(load_recording(str(out))).read(T0)
    sick, bare = played[0].device, played[1].device
    assert sick.clock_events == ("sw_power_cap", "hw_thermal") and sick.pcie_width == 8
    assert (sick.ecc_uncorrected, sick.retired_pages, sick.xid_last) == (1, 3, 48)
    assert all(getattr(bare, n) is None for n in HEALTH_FIELDS)


def test_exported_and_absent_when_unknown(tmp_path: Path) -> None:
    readings = NvmlSource(FakeNvml([sick_board(), FakeGpu(unsupported=set(HEALTH_QUERIES))]))
    devices = tuple(r.device for r in readings.read(T0))
    snap = Snapshot(
        generated_at=T0,
        root=str(tmp_path),
        root_exists=True,
        runs=(),
        selected=None,
        gpus=GpuView(True, None, "nvml", devices=devices),
    )
    fams = {f.metric.name: dict(f.samples) for f in families(snap, {})}
    assert fams["rgpu_gpu_clock_event_active"][("0", "hw_thermal")] == 1
    assert fams["rgpu_gpu_clock_event_active"][("0", "gpu_idle")] == 0
    assert fams["rgpu_gpu_clock_hertz"][("0", "sm")] == 1410e6
    assert fams["rgpu_gpu_clock_max_hertz"][("0", "memory")] == 2619e6
    assert fams["rgpu_gpu_pcie_link_width"][("0",)] == 8
    assert fams["rgpu_gpu_pcie_link_width_max"][("0",)] == 16
    assert fams["rgpu_gpu_pcie_link_generation"][("0",)] == 3
    assert fams["rgpu_gpu_pcie_link_generation_max"][("0",)] == 5
    assert fams["rgpu_gpu_pcie_throughput_bytes_per_second"][("0", "rx")] == 30720 * 1024
    assert fams["rgpu_gpu_ecc_errors"][("0", "uncorrected")] == 1
    assert fams["rgpu_gpu_retired_pages"][("0",)] == 3
    assert fams["rgpu_gpu_remapped_rows"][("0",)] == 3
    assert fams["rgpu_gpu_remap_pending"][("0",)] == 1
    assert fams["rgpu_gpu_xid_errors"][("0",)] == 2
    assert fams["rgpu_gpu_fan_ratio"][("0",)] == 0.45
    assert fams["rgpu_gpu_pstate"][("0",)] == 2
    health = [n for n in fams if n.startswith("rgpu_gpu_") and n != "rgpu_gpu_source_info"]
    for name in health:  # GPU 1 gives none of them (its utilisation and memory it gives)
        if name not in ("rgpu_gpu_utilization_ratio", "rgpu_gpu_memory_used_bytes",
                        "rgpu_gpu_memory_total_bytes", "rgpu_gpu_temperature_celsius",
                        "rgpu_gpu_power_watts"):  # fmt: skip
            assert not [k for k in fams[name] if k[0] == "1"], name
    data = snapshot_to_json(snap)["gpus"]["devices"]
    assert data[0]["clock_events"] == ["sw_power_cap", "hw_thermal"]
    assert data[1]["clock_events"] is None and data[1]["pcie_gen"] is None


def test_the_stand_in_uses_pynvmls_own_numbers() -> None:
    # the reader passes NVML's own constants: the stand-in checks them against pynvml
    assert pynvml.NVML_PCIE_UTIL_TX_BYTES == 0 and pynvml.NVML_VOLATILE_ECC == 0
    assert pynvml.nvmlEventTypeXidCriticalError == 8
