"""NvmlSource: the GPUs as NVML (pynvml, nvidia-ml-py) reports them.

`read(now)` gives one DeviceReading per GPU (the board's fields and NVML's raw
processes: pid and memory), or a GpuView that says in one sentence why there is
nothing to read. NVML is started lazily; when it cannot start (no library, no driver,
a driver and library of different versions) the start is tried again at most every
INIT_RETRY_S seconds.

Every query is taken on its own: one the board does not support (NotSupported, or a
function the installed driver lacks) becomes None and the others stay. A query that
says the GPU is lost (GpuIsLost, Unknown, ResetRequired, or no handle) marks that
device "lost" and the others keep updating; a lost device is asked again at most every
INIT_RETRY_S seconds. When every device is lost, or NVML says it is not initialised or
that the driver changed under it, NVML is shut down and started again later.

Processes: pynvml's process queries call the driver's _v3 functions; an older driver
lacks them, so the _v2 functions are tried, then the unversioned v1 ones through ctypes
(as nvitop does); the first that exists is kept for the session. A MIG-enabled GPU has
no utilisation of its own: its MIG devices are listed under it (memory, ids; NVML gives
no utilisation for them either) and their processes count as the GPU's.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from ..base.values import num as _num
from ..model.snapshot import GpuDevice, GpuView, MigInstance
from .gpu_health import HealthReader
from .gpu_procs import DeviceReading

INIT_RETRY_S = 60.0  # NVML start (and a lost device) is tried at most this often
MIB = 1024 * 1024
MAX_MIG_DEVICES = 64  # NVML says 7 on today's boards; anything huge is nonsense

# pynvml's error codes (kept here so a stand-in module needs only the classes)
ERR_UNINITIALIZED = 1
ERR_INVALID_ARGUMENT = 2
ERR_NOT_SUPPORTED = 3
ERR_NO_PERMISSION = 4
ERR_NOT_FOUND = 6
ERR_INSUFFICIENT_SIZE = 7
ERR_DRIVER_NOT_LOADED = 9
ERR_LIBRARY_NOT_FOUND = 12
ERR_FUNCTION_NOT_FOUND = 13
ERR_GPU_IS_LOST = 15
ERR_RESET_REQUIRED = 16
ERR_LIB_RM_VERSION_MISMATCH = 18
ERR_UNKNOWN = 999
_LOST_CODES = {ERR_GPU_IS_LOST, ERR_RESET_REQUIRED, ERR_UNKNOWN}
_ERROR_CLASSES = {
    "NVMLError_Uninitialized": ERR_UNINITIALIZED,
    "NVMLError_InvalidArgument": ERR_INVALID_ARGUMENT,
    "NVMLError_NotSupported": ERR_NOT_SUPPORTED,
    "NVMLError_NoPermission": ERR_NO_PERMISSION,
    "NVMLError_NotFound": ERR_NOT_FOUND,
    "NVMLError_DriverNotLoaded": ERR_DRIVER_NOT_LOADED,
    "NVMLError_LibraryNotFound": ERR_LIBRARY_NOT_FOUND,
    "NVMLError_FunctionNotFound": ERR_FUNCTION_NOT_FOUND,
    "NVMLError_GpuIsLost": ERR_GPU_IS_LOST,
    "NVMLError_ResetRequired": ERR_RESET_REQUIRED,
    "NVMLError_LibRmVersionMismatch": ERR_LIB_RM_VERSION_MISMATCH,
    "NVMLError_Unknown": ERR_UNKNOWN,
}
_PSTATE_UNKNOWN = 32
_NOT_AVAILABLE_MIN = 2**63  # NVML_VALUE_NOT_AVAILABLE (2**64 - 1) and other nonsense
_NO_ID = 0xFFFFFFFF  # a MIG id NVML does not know

MISMATCH_REASON = (
    "NVIDIA driver and library versions differ (reload the driver or reboot): GPU panel off"
)
_PROCESS_QUERIES = (
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
)


def _text(value) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _id(value) -> int | None:
    n = _num(value)
    if n is None or n < 0 or n >= _NO_ID or n != int(n):
        return None
    return int(n)


def _mib(value) -> float | None:
    n = _num(value)
    return n / MIB if n is not None and 0 <= n < _NOT_AVAILABLE_MIN else None


class _Lost(Exception):
    """A query said the GPU is lost."""


class _Uninit(Exception):
    """A query said NVML is not initialised (or the driver changed under it)."""

    def __init__(self, fname: str, mismatch: bool = False):
        super().__init__(fname)
        self.mismatch = mismatch


class _Missing(Exception):
    """The function is not in the driver (or the bindings)."""


def processes_v1(nvml, symbol: str, handle) -> list:
    """NVML's unversioned (v1) process query through ctypes: [(pid, usedGpuMemory)].

    For drivers older than the _v2 functions. Uses pynvml's own function lookup."""
    import ctypes

    class ProcessInfoV1(ctypes.Structure):
        _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]

    lookup = getattr(nvml, "_nvmlGetFunctionPointer", None)
    if lookup is None:
        raise _Missing(symbol)
    fn = lookup(symbol)  # raises NVMLError(FUNCTION_NOT_FOUND) when the driver lacks it
    count = ctypes.c_uint(0)
    ret = fn(handle, ctypes.byref(count), None)
    if ret == 0:
        return []
    if ret != ERR_INSUFFICIENT_SIZE:
        raise nvml.NVMLError(ret)
    count.value = count.value * 2 + 5
    infos = (ProcessInfoV1 * count.value)()
    ret = fn(handle, ctypes.byref(count), infos)
    if ret != 0:
        raise nvml.NVMLError(ret)
    return [
        SimpleNamespace(pid=infos[i].pid, usedGpuMemory=infos[i].usedGpuMemory)
        for i in range(count.value)
    ]


