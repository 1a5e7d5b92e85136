"""Recorded GPUs (source "replay"): `--gpu-replay FILE` / RGPU_GPU_REPLAY, and the recorder
behind `rgpu-tui snapshot --record-gpus FILE --seconds N`.

A recording is JSON lines, one sample each, played by "t" (seconds from the start of the
replay; before the first sample's t the first sample shows, after the last the last holds):

    {"t": 0.0, "driver_version": "550.54.15", "devices": [{"index": 0, "minor": 0,
     "uuid": "GPU-...", "name": "NVIDIA GeForce RTX 4090", "util_percent": 97,
     "mem_util_percent": 41, "mem_used_mib": 20500, "mem_total_mib": 24564,
     "temperature_c": 70, "power_w": 380.0, "power_limit_w": 450.0,
     "processes": [{"pid": 12345, "used_mib": 20000}]}]}

Optional device fields: "state" ("ok" or "lost"), "sm_clock_mhz", "fan_percent", "pstate"
("P0".."P15"), "mig_mode" ("enabled"/"disabled"), "mig_instances" (objects with
"mig_index", "name", "uuid", "gpu_instance_id", "compute_instance_id", "mem_used_mib",
"mem_total_mib", "util_percent"); the health fields (core.machine.gpu_health):
"clock_events" (a list of its names: "sw_power_cap", "hw_thermal", ...), "mem_clock_mhz",
"sm_clock_max_mhz", "mem_clock_max_mhz", "pcie_tx_kbs", "pcie_rx_kbs" (numbers),
"pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max", "ecc_corrected",
"ecc_uncorrected", "retired_pages", "remapped_rows", "xid_count", "xid_last" (whole
numbers), "remap_pending" (true/false). A field left out (or null) reads N/A; unknown keys
are ignored. The pids are NVML's, of the machine that recorded: they are attributed to runs
here like NVML's own (so a recording made in a container lists host pids).

The whole file is read and checked before anything is shown: a malformed one raises
RecordingError, whose text is one line naming the file and the line.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..base.safeio import read_regular
from ..base.text import printable
from ..base.values import parse_json, value_text
from ..model.snapshot import GpuDevice, GpuView, MigInstance
from .gpu_health import CLOCK_EVENT_NAMES
from .gpu_procs import DeviceReading

MAX_RECORDING_BYTES = 64 * 1024 * 1024
MAX_DEVICES = 64
MAX_PROCESSES = 4096
MAX_RECORD_SECONDS = 7 * 24 * 3600.0

_PERCENT = (0.0, 100.0)
_NON_NEGATIVE = (0.0, math.inf)
_NUMBERS = {
    "util_percent": _PERCENT,
    "mem_util_percent": _PERCENT,
    "mem_used_mib": _NON_NEGATIVE,
    "mem_total_mib": _NON_NEGATIVE,
    "temperature_c": (-273.0, 1000.0),
    "power_w": _NON_NEGATIVE,
    "power_limit_w": _NON_NEGATIVE,
    "sm_clock_mhz": _NON_NEGATIVE,
    "fan_percent": _PERCENT,
    "mem_clock_mhz": _NON_NEGATIVE,
    "sm_clock_max_mhz": _NON_NEGATIVE,
    "mem_clock_max_mhz": _NON_NEGATIVE,
    "pcie_tx_kbs": _NON_NEGATIVE,
    "pcie_rx_kbs": _NON_NEGATIVE,
}
_WHOLE = (
    "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max", "ecc_corrected",
    "ecc_uncorrected", "retired_pages", "remapped_rows", "xid_count", "xid_last",
)  # fmt: skip
_MIG_NUMBERS = {
    "mem_used_mib": _NON_NEGATIVE,
    "mem_total_mib": _NON_NEGATIVE,
    "util_percent": _PERCENT,
}
_PSTATES = {f"P{i}" for i in range(16)}


class RecordingError(ValueError):
    """A recording that cannot be played (or written); the text is one line."""


class _Bad(Exception):
    """What is wrong with one line (the caller adds the file and line)."""


@dataclass(frozen=True)
class Sample:
    t: float
    driver_version: str | None
    readings: tuple[DeviceReading, ...]


@dataclass(frozen=True)
class GpuRecording:
    path: str
    samples: tuple[Sample, ...]

    @property
    def times(self) -> list[float]:
        return [s.t for s in self.samples]


# -- reading ------------------------------------------------------------------------


def _shown(value) -> str:
    text = value_text(value, 41) if not isinstance(value, str) else repr(value[:41])
    return text if len(text) <= 40 else text[:37] + "..."


def _number(obj: dict, key: str, where: str, bounds: tuple[float, float]) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad(f"{where}{key} must be a number, got {_shown(value)}")
    if not lo <= value <= hi:
        span = f"from {lo:g}" + (f" to {hi:g}" if math.isfinite(hi) else "")
        raise _Bad(f"{where}{key} must be {span}, got {_shown(value)}")
    return float(value)


def _whole(obj: dict, key: str, where: str, *, required: bool = False, low: int = 0) -> int | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise _Bad(f"{where}{key} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _Bad(f"{where}{key} must be a whole number from {low}, got {_shown(value)}")
    return value


def _string(obj: dict, key: str, where: str, allowed=None) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or (allowed is not None and value not in allowed):
        what = "one of " + ", ".join(sorted(allowed)) if allowed is not None else "a string"
        raise _Bad(f"{where}{key} must be {what}, got {_shown(value)}")
    return value


def _list(obj: dict, key: str, where: str, most: int) -> list:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{where}{key} must be a list, got {_shown(value)}")
    if len(value) > most:
        raise _Bad(f"{where}{key} has {len(value)} entries (at most {most})")
    return value


def _object(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise _Bad(f"{where.rstrip('.')} must be an object, got {_shown(value)}")
    return value


def _mig(value, where: str) -> MigInstance:
    obj = _object(value, where)
    return MigInstance(
        mig_index=_whole(obj, "mig_index", where, required=True),
        name=_string(obj, "name", where),
        uuid=_string(obj, "uuid", where),
        gpu_instance_id=_whole(obj, "gpu_instance_id", where),
        compute_instance_id=_whole(obj, "compute_instance_id", where),
        **{k: _number(obj, k, where, b) for k, b in _MIG_NUMBERS.items()},
    )


def _health(obj: dict, where: str) -> dict:
    """The health fields of a device (whole numbers, the pending flag, the clock events)."""
    out: dict = {k: _whole(obj, k, where) for k in _WHOLE}
    pending = obj.get("remap_pending")
    if pending is not None and not isinstance(pending, bool):
        raise _Bad(f"{where}remap_pending must be true or false, got {_shown(pending)}")
    out["remap_pending"] = pending
    events = obj.get("clock_events")
    if events is not None:
        events = tuple(_list(obj, "clock_events", where, len(CLOCK_EVENT_NAMES)))
        for j, e in enumerate(events):
            if e not in CLOCK_EVENT_NAMES:
                known = ", ".join(CLOCK_EVENT_NAMES)
                raise _Bad(f"{where}clock_events[{j}] must be one of {known}, got {_shown(e)}")
    out["clock_events"] = events
    return out


def _device(value, where: str) -> DeviceReading:
    obj = _object(value, where)
    index = _whole(obj, "index", where, required=True)
    state = _string(obj, "state", where, {"ok", "lost"}) or "ok"
    processes = []
    for j, item in enumerate(_list(obj, "processes", where, MAX_PROCESSES)):
        pwhere = f"{where}processes[{j}]."
        p = _object(item, pwhere)
        pid = _whole(p, "pid", pwhere, required=True, low=1)
        processes.append((pid, _number(p, "used_mib", pwhere, _NON_NEGATIVE)))
    migs = tuple(
        _mig(item, f"{where}mig_instances[{j}].")
        for j, item in enumerate(_list(obj, "mig_instances", where, MAX_DEVICES))
    )
    common = {
        "index": index,
        "name": _string(obj, "name", where),
        "uuid": _string(obj, "uuid", where),
        "state": state,
        "minor": _whole(obj, "minor", where),
    }
    numbers = {k: _number(obj, k, where, b) for k, b in _NUMBERS.items()}
    pstate = _string(obj, "pstate", where, _PSTATES)
    mig_mode = _string(obj, "mig_mode", where, {"enabled", "disabled"})
    if state == "lost":
        return DeviceReading(GpuDevice(**common))
    device = GpuDevice(
        **common,
        **numbers,
        **_health(obj, where),
        pstate=pstate,
        mig_mode=mig_mode,
        mig_instances=migs,
    )
    return DeviceReading(device, tuple(sorted(dict(processes).items())))


def parse_sample(line: str, last_t: float | None) -> Sample:
    try:
        data = parse_json(line)  # a line nested too deep is "not JSON" too
    except ValueError as exc:
        raise _Bad(f"not JSON ({' '.join(str(exc).split())})") from None
    obj = _object(data, "the sample")
    t = obj.get("t")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise _Bad(f"t must be seconds from the start (a number from 0), got {_shown(t)}")
    if last_t is not None and t < last_t:
        raise _Bad(f"t goes back in time ({t:g} after {last_t:g})")
    driver = _string(obj, "driver_version", "")
    if "devices" not in obj:
        raise _Bad("devices is missing")
    readings = [
        _device(item, f"devices[{i}].")
        for i, item in enumerate(_list(obj, "devices", "", MAX_DEVICES))
    ]
    indices = [r.device.index for r in readings]
    if len(set(indices)) != len(indices):
        raise _Bad("two devices have the same index")
    readings.sort(key=lambda r: r.device.index)
    return Sample(float(t), driver, tuple(readings))


def load_recording(path: str) -> GpuRecording:
    """Read and check a whole recording; RecordingError (one line) when it is unusable."""
    shown = printable(str(path))
    try:
        raw = read_regular(path, MAX_RECORDING_BYTES)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise RecordingError(f"{shown}: cannot read the GPU recording ({reason})") from None
    if len(raw) > MAX_RECORDING_BYTES:
        raise RecordingError(
            f"{shown}: GPU recording larger than {MAX_RECORDING_BYTES // (1024 * 1024)} MiB"
        )
    samples: list[Sample] = []
    last_t = None
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise RecordingError(f"{shown} line {number}: not UTF-8 text") from None
        try:
            sample = parse_sample(text, last_t)
        except _Bad as exc:
            raise RecordingError(f"{shown} line {number}: {exc}") from None
        samples.append(sample)
        last_t = sample.t
    if not samples:
        raise RecordingError(
            f"{shown}: no samples in the GPU recording (JSON lines, one sample each)"
        )
    return GpuRecording(str(path), tuple(samples))


class ReplaySource:
    """Plays a GpuRecording; its clock starts at the first `read`."""

    name = "replay"

    def __init__(self, recording: GpuRecording) -> None:
        self.recording = recording
        self._times = recording.times
        self._t0: float | None = None
        self.driver_version: str | None = None

    def read(self, now: float) -> list[DeviceReading] | GpuView:
        if self._t0 is None:
            self._t0 = now
        i = bisect.bisect_right(self._times, now - self._t0) - 1
        sample = self.recording.samples[max(i, 0)]
        self.driver_version = sample.driver_version
        return list(sample.readings)

    def close(self) -> None:
        pass


# -- writing --------------------------------------------------------------------------


def _drop_none(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if v is not None}


def reading_to_json(reading: DeviceReading) -> dict:
    d = reading.device
    out = {
        "index": d.index,
        "minor": d.minor,
        "uuid": d.uuid,
        "name": d.name,
        "state": d.state,
    }
    if d.state == "ok":
        out.update({k: getattr(d, k) for k in _NUMBERS})
        out["pstate"] = d.pstate
        out["mig_mode"] = d.mig_mode
        out.update({k: getattr(d, k) for k in _WHOLE})
        out["remap_pending"] = d.remap_pending
        if d.clock_events is not None:
            out["clock_events"] = list(d.clock_events)
        if d.mig_instances:
            out["mig_instances"] = [
                _drop_none(
                    {
                        "mig_index": m.mig_index,
                        "name": m.name,
                        "uuid": m.uuid,
                        "gpu_instance_id": m.gpu_instance_id,
                        "compute_instance_id": m.compute_instance_id,
                        **{k: getattr(m, k) for k in _MIG_NUMBERS},
                    }
                )
                for m in d.mig_instances
            ]
        out["processes"] = [
            _drop_none({"pid": pid, "used_mib": used}) for pid, used in reading.processes
        ]
    return _drop_none(out)


def sample_to_json(t: float, driver_version: str | None, readings) -> dict:
    return _drop_none(
        {
            "t": round(t, 3),
            "driver_version": driver_version,
            "devices": [reading_to_json(r) for r in readings],
        }
    )


def record_gpus(
    path: str,
    seconds: float,
    *,
    interval: float = 1.0,
    source=None,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Record NVML to `path` (JSON lines) for `seconds`, one sample per `interval`; the
    number of samples written. Written to a temporary name and renamed at the end (also
    after Ctrl-C, with what was recorded). RecordingError when NVML has nothing to give."""
    from .nvml_source import NvmlSource

    if not (math.isfinite(seconds) and 0 < seconds <= MAX_RECORD_SECONDS):
        raise RecordingError(f"--seconds must be more than 0 and at most {MAX_RECORD_SECONDS:g}")
    if not (math.isfinite(interval) and interval > 0):
        raise RecordingError("the recording interval must be a positive number of seconds")
    source = source if source is not None else NvmlSource()
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    written = 0
    try:
        first = source.read(wall())
        if isinstance(first, GpuView):
            raise RecordingError(f"nothing to record: {first.reason}")
        start = clock()
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                readings = first
                while True:
                    t = clock() - start
                    f.write(json.dumps(sample_to_json(t, source.driver_version, readings)))
                    f.write("\n")
                    f.flush()
                    written += 1
                    next_at = start + written * interval
                    if next_at - start > seconds:
                        break
                    sleep(max(next_at - clock(), 0.0))
                    readings = source.read(wall())
                    if isinstance(readings, GpuView):
                        break  # NVML went away: keep what was recorded
        except KeyboardInterrupt:
            pass  # keep what was recorded
        os.replace(tmp, path)
    except OSError as exc:
        raise RecordingError(
            f"{printable(str(path))}: cannot write the GPU recording ({exc.strerror or exc})"
        ) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        source.close()
    return written
