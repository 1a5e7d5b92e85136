"""GpuMonitor: the GPUs through NVML (or simulated ones), and the waste they show.

One `sample(now, runs, cpu_percent)` call per refresh, from the refresh worker,
returns a GpuView. NVML is started lazily on the first sample; when it cannot
start (no library, no driver) the view says why in one sentence and the start
is tried again at most every INIT_RETRY_S seconds.

Every query is taken on its own: one the board does not support becomes None
and the others stay. A query that says the GPU is lost (GpuIsLost, Unknown,
ResetRequired, or no handle) marks that device "lost" and the others keep
updating; a lost device is asked again at most every INIT_RETRY_S seconds.
When every device is lost, or NVML says it is not initialised, NVML is shut
down and started again later.

Processes on a GPU are mapped to runs: a process belongs to a run when it is
the run's status.json pid or one of its descendants (DDP ranks, data-loader
workers). Waste signals (pure functions below, state in the monitor):
- straggler: one GPU of a run well below the run's other GPUs;
- starved: a run's GPUs under 50% for 2 minutes while the host CPU is pegged
  (libreyolo's profile_summary.json verdict is shown when the run has one);
- idle: every GPU under 5% and no run running, with when that began.

`fake_gpus=N` gives N deterministic simulated devices (source "fake") for the
demo and the tests: no NVML at all.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import islice

import psutil

from .snapshot import GpuDevice, GpuProcess, GpuView, RunInfo
from .values import num as _num

INIT_RETRY_S = 60.0  # NVML start (and a lost device) is tried at most this often
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
MIB = 1024 * 1024
MAX_FAKE_GPUS = 64
MAPPED_STATES = ("running", "stalled")  # runs whose pid still owns GPU processes

_BOUND_LABELS = {  # libreyolo's profile_summary.json "bound" values
    "dataloader": "data-loader bound",
    "host / launch": "host/launch bound",
    "compute": "compute bound",
    "memory-pressure": "memory pressure",
}
STARVED_GUESS = "GPU starved — likely the data loader (more workers, cache, a larger batch)"

# pynvml's error codes (kept here so a fake module needs only the classes)
_ERR_UNINITIALIZED = 1
_ERR_NOT_SUPPORTED = 3
_ERR_NO_PERMISSION = 4
_ERR_DRIVER_NOT_LOADED = 9
_ERR_LIBRARY_NOT_FOUND = 12
_ERR_GPU_IS_LOST = 15
_ERR_RESET_REQUIRED = 16
_ERR_LIB_RM_VERSION_MISMATCH = 18
_ERR_UNKNOWN = 999
_LOST_CODES = {
    _ERR_GPU_IS_LOST: "NVMLError_GpuIsLost",
    _ERR_RESET_REQUIRED: "NVMLError_ResetRequired",
    _ERR_UNKNOWN: "NVMLError_Unknown",
}
_PSTATE_UNKNOWN = 32
_NOT_AVAILABLE_MIN = 2**63  # NVML_VALUE_NOT_AVAILABLE (2**64 - 1) and other nonsense

# -- small pure helpers -------------------------------------------------------


def _text(value) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None:
        return None
    value = str(value).strip()
    return value or None


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


def straggler_warning(index: int, run_name: str, mean: float, others: float) -> str:
    return (
        f"GPU {index} straggling in run {run_name}: "
        f"{_pct(mean)} vs {_pct(others)} on its other GPUs"
    )


def is_idle(devices: Iterable[GpuDevice], runs: Iterable[RunInfo]) -> bool:
    """Every GPU that answers is under IDLE_UTIL and no run is running.

    Lost devices and devices that report no utilisation are not counted as
    busy, but at least one device must give a reading.
    """
    if any(r.state == "running" for r in runs):
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
    """The verdict in RUN_DIR/profile_summary.json, or None (missing, malformed, huge)."""
    path = os.path.join(run_dir, PROFILE_SUMMARY)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_PROFILE_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_PROFILE_BYTES:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return parse_profile_summary(data)


def fake_gpus_from_env(
    environ: Mapping[str, str] = os.environ,
) -> tuple[int | None, dict[int, float] | None]:
    """RGPU_FAKE_GPUS=N and RGPU_FAKE_GPU_LOSE="1@30,3@90" (index@seconds).

    Unset or empty gives None. Bad values raise ValueError with a one-line message.
    """
    n = None
    raw_n = (environ.get("RGPU_FAKE_GPUS") or "").strip()
    if raw_n:
        try:
            n = int(raw_n)
        except ValueError:
            n = -1
        if not 0 <= n <= MAX_FAKE_GPUS:
            raise ValueError(
                f"RGPU_FAKE_GPUS must be a whole number from 0 to {MAX_FAKE_GPUS}, got {raw_n!r}"
            )
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


# -- processes ----------------------------------------------------------------


def _my_username() -> str | None:
    try:
        return psutil.Process(os.getpid()).username()
    except Exception:
        return None


def run_pids(runs: Iterable[RunInfo]) -> dict[int, str]:
    """{pid: run_dir} for the runs whose status.json pid may still own GPU processes."""
    out: dict[int, str] = {}
    for r in runs:
        if r.state in MAPPED_STATES and isinstance(r.pid, int) and r.pid > 0:
            out.setdefault(r.pid, r.run_dir)
    return out


def classify_process(
    pid: int, pids: Mapping[int, str], user: str | None
) -> tuple[str | None, str | None, str]:
    """(name, run_dir, kind) of a GPU process, as psutil sees it. Never raises."""
    try:
        proc = psutil.Process(pid)
    except (psutil.NoSuchProcess, ValueError):
        return None, None, "unknown"
    except psutil.AccessDenied:
        return None, None, "other-user"
    except Exception:
        return None, None, "unknown"
    try:
        name = proc.name()
    except psutil.NoSuchProcess:
        return None, None, "unknown"
    except Exception:
        name = None
    run_dir = pids.get(pid)
    if run_dir is None and pids:
        try:
            for parent in proc.parents():
                run_dir = pids.get(parent.pid)
                if run_dir is not None:
                    break
        except Exception:
            run_dir = None  # a parent exited mid-walk, or cannot be read
    if run_dir is not None:
        return name, run_dir, "run"
    try:
        owner = proc.username()
    except psutil.NoSuchProcess:
        return name, None, "unknown"
    except psutil.AccessDenied:
        return name, None, "other-user"
    except Exception:
        owner = None
    if user is not None and owner is not None and owner != user:
        return name, None, "other-user"
    return name, None, "process"


# -- the monitor ----------------------------------------------------------------


class _Lost(Exception):
    """A query said the GPU is lost."""


class _Uninit(Exception):
    """A query said NVML is not initialised."""


@dataclass
class _Static:
    name: str | None = None
    uuid: str | None = None
    power_limit_w: float | None = None
    fresh: bool = False  # read since the last NVML start


class GpuMonitor:
    """Samples the GPUs once a refresh.

    `sample` is meant for one worker thread at a time; a lock keeps a `close`
    from another thread from cutting into it.
    """

    def __init__(
        self,
        fake_gpus: int | None = None,
        *,
        interval: float = 1.0,
        history_seconds: float = 600.0,
        nvml=None,
        fake_lose: dict[int, float] | None = None,
    ):
        self.fake_gpus = fake_gpus if fake_gpus and fake_gpus > 0 else None
        self.source = "fake" if self.fake_gpus else "nvml"
        self.fake_lose = dict(fake_lose or {})
        self.interval = interval if interval and interval > 0 else 1.0
        self.history_len = max(1, int(round(max(history_seconds, 0.0) / self.interval)))
        # enough samples for the straggler window too
        self._keep = max(self.history_len, int(math.ceil(STRAGGLER_WINDOW_S / self.interval)) + 1)
        self._lock = threading.Lock()
        self._nvml = nvml
        self._ready = False
        self._last_init: float | None = None  # when NVML start was last tried
        self._unavailable: GpuView | None = None
        self._waiting_lost = False  # every device lost: show them lost until restart
        self._count = 0
        self._driver: str | None = None
        self._handles: dict[int, object] = {}
        self._static: dict[int, _Static] = {}
        self._lost_at: dict[int, float] = {}
        self._user: str | None = None
        self._user_known = False
        self._samples: dict[int, deque[tuple[float, float | None, float | None]]] = {}
        self._low_since: dict[str, float] = {}  # run_dir -> first sample of the low stretch
        self._idle_since: float | None = None
        self._fake_t0: float | None = None

    # -- public ---------------------------------------------------------------

    def sample(self, now: float, runs: tuple[RunInfo, ...], cpu_percent: float | None) -> GpuView:
        with self._lock:
            try:
                runs = tuple(runs or ())
                if self.fake_gpus:
                    devices = self._fake_devices(now, runs)
                    driver = "simulated"
                else:
                    got = self._nvml_devices(now, runs)
                    if isinstance(got, GpuView):
                        self._idle_since = None
                        return got
                    devices, driver = got, self._driver
                return self._finish(now, runs, _num(cpu_percent), devices, driver)
            except Exception as exc:  # never raise into the refresh worker
                detail = " ".join(f"{type(exc).__name__}: {exc}".split())
                return GpuView(
                    available=False,
                    reason=f"GPU monitor failed ({detail}): GPU panel off",
                    source=self.source,
                )

    def close(self) -> None:
        with self._lock:
            self._shutdown()

    # -- NVML -------------------------------------------------------------------

    def _shutdown(self) -> None:
        if self._ready:
            self._ready = False
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
        self._handles.clear()
        self._lost_at.clear()

    def _unavailable_view(self, reason: str) -> GpuView:
        self._unavailable = GpuView(available=False, reason=reason, source="nvml")
        return self._unavailable

    def _code(self, exc: BaseException) -> int | None:
        """pynvml's error code of an NVMLError (by class name or its value)."""
        value = getattr(exc, "value", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        mod = self._nvml
        names = {
            "NVMLError_Uninitialized": _ERR_UNINITIALIZED,
            "NVMLError_NotSupported": _ERR_NOT_SUPPORTED,
            "NVMLError_NoPermission": _ERR_NO_PERMISSION,
            "NVMLError_DriverNotLoaded": _ERR_DRIVER_NOT_LOADED,
            "NVMLError_LibraryNotFound": _ERR_LIBRARY_NOT_FOUND,
            "NVMLError_GpuIsLost": _ERR_GPU_IS_LOST,
            "NVMLError_ResetRequired": _ERR_RESET_REQUIRED,
            "NVMLError_LibRmVersionMismatch": _ERR_LIB_RM_VERSION_MISMATCH,
            "NVMLError_Unknown": _ERR_UNKNOWN,
        }
        for name, code in names.items():
            cls = getattr(mod, name, None)
            if isinstance(cls, type) and isinstance(exc, cls):
                return code
        return None

    def _init_reason(self, exc: BaseException) -> str:
        code = self._code(exc)
        if code == _ERR_LIBRARY_NOT_FOUND:
            return "NVIDIA driver not found (no libnvidia-ml): GPU panel off"
        if code == _ERR_DRIVER_NOT_LOADED:
            return "NVIDIA driver not loaded: GPU panel off"
        if code == _ERR_NO_PERMISSION:
            return "No permission to use the NVIDIA driver: GPU panel off"
        if code == _ERR_LIB_RM_VERSION_MISMATCH:
            return (
                "NVIDIA driver and library versions differ (reload the driver or reboot): "
                "GPU panel off"
            )
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return f"NVML failed to start ({detail}): GPU panel off"

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
            self._shutdown()
            detail = " ".join(str(exc).split()) or type(exc).__name__
            return self._unavailable_view(f"NVML cannot count the GPUs ({detail}): GPU panel off")
        if count <= 0:
            self._shutdown()
            return self._unavailable_view("NVML sees no NVIDIA GPU: GPU panel off")
        self._count = count
        try:
            self._driver = _text(nvml.nvmlSystemGetDriverVersion())
        except Exception:
            self._driver = None
        for st in self._static.values():
            st.fresh = False
        self._handles.clear()
        self._lost_at.clear()
        self._unavailable = None
        return None

    def _nvml_devices(self, now: float, runs: tuple[RunInfo, ...]) -> list[GpuDevice] | GpuView:
        if not self._ready:
            if self._last_init is not None and abs(now - self._last_init) < INIT_RETRY_S:
                if self._waiting_lost:
                    return [self._lost_device(i) for i in range(self._count)]
                if self._unavailable is not None:
                    return self._unavailable
            view = self._start(now)
            if view is not None:
                self._waiting_lost = False
                return view
            self._waiting_lost = False
        pids = run_pids(runs)
        memo: dict[int, tuple[str | None, str | None, str]] = {}
        devices = []
        try:
            for index in range(self._count):
                devices.append(self._read_device(index, now, pids, memo))
        except _Uninit:
            self._shutdown()
            self._last_init = now
            self._waiting_lost = False
            return self._unavailable_view(
                f"NVML stopped answering (not initialised): retrying within {INIT_RETRY_S:.0f} s"
            )
        if devices and all(d.state == "lost" for d in devices):
            self._shutdown()
            self._last_init = now  # restart NVML no sooner than INIT_RETRY_S from now
            self._waiting_lost = True
        return devices

    def _call(self, fname: str, *args):
        """One NVML query: its value, or None when it fails for any other reason
        than a lost GPU (raises _Lost) or NVML not initialised (raises _Uninit)."""
        fn = getattr(self._nvml, fname, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            code = self._code(exc)
            if code in _LOST_CODES:
                raise _Lost(fname) from exc
            if code == _ERR_UNINITIALIZED:
                raise _Uninit(fname) from exc
            return None

    def _lost_device(self, index: int) -> GpuDevice:
        st = self._static.get(index) or _Static()
        return GpuDevice(index=index, name=st.name, uuid=st.uuid, state="lost")

    def _read_device(self, index, now, pids, memo) -> GpuDevice:
        lost_at = self._lost_at.get(index)
        if lost_at is not None and abs(now - lost_at) < INIT_RETRY_S:
            return self._lost_device(index)
        try:
            device = self._query_device(index, pids, memo)
        except _Lost:
            self._handles.pop(index, None)
            self._lost_at[index] = now
            return self._lost_device(index)
        self._lost_at.pop(index, None)
        return device

    def _query_device(self, index, pids, memo) -> GpuDevice:
        nvml = self._nvml
        handle = self._handles.get(index)
        if handle is None:
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:
                if self._code(exc) == _ERR_UNINITIALIZED:
                    raise _Uninit("nvmlDeviceGetHandleByIndex") from exc
                raise _Lost("nvmlDeviceGetHandleByIndex") from exc
            self._handles[index] = handle
        st = self._static.setdefault(index, _Static())
        if not st.fresh:
            # read once per NVML start; a failure other than "lost" caches None
            name = _text(self._call("nvmlDeviceGetName", handle))
            uuid = _text(self._call("nvmlDeviceGetUUID", handle))
            limit = _num(self._call("nvmlDeviceGetEnforcedPowerLimit", handle))
            st.name = name or st.name
            st.uuid = uuid or st.uuid
            st.power_limit_w = limit / 1000.0 if limit is not None else None
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
        processes = self._processes(handle, pids, memo)

        mem_used = _num(getattr(mem, "used", None))
        mem_total = _num(getattr(mem, "total", None))
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
        return GpuDevice(
            index=index,
            name=st.name,
            uuid=st.uuid,
            state="ok",
            util_percent=_num(getattr(util, "gpu", None)),
            mem_util_percent=_num(getattr(util, "memory", None)),
            mem_used_mib=mem_used / MIB if mem_used is not None else None,
            mem_total_mib=mem_total / MIB if mem_total is not None else None,
            temperature_c=_num(temp),
            power_w=power / 1000.0 if power is not None else None,
            power_limit_w=st.power_limit_w,
            sm_clock_mhz=_num(clock),
            fan_percent=_num(fan),
            pstate=pstate_text,
            mig_mode=mig_text,
            processes=processes,
        )

    def _process_list(self, fname: str, handle) -> list:
        got = self._call(fname, handle)
        if got is None and hasattr(self._nvml, fname + "_v2"):
            # an older driver without the _v3 call pynvml uses by default
            got = self._call(fname + "_v2", handle)
        return list(got or ())

    def _processes(self, handle, pids, memo) -> tuple[GpuProcess, ...]:
        merged: dict[int, float | None] = {}
        for fname in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            for info in self._process_list(fname, handle):
                pid = getattr(info, "pid", None)
                if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
                    continue
                used = _num(getattr(info, "usedGpuMemory", None))
                used_mib = (
                    used / MIB if used is not None and 0 <= used < _NOT_AVAILABLE_MIN else None
                )
                if pid in merged:
                    known = [v for v in (merged[pid], used_mib) if v is not None]
                    merged[pid] = max(known) if known else None
                else:
                    merged[pid] = used_mib
        if not merged:
            return ()
        user = self._username()
        out = []
        for pid in sorted(merged):
            if pid not in memo:
                memo[pid] = classify_process(pid, pids, user)
            name, run_dir, kind = memo[pid]
            out.append(
                GpuProcess(pid=pid, name=name, used_mib=merged[pid], run_dir=run_dir, kind=kind)
            )
        return tuple(out)

    def _username(self) -> str | None:
        if not self._user_known:
            self._user = _my_username()
            self._user_known = True
        return self._user

    # -- simulated GPUs ---------------------------------------------------------

    def _fake_devices(self, now: float, runs: tuple[RunInfo, ...]) -> list[GpuDevice]:
        if self._fake_t0 is None:
            self._fake_t0 = now
        running = sorted((r for r in runs if r.state == "running"), key=lambda r: r.run_dir)
        busy = bool(running)
        devices = []
        total = 24564.0
        for i in range(self.fake_gpus):
            name, uuid = "RTX 4090", f"GPU-fake-0000-{i:04d}"
            lose_after = self.fake_lose.get(i)
            if lose_after is not None and now - self._fake_t0 >= lose_after:
                devices.append(GpuDevice(index=i, name=name, uuid=uuid, state="lost"))
                continue
            phase = i * 1.7

            def wave(period: float, lo: float, hi: float, phase=phase, digits=1) -> float:
                # time since the first sample: the same screen whatever the wall clock
                s = math.sin(2 * math.pi * (now - self._fake_t0) / period + phase)
                return round(lo + (hi - lo) * (s + 1) / 2, digits)

            if busy:
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
                        ),
                    )
                devices.append(
                    GpuDevice(
                        index=i,
                        name=name,
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
                    )
                )
            else:
                devices.append(
                    GpuDevice(
                        index=i,
                        name=name,
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
                    )
                )
        return devices

    # -- history and waste signals ----------------------------------------------

    def _history(self, index: int) -> deque:
        d = self._samples.get(index)
        if d is None:
            d = self._samples[index] = deque(maxlen=self._keep)
        return d

    def _finish(
        self,
        now: float,
        runs: tuple[RunInfo, ...],
        cpu_percent: float | None,
        devices: list[GpuDevice],
        driver: str | None,
    ) -> GpuView:
        for d in devices:
            ok = d.state == "ok"
            self._history(d.index).append(
                (now, d.util_percent if ok else None, d.mem_used_mib if ok else None)
            )

        flags: dict[int, list[str]] = {d.index: [] for d in devices}
        for d in devices:
            if d.state == "lost":
                flags[d.index].append("lost")
        warnings: list[str] = []

        # which GPUs each running run uses
        on_gpus: dict[str, list[GpuDevice]] = {}
        for d in devices:
            if d.state != "ok":
                continue
            for run_dir in dict.fromkeys(p.run_dir for p in d.processes if p.run_dir):
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
            for index, mean, others in find_stragglers(means):
                if "straggler" not in flags[index]:
                    flags[index].append("straggler")
                warnings.append(straggler_warning(index, r.name, mean, others))

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
                warnings.append(read_profile_verdict(r.run_dir) or STARVED_GUESS)
        for run_dir in list(self._low_since):
            if run_dir not in live:
                del self._low_since[run_dir]

        # idle
        idle = is_idle(devices, runs)
        if idle:
            if self._idle_since is None or now < self._idle_since:
                self._idle_since = now
            for d in devices:
                if d.state == "ok":
                    flags[d.index].append("idle")
        else:
            self._idle_since = None

        out = []
        n = self.history_len
        for d in devices:
            hist = self._samples[d.index]
            recent = list(islice(hist, max(len(hist) - n, 0), None))
            out.append(
                replace(
                    d,
                    flags=tuple(flags[d.index]),
                    util_history=tuple(u for _t, u, _m in recent),
                    mem_history=tuple(m for _t, _u, m in recent),
                )
            )
        return GpuView(
            available=True,
            reason=None,
            source=self.source,
            driver_version=driver,
            devices=tuple(out),
            idle=idle,
            idle_since=self._idle_since if idle else None,
            warnings=tuple(dict.fromkeys(warnings)),
        )