@dataclass
class _Static:
    name: str | None = None
    uuid: str | None = None
    power_limit_w: float | None = None
    minor: int | None = None
    fresh: bool = False  # read since the last NVML start


class NvmlSource:
    """NVML, started lazily; `close` shuts it down. One thread at a time."""

    name = "nvml"

    def __init__(self, nvml=None) -> None:
        self._nvml = nvml
        self._ready = False
        self._last_init: float | None = None  # when NVML start was last tried
        self._unavailable: GpuView | None = None
        self._waiting_lost = False  # every device lost: show them lost until restart
        self._count = 0
        self.driver_version: str | None = None
        self._handles: dict[int, object] = {}
        self._static: dict[int, _Static] = {}
        self._lost_at: dict[int, float] = {}
        self._process_fn: dict[str, str] = {}  # query -> the version that exists
        self._health = HealthReader()  # clock events, PCIe, ECC, XID (core.machine.gpu_health)

    # -- errors -------------------------------------------------------------------

    def code(self, exc: BaseException) -> int | None:
        """pynvml's error code of an NVMLError (by its value or its class name)."""
        value = getattr(exc, "value", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if type(exc).__name__ == "NVMLLibraryMismatchError":
            return ERR_FUNCTION_NOT_FOUND  # pynvml's unversioned call: no _v3 in the driver
        for name, code in _ERROR_CLASSES.items():
            cls = getattr(self._nvml, name, None)
            if isinstance(cls, type) and isinstance(exc, cls):
                return code
        return None

    def _init_reason(self, exc: BaseException) -> str:
        code = self.code(exc)
        if code == ERR_LIBRARY_NOT_FOUND:
            return "NVIDIA driver not found (no libnvidia-ml): GPU panel off"
        if code == ERR_DRIVER_NOT_LOADED:
            return "NVIDIA driver not loaded: GPU panel off"
        if code == ERR_NO_PERMISSION:
            return "No permission to use the NVIDIA driver: GPU panel off"
        if code == ERR_LIB_RM_VERSION_MISMATCH:
            return MISMATCH_REASON
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return f"NVML failed to start ({detail}): GPU panel off"

    def _unavailable_view(self, reason: str) -> GpuView:
        self._unavailable = GpuView(available=False, reason=reason, source=self.name)
        return self._unavailable

    # -- session ------------------------------------------------------------------

    def close(self) -> None:
        if self._ready:
            self._health.reset(self._nvml)  # its XID event sets, before NVML goes
            self._ready = False
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
        self._handles.clear()
        self._lost_at.clear()

    def _start(self, now: float) -> GpuView | None:
        """Start NVML; a GpuView saying why when it cannot."""
        self._last_init = now
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                return self._unavailable_view(
                    "NVML Python bindings missing (pip install nvidia-ml-py): GPU panel off"
                )
            self._nvml = pynvml
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:
            return self._unavailable_view(self._init_reason(exc))
        self._ready = True
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:
            self.close()
            if self.code(exc) == ERR_LIB_RM_VERSION_MISMATCH:
                return self._unavailable_view(MISMATCH_REASON)
            detail = " ".join(str(exc).split()) or type(exc).__name__
            return self._unavailable_view(f"NVML cannot count the GPUs ({detail}): GPU panel off")
        if count <= 0:
            self.close()
            return self._unavailable_view("NVML sees no NVIDIA GPU: GPU panel off")
        self._count = count
        try:
            self.driver_version = _text(nvml.nvmlSystemGetDriverVersion())
        except Exception:
            self.driver_version = None
        for st in self._static.values():
            st.fresh = False
        self._handles.clear()
        self._lost_at.clear()
        self._process_fn.clear()
        self._health.reset(nvml)
        self._unavailable = None
        return None

    def read(self, now: float) -> list[DeviceReading] | GpuView:
        if not self._ready:
            if self._last_init is not None and abs(now - self._last_init) < INIT_RETRY_S:
                if self._waiting_lost:
                    return [DeviceReading(self._lost_device(i)) for i in range(self._count)]
                if self._unavailable is not None:
                    return self._unavailable
            view = self._start(now)
            self._waiting_lost = False
            if view is not None:
                return view
        readings = []
        try:
            for index in range(self._count):
                readings.append(self._read_device(index, now))
        except _Uninit as exc:
            self.close()
            self._last_init = now
            self._waiting_lost = False
            if exc.mismatch:
                return self._unavailable_view(MISMATCH_REASON)
            return self._unavailable_view(
                f"NVML stopped answering (not initialised): retrying within {INIT_RETRY_S:.0f} s"
            )
        if readings and all(r.device.state == "lost" for r in readings):
            self.close()
            self._last_init = now  # restart NVML no sooner than INIT_RETRY_S from now
            self._waiting_lost = True
        return readings

    # -- queries ------------------------------------------------------------------

    def _raise_for(self, fname: str, exc: BaseException) -> None:
        """Raise _Lost/_Uninit/_Missing for the errors that mean more than 'no value'."""
        code = self.code(exc)
        if code in _LOST_CODES:
            raise _Lost(fname) from exc
        if code == ERR_UNINITIALIZED:
            raise _Uninit(fname) from exc
        if code == ERR_LIB_RM_VERSION_MISMATCH:
            raise _Uninit(fname, mismatch=True) from exc
        if code == ERR_FUNCTION_NOT_FOUND:
            raise _Missing(fname) from exc

    def _call(self, fname: str, *args):
        """One NVML query: its value, or None when it fails for any other reason than a
        lost GPU (raises _Lost) or NVML not initialised (raises _Uninit)."""
        fn = getattr(self._nvml, fname, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            try:
                self._raise_for(fname, exc)
            except _Missing:
                pass  # a function the driver lacks: no value, like NotSupported
            return None

    def _lost_device(self, index: int) -> GpuDevice:
        st = self._static.get(index) or _Static()
        return GpuDevice(index=index, name=st.name, uuid=st.uuid, state="lost", minor=st.minor)

    def _read_device(self, index: int, now: float) -> DeviceReading:
        lost_at = self._lost_at.get(index)
        if lost_at is not None and abs(now - lost_at) < INIT_RETRY_S:
            return DeviceReading(self._lost_device(index))
        try:
            reading = self._query_device(index, now)
        except _Lost:
            self._handles.pop(index, None)
            self._lost_at[index] = now
            return DeviceReading(self._lost_device(index))
        self._lost_at.pop(index, None)
        return reading

    def _handle(self, index: int):
        handle = self._handles.get(index)
        if handle is None:
            try:
                handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:
                code = self.code(exc)
                if code == ERR_UNINITIALIZED:
                    raise _Uninit("nvmlDeviceGetHandleByIndex") from exc
                if code == ERR_LIB_RM_VERSION_MISMATCH:
                    raise _Uninit("nvmlDeviceGetHandleByIndex", mismatch=True) from exc
                raise _Lost("nvmlDeviceGetHandleByIndex") from exc
            self._handles[index] = handle
        return handle

    def _query_device(self, index: int, now: float) -> DeviceReading:
        nvml = self._nvml
        handle = self._handle(index)
        st = self._static.setdefault(index, _Static())
        if not st.fresh:
            # read once per NVML start; a failure other than "lost" caches None
            name = _text(self._call("nvmlDeviceGetName", handle))
            uuid = _text(self._call("nvmlDeviceGetUUID", handle))
            limit = _num(self._call("nvmlDeviceGetEnforcedPowerLimit", handle))
            st.name = name or st.name
            st.uuid = uuid or st.uuid
            st.power_limit_w = limit / 1000.0 if limit is not None else None
            st.minor = _id(self._call("nvmlDeviceGetMinorNumber", handle))
            st.fresh = True

        util = self._call("nvmlDeviceGetUtilizationRates", handle)
        mem = self._call("nvmlDeviceGetMemoryInfo", handle)
        temp = self._call(
            "nvmlDeviceGetTemperature", handle, getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        )
        power = _num(self._call("nvmlDeviceGetPowerUsage", handle))
        clock = self._call("nvmlDeviceGetClockInfo", handle, getattr(nvml, "NVML_CLOCK_SM", 1))
        fan = self._call("nvmlDeviceGetFanSpeed", handle)
        pstate = self._call("nvmlDeviceGetPerformanceState", handle)
        mig = self._call("nvmlDeviceGetMigMode", handle)

        pstate_n = _num(pstate)
        pstate_text = (
            f"P{int(pstate_n)}"
            if pstate_n is not None and 0 <= pstate_n < _PSTATE_UNKNOWN
            else None
        )
        mig_text = None
        if isinstance(mig, (list, tuple)) and mig:
            current = _num(mig[0])
            if current is not None:
                mig_text = "enabled" if current else "disabled"
        health = self._health.read(index, handle, self._call, nvml, now)
        processes = self._processes(handle)
        instances: tuple[MigInstance, ...] = ()
        if mig_text == "enabled":
            instances, mig_processes = self._mig_instances(handle)
            processes = _merge(processes + mig_processes)
        power_w = power / 1000.0 if power is not None else None
        device = GpuDevice(
            index=index,
            name=st.name,
            uuid=st.uuid,
            state="ok",
            util_percent=_num(getattr(util, "gpu", None)),
            mem_util_percent=_num(getattr(util, "memory", None)),
            mem_used_mib=_mib(getattr(mem, "used", None)),
            mem_total_mib=_mib(getattr(mem, "total", None)),
            temperature_c=_num(temp),
            power_w=power_w,
            power_limit_w=st.power_limit_w,
            sm_clock_mhz=_num(clock),
            fan_percent=_num(fan),
            pstate=pstate_text,
            mig_mode=mig_text,
            minor=st.minor,
            mig_instances=instances,
            **health,
        )
        return DeviceReading(device, processes)

    def _mig_instances(self, handle) -> tuple[tuple[MigInstance, ...], tuple]:
        """The MIG devices of a MIG-enabled GPU, and their processes."""
        count = _num(self._call("nvmlDeviceGetMaxMigDeviceCount", handle)) or 0
        out = []
        processes: tuple = ()
        for i in range(int(min(max(count, 0), MAX_MIG_DEVICES))):
            mig = self._call("nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
            if mig is None:  # not created (NotFound), or not readable: skip that slot
                continue
            mem = self._call("nvmlDeviceGetMemoryInfo", mig)
            util = self._call("nvmlDeviceGetUtilizationRates", mig)  # NotSupported today
            out.append(
                MigInstance(
                    mig_index=i,
                    name=_text(self._call("nvmlDeviceGetName", mig)),
                    uuid=_text(self._call("nvmlDeviceGetUUID", mig)),
                    gpu_instance_id=_id(self._call("nvmlDeviceGetGpuInstanceId", mig)),
                    compute_instance_id=_id(self._call("nvmlDeviceGetComputeInstanceId", mig)),
                    mem_used_mib=_mib(getattr(mem, "used", None)),
                    mem_total_mib=_mib(getattr(mem, "total", None)),
                    util_percent=_num(getattr(util, "gpu", None)),
                )
            )
            processes += self._processes(mig)
        return tuple(out), processes

    def _process_versions(self, query: str) -> list[str]:
        """The functions to try for `query`, newest first: its _v3 (pynvml's default),
        _v2, then the v1 symbol through ctypes ("v1")."""
        known = self._process_fn.get(query)
        if known is not None:
            return [known]
        out = []
        nvml = self._nvml
        if hasattr(nvml, query + "_v3"):
            out.append(query + "_v3")
        elif hasattr(nvml, query):
            out.append(query)  # bindings older than _v3: their default
        if hasattr(nvml, query + "_v2"):
            out.append(query + "_v2")
        out.append("v1")
        return out

    def _process_list(self, query: str, handle) -> list:
        for version in self._process_versions(query):
            try:
                if version == "v1":
                    got = processes_v1(self._nvml, query, handle)
                else:
                    got = getattr(self._nvml, version)(handle)
            except _Missing:
                continue
            except Exception as exc:
                try:
                    self._raise_for(query, exc)
                except _Missing:
                    continue  # this version is not in the driver: an older one
                # NotSupported, NoPermission, ...: this version exists but gives nothing
                self._process_fn[query] = version
                return []
            self._process_fn[query] = version
            return list(got or ())
        self._process_fn[query] = "none"
        return []

    def _processes(self, handle) -> tuple[tuple[int, float | None], ...]:
        found = []
        for query in _PROCESS_QUERIES:
            if self._process_fn.get(query) == "none":
                continue
            for info in self._process_list(query, handle):
                pid = getattr(info, "pid", None)
                if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
                    continue
                found.append((pid, _mib(getattr(info, "usedGpuMemory", None))))
        return _merge(tuple(found))


def _merge(found) -> tuple[tuple[int, float | None], ...]:
    """(pid, used MiB) pairs, one per pid (the larger known memory), sorted by pid."""
    merged: dict[int, float | None] = {}
    for pid, used in found:
        if pid in merged:
            known = [v for v in (merged[pid], used) if v is not None]
            merged[pid] = max(known) if known else None
        else:
            merged[pid] = used
    return tuple(sorted(merged.items()))
