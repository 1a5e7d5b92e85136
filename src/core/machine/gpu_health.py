"""GPU health that explains a slow epoch: clock-event (throttle) reasons, clocks against their
maximum, the PCIe link against its maximum and its throughput, ECC errors, retired pages and
remapped rows, XID errors.

`HealthReader.read(index, handle, call, nvml, now)` gives the GpuDevice fields for one board
from NVML (core.machine.nvml_source passes its `_call`, so every query is taken on its own:
one the board or driver does not offer stays None, N/A, never 0):

- clock-event reasons: nvmlDeviceGetCurrentClocksEventReasons (drivers from 535), else the
  older nvmlDeviceGetCurrentClocksThrottleReasons; a bit mask read as names (CLOCK_EVENTS);
- clocks: nvmlDeviceGetClockInfo (SM, memory) against nvmlDeviceGetMaxClockInfo;
- PCIe: the current link generation and width against their maximum, and TX/RX throughput
  (nvmlDeviceGetPcieThroughput, KB/s over NVML's 20 ms sample);
- ECC: volatile corrected and uncorrected totals (since the driver loaded); retired pages
  (both causes) and whether a retirement is pending; remapped rows (Ampere and later) and
  whether a remap is pending (a reset applies it);
- XID errors: NVML events (nvmlEventTypeXidCriticalError), one event set per GPU polled
  without waiting at each read; counted since the monitor started. A driver (or a board, a
  vGPU) without events gives None.

What does not change (the maximum clocks and link) is read once per NVML start; the ECC and
memory-retirement counters every SLOW_EVERY_S seconds (they are slow queries on some boards).

`slowdown_reason(device)` is the one sentence the straggler and starved alerts add
("thermal throttling at 87C").
"""

from __future__ import annotations

from collections.abc import Callable

from ..base.values import num as _num
from ..model.snapshot import GpuDevice

SLOW_EVERY_S = 10.0
MAX_EVENTS_PER_READ = 64

# NVML's clocks-event (throttle) reason bits
CLOCK_EVENTS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
)
CLOCK_EVENT_NAMES = tuple(name for _bit, name in CLOCK_EVENTS)
XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
CLOCK_SM, CLOCK_MEM = 1, 2  # NVML_CLOCK_SM, NVML_CLOCK_MEM
PCIE_TX, PCIE_RX = 0, 1  # NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES
ECC_CORRECTED, ECC_UNCORRECTED = 0, 1  # NVML_MEMORY_ERROR_TYPE_*
ECC_VOLATILE = 0  # NVML_VOLATILE_ECC
_NOT_AVAILABLE = 0xFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE as a 32-bit value
SLOW_CLOCK_RATIO = 0.7  # an SM clock under 70% of its maximum, under load, says why

HEALTH_FIELDS = (
    "clock_events", "mem_clock_mhz", "sm_clock_max_mhz", "mem_clock_max_mhz", "pcie_gen",
    "pcie_gen_max", "pcie_width", "pcie_width_max", "pcie_tx_kbs", "pcie_rx_kbs",
    "ecc_corrected", "ecc_uncorrected", "retired_pages", "remapped_rows", "remap_pending",
    "xid_count", "xid_last",
)  # fmt: skip

Call = Callable[..., object]


def clock_event_names(mask) -> tuple[str, ...] | None:
    """('sw_power_cap', 'hw_thermal') for a mask; None when it is not a mask."""
    n = _num(mask)
    if n is None or n < 0 or n != int(n) or n >= 2**64:
        return None
    m = int(n)
    return tuple(name for bit, name in CLOCK_EVENTS if m & bit)


def _count(value, most: int = 2**62) -> int | None:
    n = _num(value)
    if n is None or n < 0 or n != int(n) or n >= most:
        return None
    return int(n)


def _in(value, lo: float, hi: float) -> float | None:
    n = _num(value)
    return n if n is not None and lo <= n <= hi else None


