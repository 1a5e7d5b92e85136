"""A stand-in pynvml module (FakeNvml over FakeGpu boards) and run helpers for the GPU tests.

The exception classes are pynvml's own, so the monitor is tested against the errors the
real module raises. The stand-in can play an older driver: `driver_has` names the process
query versions its "driver" has ("v3", "v2", "v1"); a missing one raises what pynvml
raises (FunctionNotFound, or NVMLLibraryMismatchError from an unversioned call).
"""

from __future__ import annotations

import ctypes
import os
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import pynvml

from rgpu_tui.core.model.snapshot import GpuDevice, GpuView, RunInfo

MIB = 1024 * 1024
T0 = 1_700_000_000.0


@dataclass
class FakeMig:
    name: str = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    uuid: str = "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
    gi: int = 1
    ci: int = 0
    used: int = 500 * MIB
    total: int = 9856 * MIB
    compute: list = field(default_factory=list)
    graphics: list = field(default_factory=list)
    unsupported: set = field(default_factory=lambda: {"nvmlDeviceGetUtilizationRates"})
    lost: bool = False


@dataclass
class FakeGpu:
    name: str | bytes = b"NVIDIA H100 80GB HBM3"
    uuid: str | bytes = b"GPU-11111111-2222-3333-4444-555555555555"
    util: int = 50
    mem_util: int = 20
    used: int = 1000 * MIB  # bytes, as NVML gives them
    total: int = 81559 * MIB
    temp: int = 61
    power_mw: int = 312_500
    limit_mw: int = 700_000
    sm_clock: int = 1980
    fan: int = 45
    pstate: int = 2
    mig: tuple = (0, 0)
    minor: int | None = None
    compute: list = field(default_factory=list)
    graphics: list = field(default_factory=list)
    unsupported: set = field(default_factory=set)  # function names that raise NotSupported
    missing: set = field(default_factory=set)  # function names that raise FunctionNotFound
    migs: list = field(default_factory=list)  # FakeMig per MIG slot (None: slot empty)
    lost: bool = False
    no_handle: bool = False
    # health (core.machine.gpu_health)
    clock_events: int = 0  # NVML's clocks-event reason mask
    mem_clock: int = 2619
    sm_clock_max: int = 1980
    mem_clock_max: int = 2619
    pcie: tuple = (5, 5, 16, 16)  # generation, its max, width, its max
    pcie_kbs: tuple = (1200, 3400)  # TX, RX in KB/s
    ecc: tuple = (0, 0)  # volatile corrected, uncorrected
    retired: tuple = ((), ())  # page addresses, by cause
    retired_pending: int = 0
    remapped: tuple = (0, 0, 0, 0)  # corrected rows, uncorrected rows, pending, failed
    xids: list = field(default_factory=list)  # XID events the driver has yet to hand out
    events: bool = True  # the driver offers NVML events


def proc(pid: int, used_bytes) -> SimpleNamespace:
    return SimpleNamespace(pid=pid, usedGpuMemory=used_bytes)


class FakeNvml:
    """The pynvml functions the NVML source uses, over FakeGpu boards, counting calls."""

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_CLOCK_MEM = pynvml.NVML_CLOCK_MEM
    nvmlEventTypeXidCriticalError = pynvml.nvmlEventTypeXidCriticalError
    NVMLError = pynvml.NVMLError
    NVMLError_NotSupported = pynvml.NVMLError_NotSupported
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost
    NVMLError_Unknown = pynvml.NVMLError_Unknown
    NVMLError_Uninitialized = pynvml.NVMLError_Uninitialized
    NVMLError_LibraryNotFound = pynvml.NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = pynvml.NVMLError_DriverNotLoaded
    NVMLError_FunctionNotFound = pynvml.NVMLError_FunctionNotFound
    NVMLError_LibRmVersionMismatch = pynvml.NVMLError_LibRmVersionMismatch

    def __init__(
        self,
        gpus: list[FakeGpu],
        driver=b"550.54.15",
        init_error=None,
        driver_has=("v3", "v2", "v1"),
    ):
        self.gpus = gpus
        self.driver = driver
        self.init_error = init_error
        self.driver_has = set(driver_has)
        self.uninitialised_queries = False
        self.mismatch_queries = False  # the driver was replaced under a running NVML
        self.calls: Counter = Counter()
        self.initialised = False

    # -- library
    def nvmlInit(self):
        self.calls["nvmlInit"] += 1
        if self.init_error is not None:
            raise self.init_error
        self.initialised = True

    def nvmlShutdown(self):
        self.calls["nvmlShutdown"] += 1
        self.initialised = False

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        if self.gpus[index].no_handle:
            raise pynvml.NVMLError_GpuIsLost()
        return ("handle", index)

    # -- per device
    def _dev(self, fname: str, handle):
        self.calls[fname] += 1
        self.calls[(fname, handle[1])] += 1
        if not self.initialised or self.uninitialised_queries:
            raise pynvml.NVMLError_Uninitialized()
        if self.mismatch_queries:
            raise pynvml.NVMLError_LibRmVersionMismatch()
        g = self.gpus[handle[1]]
        if g.lost:
            raise pynvml.NVMLError_GpuIsLost()
        if handle[0] == "mig":
            g = g.migs[handle[2]]
            if g.lost:
                raise pynvml.NVMLError_GpuIsLost()
        if fname in getattr(g, "missing", ()):
            raise pynvml.NVMLError_FunctionNotFound()
        if fname in g.unsupported:
            raise pynvml.NVMLError_NotSupported()
        return g

    def nvmlDeviceGetName(self, h):
        return self._dev("nvmlDeviceGetName", h).name

    def nvmlDeviceGetUUID(self, h):
        return self._dev("nvmlDeviceGetUUID", h).uuid

    def nvmlDeviceGetMinorNumber(self, h):
        g = self._dev("nvmlDeviceGetMinorNumber", h)
        return h[1] if g.minor is None else g.minor

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self._dev("nvmlDeviceGetEnforcedPowerLimit", h).limit_mw

    def nvmlDeviceGetUtilizationRates(self, h):
        g = self._dev("nvmlDeviceGetUtilizationRates", h)
        if isinstance(g, FakeGpu) and g.mig[0]:
            raise pynvml.NVMLError_NotSupported()  # a MIG-enabled board has no utilisation
        return SimpleNamespace(gpu=g.util, memory=g.mem_util)

    def nvmlDeviceGetMemoryInfo(self, h):
        g = self._dev("nvmlDeviceGetMemoryInfo", h)
        return SimpleNamespace(used=g.used, total=g.total, free=g.total - g.used)

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self._dev("nvmlDeviceGetTemperature", h).temp

    def nvmlDeviceGetPowerUsage(self, h):
        return self._dev("nvmlDeviceGetPowerUsage", h).power_mw

    def nvmlDeviceGetClockInfo(self, h, clock):
        assert clock in (pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM)
        g = self._dev("nvmlDeviceGetClockInfo", h)
        return g.sm_clock if clock == pynvml.NVML_CLOCK_SM else g.mem_clock

    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        assert clock in (pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM)
        g = self._dev("nvmlDeviceGetMaxClockInfo", h)
        return g.sm_clock_max if clock == pynvml.NVML_CLOCK_SM else g.mem_clock_max

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._dev("nvmlDeviceGetCurrentClocksEventReasons", h).clock_events

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):  # drivers before 535
        return self._dev("nvmlDeviceGetCurrentClocksThrottleReasons", h).clock_events

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return self._dev("nvmlDeviceGetCurrPcieLinkGeneration", h).pcie[0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self._dev("nvmlDeviceGetMaxPcieLinkGeneration", h).pcie[1]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self._dev("nvmlDeviceGetCurrPcieLinkWidth", h).pcie[2]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self._dev("nvmlDeviceGetMaxPcieLinkWidth", h).pcie[3]

    def nvmlDeviceGetPcieThroughput(self, h, counter):
        assert counter in (pynvml.NVML_PCIE_UTIL_TX_BYTES, pynvml.NVML_PCIE_UTIL_RX_BYTES)
        return self._dev("nvmlDeviceGetPcieThroughput", h).pcie_kbs[counter]

    def nvmlDeviceGetTotalEccErrors(self, h, error_type, counter_type):
        assert counter_type == pynvml.NVML_VOLATILE_ECC
        return self._dev("nvmlDeviceGetTotalEccErrors", h).ecc[error_type]

    def nvmlDeviceGetRetiredPages(self, h, cause):
        return list(self._dev("nvmlDeviceGetRetiredPages", h).retired[cause])

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h):
        return self._dev("nvmlDeviceGetRetiredPagesPendingStatus", h).retired_pending

    def nvmlDeviceGetRemappedRows(self, h):
        return tuple(self._dev("nvmlDeviceGetRemappedRows", h).remapped)

    # -- events (XID errors)
    def nvmlEventSetCreate(self):
        self.calls["nvmlEventSetCreate"] += 1
        return {"devices": []}

    def nvmlDeviceRegisterEvents(self, h, kinds, event_set):
        g = self._dev("nvmlDeviceRegisterEvents", h)
        assert kinds == pynvml.nvmlEventTypeXidCriticalError
        if not g.events:
            raise pynvml.NVMLError_NotSupported()
        event_set["devices"].append(h)

    def nvmlEventSetWait_v2(self, event_set, timeout_ms):
        assert timeout_ms == 0  # a refresh never waits
        self.calls["nvmlEventSetWait_v2"] += 1
        for h in event_set["devices"]:
            g = self.gpus[h[1]]
            if g.xids:
                return SimpleNamespace(
                    device=h, eventType=pynvml.nvmlEventTypeXidCriticalError,
                    eventData=g.xids.pop(0), gpuInstanceId=0, computeInstanceId=0,
                )  # fmt: skip
        raise pynvml.NVMLError_Timeout()

    def nvmlEventSetFree(self, event_set):
        self.calls["nvmlEventSetFree"] += 1

    def nvmlDeviceGetFanSpeed(self, h):
        return self._dev("nvmlDeviceGetFanSpeed", h).fan

    def nvmlDeviceGetPerformanceState(self, h):
        return self._dev("nvmlDeviceGetPerformanceState", h).pstate

    def nvmlDeviceGetMigMode(self, h):
        return list(self._dev("nvmlDeviceGetMigMode", h).mig)

    # -- MIG
    def nvmlDeviceGetMaxMigDeviceCount(self, h):
        g = self._dev("nvmlDeviceGetMaxMigDeviceCount", h)
        return len(g.migs) if g.mig[0] else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, i):
        g = self._dev("nvmlDeviceGetMigDeviceHandleByIndex", h)
        if i >= len(g.migs) or g.migs[i] is None:
            raise pynvml.NVMLError_NotFound()
        return ("mig", h[1], i)

    def nvmlDeviceGetGpuInstanceId(self, h):
        return self._dev("nvmlDeviceGetGpuInstanceId", h).gi

    def nvmlDeviceGetComputeInstanceId(self, h):
        return self._dev("nvmlDeviceGetComputeInstanceId", h).ci

    # -- processes: the driver's _v3, _v2 and v1 (ctypes) functions
    def _procs(self, fname: str, version: str, h) -> list:
        g = self._dev(fname, h)
        self.calls[(fname, version)] += 1
        if version not in self.driver_has:
            raise pynvml.NVMLError_FunctionNotFound()
        kind = "compute" if "Compute" in fname else "graphics"
        return list(getattr(g, kind))

    def nvmlDeviceGetComputeRunningProcesses_v3(self, h):
        return self._procs("nvmlDeviceGetComputeRunningProcesses", "v3", h)

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, h):
        return self._procs("nvmlDeviceGetGraphicsRunningProcesses", "v3", h)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, h):
        return self._procs("nvmlDeviceGetComputeRunningProcesses", "v2", h)

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, h):
        return self._procs("nvmlDeviceGetGraphicsRunningProcesses", "v2", h)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        try:  # pynvml's unversioned call is its _v3 one, behind @throwOnVersionMismatch
            return self.nvmlDeviceGetComputeRunningProcesses_v3(h)
        except pynvml.NVMLError_FunctionNotFound:
            raise pynvml.NVMLLibraryMismatchError("use a versioned function") from None

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        try:
            return self.nvmlDeviceGetGraphicsRunningProcesses_v3(h)
        except pynvml.NVMLError_FunctionNotFound:
            raise pynvml.NVMLLibraryMismatchError("use a versioned function") from None

    def _nvmlGetFunctionPointer(self, symbol: str):
        """The v1 C functions, called through ctypes as the real library's would be."""
        if "v1" not in self.driver_has:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

        def fn(handle, count_ref, infos):
            found = self._procs(symbol, "v1", handle)
            count = count_ref._obj
            if infos is None:
                if not found:
                    return pynvml.NVML_SUCCESS
                count.value = len(found)
                return pynvml.NVML_ERROR_INSUFFICIENT_SIZE
            for i, p in enumerate(found):
                infos[i].pid = p.pid
                infos[i].usedGpuMemory = (
                    p.usedGpuMemory if p.usedGpuMemory is not None else ctypes.c_ulonglong(-1).value
                )
            count.value = len(found)
            return pynvml.NVML_SUCCESS

        return fn


def gpus(n: int, **kw) -> list[FakeGpu]:
    return [
        FakeGpu(uuid=f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd".encode(), **kw) for i in range(n)
    ]


def run_info(
    run_dir: str, pid: int | None, state: str = "running", name: str | None = None
) -> RunInfo:
    return RunInfo(
        run_dir=run_dir,
        name=name or os.path.basename(run_dir),
        state=state,
        status_state="running" if state in ("running", "stalled", "dead") else state,
        pid=pid,
        pid_alive=True if state in ("running", "stalled") else None,
        current_epoch=3,
        total_epochs=10,
        progress=0.3,
        eta_seconds=100.0,
        elapsed_seconds=50.0,
        mean_epoch_seconds=10.0,
        best_metric=None,
        best_metric_name=None,
        best_epoch=None,
        updated_at=None,
        error=None,
    )


def dev(view: GpuView, index: int) -> GpuDevice:
    (d,) = [d for d in view.devices if d.index == index]
    return d