class HealthReader:
    """Per GPU: the fields read once, the slow counters, the XID event set."""

    def __init__(self) -> None:
        self._static: dict[int, dict] = {}
        self._slow: dict[int, tuple[float, dict]] = {}
        self._xid_sets: dict[int, object] = {}  # index -> event set (None: no events)
        self._xid: dict[int, tuple[int, int | None]] = {}

    def reset(self, nvml) -> None:
        """NVML (re)started or shut down: read everything again, free the event sets."""
        for s in self._xid_sets.values():
            if s is not None:
                try:
                    nvml.nvmlEventSetFree(s)
                except Exception:
                    pass
        self._static.clear()
        self._slow.clear()
        self._xid_sets.clear()

    def read(self, index: int, handle, call: Call, nvml, now: float) -> dict:
        sm = getattr(nvml, "NVML_CLOCK_SM", CLOCK_SM)
        mem = getattr(nvml, "NVML_CLOCK_MEM", CLOCK_MEM)
        static = self._static.get(index)
        if static is None:
            static = self._static[index] = {
                "sm_clock_max_mhz": _in(call("nvmlDeviceGetMaxClockInfo", handle, sm), 1, 1e5),
                "mem_clock_max_mhz": _in(call("nvmlDeviceGetMaxClockInfo", handle, mem), 1, 1e5),
                "pcie_gen_max": _count(call("nvmlDeviceGetMaxPcieLinkGeneration", handle), 64),
                "pcie_width_max": _count(call("nvmlDeviceGetMaxPcieLinkWidth", handle), 1024),
            }
        mask = call("nvmlDeviceGetCurrentClocksEventReasons", handle)
        if mask is None:
            mask = call("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        out = dict(static)
        out.update(
            clock_events=clock_event_names(mask),
            mem_clock_mhz=_in(call("nvmlDeviceGetClockInfo", handle, mem), 0, 1e5),
            pcie_gen=_count(call("nvmlDeviceGetCurrPcieLinkGeneration", handle), 64),
            pcie_width=_count(call("nvmlDeviceGetCurrPcieLinkWidth", handle), 1024),
            pcie_tx_kbs=_throughput(call("nvmlDeviceGetPcieThroughput", handle, PCIE_TX)),
            pcie_rx_kbs=_throughput(call("nvmlDeviceGetPcieThroughput", handle, PCIE_RX)),
        )
        slow = self._slow.get(index)
        if slow is None or not 0 <= now - slow[0] < SLOW_EVERY_S:
            slow = (now, _slow_counters(handle, call))
            self._slow[index] = slow
        out.update(slow[1])
        count, last = self._poll_xid(index, handle, nvml)
        out.update(xid_count=count, xid_last=last)
        return out

    def _poll_xid(self, index: int, handle, nvml) -> tuple[int | None, int | None]:
        if index not in self._xid_sets:
            self._xid_sets[index] = _event_set(handle, nvml)
            self._xid.setdefault(index, (0, None))
        event_set = self._xid_sets[index]
        if event_set is None:
            return None, None
        count, last = self._xid[index]
        wait = getattr(nvml, "nvmlEventSetWait_v2", None) or getattr(nvml, "nvmlEventSetWait", None)
        if wait is None:
            return None, None
        for _ in range(MAX_EVENTS_PER_READ):
            try:
                data = wait(event_set, 0)  # no wait: Timeout when none is pending
            except Exception:
                break
            kind = _count(getattr(data, "eventType", None))
            if kind is not None and kind & XID_EVENT:
                count += 1
                last = _count(getattr(data, "eventData", None), _NOT_AVAILABLE) or last
        self._xid[index] = (count, last)
        return count, last


def _throughput(value) -> float | None:
    n = _num(value)
    return n if n is not None and 0 <= n < _NOT_AVAILABLE else None


def _slow_counters(handle, call: Call) -> dict:
    corrected = call("nvmlDeviceGetTotalEccErrors", handle, ECC_CORRECTED, ECC_VOLATILE)
    uncorrected = call("nvmlDeviceGetTotalEccErrors", handle, ECC_UNCORRECTED, ECC_VOLATILE)
    pages = [call("nvmlDeviceGetRetiredPages", handle, cause) for cause in (0, 1)]
    known = [p for p in pages if isinstance(p, (list, tuple))]
    retired_pending = _count(call("nvmlDeviceGetRetiredPagesPendingStatus", handle), 2)
    remapped = call("nvmlDeviceGetRemappedRows", handle)
    rows = pending = None
    if isinstance(remapped, (list, tuple)) and len(remapped) >= 3:
        corr, unc = _count(remapped[0]), _count(remapped[1])
        rows = corr + unc if corr is not None and unc is not None else None
        pending = bool(remapped[2]) if _count(remapped[2], 2) is not None else None
    if retired_pending is not None:
        pending = bool(pending) or bool(retired_pending)
    return {
        "ecc_corrected": _count(corrected),
        "ecc_uncorrected": _count(uncorrected),
        "retired_pages": sum(len(p) for p in known) if known else None,
        "remapped_rows": rows,
        "remap_pending": pending,
    }


def _event_set(handle, nvml):
    """An event set with this GPU's XID events registered; None when the driver (or the
    board) offers none."""
    try:
        event_set = nvml.nvmlEventSetCreate()
    except Exception:
        return None
    try:
        kind = getattr(nvml, "nvmlEventTypeXidCriticalError", XID_EVENT)
        nvml.nvmlDeviceRegisterEvents(handle, kind, event_set)
    except Exception:
        try:
            nvml.nvmlEventSetFree(event_set)
        except Exception:
            pass
        return None
    return event_set


# -- what explains a slow GPU --------------------------------------------------------------


def slowdown_reason(d: GpuDevice) -> str | None:
    """Why this GPU may be slow, when its readings say so; None when nothing is known."""
    events = set(d.clock_events or ())
    temp = f" at {d.temperature_c:.0f}C" if d.temperature_c is not None else ""
    if events & {"hw_thermal", "sw_thermal"}:
        return f"thermal throttling{temp}"
    if "hw_power_brake" in events:
        return "hardware power brake (the power supply asked the GPU to slow down)"
    if "hw_slowdown" in events:
        return f"hardware slowdown{temp} (overheating or a power supply problem)"
    if "sw_power_cap" in events:
        if d.power_w is not None and d.power_limit_w is not None:
            return f"power capped at {d.power_w:.0f} of {d.power_limit_w:.0f} W"
        return "power capped"
    if "sync_boost" in events:
        return "held back by sync boost (clocked to the slowest GPU of its group)"
    if d.xid_count:
        last = f" (last XID {d.xid_last})" if d.xid_last is not None else ""
        return f"{d.xid_count} XID error{'s' if d.xid_count > 1 else ''}{last}"
    if d.remap_pending or d.ecc_uncorrected:
        return "uncorrected memory errors (a reset is pending)"
    if d.pcie_width is not None and d.pcie_width_max and d.pcie_width < d.pcie_width_max:
        return f"PCIe link x{d.pcie_width} of x{d.pcie_width_max}"
    if d.pcie_gen is not None and d.pcie_gen_max and d.pcie_gen < d.pcie_gen_max:
        if d.util_percent is not None and d.util_percent >= 50:  # idle links drop by design
            return f"PCIe link gen {d.pcie_gen} of {d.pcie_gen_max}"
    if (
        d.sm_clock_mhz is not None
        and d.sm_clock_max_mhz
        and d.sm_clock_mhz < SLOW_CLOCK_RATIO * d.sm_clock_max_mhz
        and "gpu_idle" not in events
    ):
        return f"SM clock {d.sm_clock_mhz:.0f} of {d.sm_clock_max_mhz:.0f} MHz"
    return None
