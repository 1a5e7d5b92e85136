"""The Snapshot: one immutable picture of what the screen shows.

Built by `watch.RunsWatcher`, rendered by the app, printed by
`rgpu-tui snapshot` (as JSON through `snapshot_to_json`, or as text through
`snapshot_to_text`). Scripts, tests and the screen read the same object.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from .checkpoints import Checkpoint, checkpoint_to_json
from .discovery import deep_dirs_text
from .hub_target import PushTarget
from .text import printable

SCHEMA_VERSION = 1
SERIES_LEN = 120
LOG_TAIL_LEN = 50


@dataclass(frozen=True)
class RunInfo:
    """One run, as the runs list and the run header show it."""

    run_dir: str
    name: str
    state: str  # running, completed, failed, dead, stalled, unknown
    status_state: str | None  # what status.json itself says
    pid: int | None
    pid_alive: bool | None
    current_epoch: int | None
    total_epochs: int | None
    progress: float | None
    eta_seconds: float | None
    elapsed_seconds: float | None
    mean_epoch_seconds: float | None
    best_metric: float | None
    best_metric_name: str | None
    best_epoch: int | None
    updated_at: str | None
    error: str | None  # failed: "Type: message"; dead: why
    model: str | None = None
    problem: str | None = None  # e.g. "status.json unreadable: permission denied"
    activity: float = 0.0  # newest mtime of its files (sort key)
    gpu_indices: tuple[int, ...] = ()  # the GPUs its processes use now, sorted (set by Collector)
    # status.json's started_at and updated_at as epoch seconds (range-checked; the JSON
    # output keeps updated_at as the text status.json gives)
    started_at: float | None = None
    updated: float | None = None


@dataclass(frozen=True)
class MetricColumn:
    name: str
    last: float | None
    min: float | None
    max: float | None
    best: float | None
    best_epoch: int | None
    values: tuple[float | None, ...]  # the newest <= SERIES_LEN values


@dataclass(frozen=True)
class MetricsView:
    source: str | None  # "metrics.jsonl", "results.csv" or None
    columns: tuple[str, ...]
    last: dict = field(default_factory=dict)  # the newest row
    series: tuple[MetricColumn, ...] = ()
    rows: int = 0
    malformed_lines: int = 0
    problem: str | None = None
    non_finite_values: int = 0  # NaN / Infinity / too-large values skipped by the stats

    def column(self, name: str) -> MetricColumn | None:
        for col in self.series:
            if col.name == name:
                return col
        return None


@dataclass(frozen=True)
class LogView:
    path: str
    lines: tuple[str, ...]
    problem: str | None = None


@dataclass(frozen=True)
class PushInfo:
    """The selected run's pushes to the Hub, from <run>/.rgpu/pushes.jsonl."""

    last_ok_file: str | None = None  # the newest successful push
    last_ok_epoch: int | None = None
    last_ok_at: float | None = None
    last_ok_url: str | None = None
    last_outcome: str | None = None  # the newest attempt: "ok", "skipped", "error"
    last_error: str | None = None
    best_changed: bool | None = None  # best.pt on disk differs from the last pushed best.pt
    attempts: int = 0


@dataclass(frozen=True)
class SelectedRun:
    run_dir: str
    metrics: MetricsView
    log: LogView
    pushes: PushInfo | None = None
    checkpoints: tuple[Checkpoint, ...] = ()  # weights/*.pt, ordered (core.checkpoints)
    checkpoints_not_listed: int = 0  # beyond checkpoints.MAX_LISTED
    push_default: str = "best.pt"  # what `p` pushes: best.pt, else last.pt
    artifacts_target: PushTarget | None = None  # where pushing the small artifacts goes

    def checkpoint(self, name: str) -> Checkpoint | None:
        for c in self.checkpoints:
            if c.name == name:
                return c
        return None


@dataclass(frozen=True)
class GpuProcess:
    pid: int  # as NVML gives it (a host pid inside a container)
    name: str | None  # None: psutil cannot see it ("unknown process")
    used_mib: float | None
    run_dir: str | None  # the run it belongs to (its pid, a descendant, another rank of its job)
    kind: str  # "run", "process" (ours, no run), "other-user", "unknown", "host" (host pid, no run)
    host_pid: bool = False  # `pid` is a host pid: no process here has it
    local_pid: int | None = None  # this process's pid here, when known
    local_candidates: tuple[int, ...] = ()  # host pid not paired: run processes here on this GPU


@dataclass(frozen=True)
class MigInstance:
    """One MIG device of a MIG-enabled GPU. NVML gives no utilisation for MIG devices."""

    mig_index: int
    name: str | None = None
    uuid: str | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    util_percent: float | None = None


@dataclass(frozen=True)
class GpuDevice:
    """One GPU. Every measurement is None when the board or driver does not report it."""

    index: int
    name: str | None
    uuid: str | None
    state: str  # "ok" or "lost"
    util_percent: float | None = None
    mem_util_percent: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    fan_percent: float | None = None
    pstate: str | None = None  # "P0".."P15"
    mig_mode: str | None = None  # "enabled", "disabled"
    flags: tuple[str, ...] = ()  # "idle", "straggler", "starved", "lost"
    processes: tuple[GpuProcess, ...] = ()
    util_history: tuple[float | None, ...] = ()  # oldest first, one sample a refresh
    mem_history: tuple[float | None, ...] = ()  # memory used, MiB
    minor: int | None = None  # the N of /dev/nvidiaN
    runs: tuple[str, ...] = ()  # run_dir of every run with a process on it, sorted
    mig_instances: tuple[MigInstance, ...] = ()  # MIG mode on: its MIG devices


@dataclass(frozen=True)
class GpuView:
    available: bool
    reason: str | None  # why not available, in one sentence
    source: str  # "nvml", "fake" (simulated) or "replay" (a recording, --gpu-replay)
    driver_version: str | None = None
    devices: tuple[GpuDevice, ...] = ()
    idle: bool = False  # every GPU under 5% and no running run
    # how long the machine has been idle, by the one idle clock (core.idle, set by the
    # Collector); None when busy or after a single look
    idle_seconds: float | None = None
    warnings: tuple[str, ...] = ()  # straggler / starved sentences
    # "local": NVML's pids are this machine's; "host": NVML gives host pids (a container);
    # None: not known yet (inside a pid namespace, no GPU process seen)
    pid_namespace: str | None = None


@dataclass(frozen=True)
class DiskInfo:
    path: str
    total_bytes: int
    used_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class SystemView:
    cpu_percent: float | None
    cpu_max_percent: float | None  # the busiest core
    load_avg: tuple[float, float, float] | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    swap_used_bytes: int | None
    swap_total_bytes: int | None
    disk: DiskInfo | None
    largest_checkpoint_bytes: int | None = None
    disk_full_in_hours: float | None = None  # projected from how fast the root grows
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CostView:
    """Money, from the settings and the clock. Unknown inputs give None, never a guess."""

    configured: bool  # a price per hour is set
    price_per_hour: float | None = None
    billing_started_at: float | None = None  # epoch seconds
    billing_started_source: str | None = None  # "settings", "container start", "boot time"
    billed_hours: float | None = None
    spent: float | None = None
    run_spent: float | None = None  # the selected run: elapsed x rate
    per_epoch: float | None = None
    to_finish: float | None = None
    projected_total: float | None = None
    stopped_per_hour: float | None = None
    break_even_hours: float | None = None
    stop_saving_percent: float | None = None
    idle_seconds: float | None = None  # idle time seen since billing started (while watched)
    idle_spent: float | None = None
    idle_now_seconds: float | None = None  # the current idle stretch, None when busy
    idle_now_spent: float | None = None  # what the current idle stretch has cost
    idle_minutes: float = 10.0  # banner threshold
    idle_alert: bool = False  # the current stretch has lasted idle_minutes: the banner is up
    disk_gb: float | None = None  # the allocated disk the stopped rate is for
    balance_left: float | None = None
    balance_runs_out_at: float | None = None  # epoch seconds
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    generated_at: float
    root: str
    root_exists: bool
    runs: tuple[RunInfo, ...]
    selected: SelectedRun | None
    problem: str | None = None
    gpus: GpuView | None = None
    system: SystemView | None = None
    cost: CostView | None = None
    schema_version: int = SCHEMA_VERSION
    deep_dirs_skipped: int = 0  # directories below discovery.MAX_DEPTH, not searched

    def run(self, run_dir: str | None) -> RunInfo | None:
        for r in self.runs:
            if r.run_dir == run_dir:
                return r
        return None

    @property
    def selected_run(self) -> RunInfo | None:
        return self.run(self.selected.run_dir) if self.selected else None


# -- JSON -------------------------------------------------------------------


def _clean(value):
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def fmt_gpu_indices(indices) -> str:
    """GPU indices as compact ranges: (0, 1, 2, 3) -> "0-3", (0, 2, 3) -> "0,2-3"."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(indices)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def run_to_json(r: RunInfo) -> dict:
    return _clean(
        {
            "run_dir": r.run_dir,
            "name": r.name,
            "state": r.state,
            "status_state": r.status_state,
            "pid": r.pid,
            "pid_alive": r.pid_alive,
            "current_epoch": r.current_epoch,
            "total_epochs": r.total_epochs,
            "progress": r.progress,
            "eta_seconds": r.eta_seconds,
            "elapsed_seconds": r.elapsed_seconds,
            "mean_epoch_seconds": r.mean_epoch_seconds,
            "best_metric": r.best_metric,
            "best_metric_name": r.best_metric_name,
            "best_epoch": r.best_epoch,
            "updated_at": r.updated_at,
            "error": r.error,
            "model": r.model,
            "problem": r.problem,
            "gpu_indices": list(r.gpu_indices),
        }
    )


def gpus_to_json(g: GpuView, now: float | None = None) -> dict:
    """`idle_since`: `now` less the idle seconds the idle clock counted (a gap in sampling
    counts at most core.idle.GAP_CAP_S), so it agrees with the screen and the cost."""
    idle = g.idle_seconds
    return _clean(
        {
            "available": g.available,
            "reason": g.reason,
            "source": g.source,
            "driver_version": g.driver_version,
            "pid_namespace": g.pid_namespace,
            "idle": g.idle,
            "idle_seconds": idle,
            "idle_since": iso(now - idle) if idle is not None and now is not None else None,
            "warnings": list(g.warnings),
            "devices": [
                {
                    **{k: v for k, v in asdict(d).items() if k != "processes"},
                    "flags": list(d.flags),
                    "processes": [asdict(p) for p in d.processes],
                }
                for d in g.devices
            ],
        }
    )


def system_to_json(s: SystemView) -> dict:
    return _clean(asdict(s))


def cost_to_json(c: CostView) -> dict:
    out = asdict(c)
    for key in ("billing_started_at", "balance_runs_out_at"):
        if out[key] is not None:
            out[key] = iso(out[key])
    return _clean(out)


def snapshot_to_json(s: Snapshot) -> dict:
    selected = None
    if s.selected is not None:
        m = s.selected.metrics
        selected = {
            "run_dir": s.selected.run_dir,
            "metrics": {
                "source": m.source,
                "columns": list(m.columns),
                "last": m.last,
                "series": {c.name: list(c.values) for c in m.series},
                "stats": {
                    c.name: {
                        "last": c.last,
                        "min": c.min,
                        "max": c.max,
                        "best": c.best,
                        "best_epoch": c.best_epoch,
                    }
                    for c in m.series
                },
                "rows": m.rows,
                "malformed_lines": m.malformed_lines,
                "problem": m.problem,
                "non_finite_values": m.non_finite_values,
            },
            "log_tail": list(s.selected.log.lines[-LOG_TAIL_LEN:]),
            "log_problem": s.selected.log.problem,
            "checkpoints": [checkpoint_to_json(c) for c in s.selected.checkpoints],
        }
    pushes = None
    if s.selected is not None and s.selected.pushes is not None:
        pushes = asdict(s.selected.pushes)
        pushes["run_dir"] = s.selected.run_dir
        if pushes["last_ok_at"] is not None:
            pushes["last_ok_at"] = iso(pushes["last_ok_at"])
    return _clean(
        {
            "schema_version": s.schema_version,
            "generated_at": iso(s.generated_at),
            "root": s.root,
            "root_exists": s.root_exists,
            "problem": s.problem,
            "deep_dirs_skipped": s.deep_dirs_skipped,
            "runs": [run_to_json(r) for r in s.runs],
            "selected": selected,
            "gpus": gpus_to_json(s.gpus, s.generated_at) if s.gpus is not None else None,
            "system": system_to_json(s.system) if s.system is not None else None,
            "cost": cost_to_json(s.cost) if s.cost is not None else None,
            "pushes": pushes,
        }
    )


# -- text -------------------------------------------------------------------


def fmt_duration(seconds: float | None) -> str:
    """12s, 4m05s, 3h07m, 2d04h; '?' when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = int(round(max(seconds, 0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def fmt_money(value: float | None) -> str:
    """Dollars to the cent; '?' when unknown."""
    if value is None or not math.isfinite(value):
        return "?"
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def fmt_rate(per_hour: float | None) -> str:
    """A price per hour: to the cent from $1/h, to 4 decimals under it."""
    if per_hour is None or not math.isfinite(per_hour):
        return "?/h"
    return f"${per_hour:.4f}/h" if abs(per_hour) < 1 else f"${per_hour:,.2f}/h"


def fmt_number(value: float | None) -> str:
    """Compact, fixed-ish width number; '-' when unknown."""
    if value is None or not math.isfinite(value):
        return "-"
    a = abs(value)
    if a == 0:
        return "0"
    if a >= 1e5 or a < 1e-3:
        return f"{value:.2e}"
    if a >= 100:
        return f"{value:.1f}"
    return f"{value:.4g}"


def epoch_text(r: RunInfo) -> str:
    cur = "?" if r.current_epoch is None else str(r.current_epoch)
    tot = "?" if r.total_epochs is None else str(r.total_epochs)
    return f"{cur}/{tot}"


def best_text(r: RunInfo) -> str:
    if r.best_metric is None:
        return "best -"
    name = printable(r.best_metric_name or "metric").removeprefix("metrics/")
    at = f" @ep{r.best_epoch}" if r.best_epoch is not None else ""
    return f"best {name} {fmt_number(r.best_metric)}{at}"


def _na(value, fmt: str, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "N/A"
    return f"{value:{fmt}}{unit}"


def _lines(lines: list[str]) -> list[str]:
    """The output boundary of the text functions: each entry one printable line (a newline
    or an escape sequence inside a run-derived field shows as ^J / ^[)."""
    return [printable(line) for line in lines]


def _process_text(p: GpuProcess) -> str:
    """'1234 exp7'; a host pid: 'host 81234=12 exp7' (paired) or 'host 81234'."""
    pid = str(p.pid)
    if p.host_pid:
        pid = f"host {p.pid}" + (f"={p.local_pid}" if p.local_pid is not None else "")
    return pid + (" " + printable(os.path.basename(p.run_dir)) if p.run_dir else "")


def gpus_to_text(g: GpuView) -> list[str]:
    if not g.available:
        return _lines([g.reason or "no GPUs"])
    label = "simulated" if g.source == "fake" else f"driver {g.driver_version or 'N/A'}"
    if g.source == "replay":
        label = f"replay, {label}"
    out = [f"GPUs {len(g.devices)} ({printable(label)})" + ("  IDLE" if g.idle else "")]
    if g.pid_namespace == "host":
        out.append("  container: NVML gives host pids")
    for d in g.devices:
        if d.state == "lost":
            out.append(f"  {d.index} {d.name or 'N/A'}: LOST")
            continue
        mem = (
            f"{d.mem_used_mib / 1024:.1f}/{d.mem_total_mib / 1024:.0f} GiB"
            if d.mem_used_mib is not None and d.mem_total_mib
            else "N/A"
        )
        procs = ", ".join(_process_text(p) for p in d.processes)
        line = (
            f"  {d.index} {d.name or 'N/A'}: util {_na(d.util_percent, '.0f', '%')}"
            f"  mem {mem}  {_na(d.temperature_c, '.0f', 'C')}  {_na(d.power_w, '.0f', 'W')}"
        )
        if d.flags:
            line += "  [" + ",".join(d.flags) + "]"
        if procs:
            line += f"  pids {procs}"
        out.append(line)
    out.extend(f"  ! {w}" for w in g.warnings)
    return _lines(out)


def system_to_text(s: SystemView) -> list[str]:
    gib = 1024**3
    parts = [f"CPU {_na(s.cpu_percent, '.0f', '%')}"]
    if s.load_avg:
        parts.append(f"load {s.load_avg[0]:.2f}")
    if s.mem_total_bytes:
        used = s.mem_used_bytes or 0
        parts.append(f"RAM {used / gib:.1f}/{s.mem_total_bytes / gib:.1f} GiB")
    if s.disk:
        parts.append(
            f"disk {s.disk.path}: {s.disk.free_bytes / gib:.1f} GiB free of "
            f"{s.disk.total_bytes / gib:.1f}"
        )
    return _lines(["  ".join(parts)] + [f"  ! {w}" for w in s.warnings])


def snapshot_to_text(s: Snapshot) -> str:
    """What the app shows, as plain lines; every run-derived string made printable."""
    out = [f"rgpu-tui snapshot  {iso(s.generated_at)}  root {s.root}"]
    if s.gpus is not None:
        out.extend(gpus_to_text(s.gpus))
    if s.system is not None:
        out.extend(system_to_text(s.system))
    if s.problem:
        out.append(s.problem)
    for r in s.runs:
        pct = "   ?" if r.progress is None else f"{r.progress * 100:3.0f}%"
        line = (
            f"{r.state:<9} {printable(r.name):<24} ep {epoch_text(r):>9} {pct}  "
            f"eta {fmt_duration(r.eta_seconds):>6}  elapsed {fmt_duration(r.elapsed_seconds):>6}  "
            f"{best_text(r)}"
        )
        out.append(line.rstrip())
        if r.error:
            out.append(f"          {r.error}")
        if r.problem:
            out.append(f"          ({r.problem})")
    if s.deep_dirs_skipped:
        out.append(deep_dirs_text(s.deep_dirs_skipped))
    if s.selected is not None:
        m = s.selected.metrics
        out.append("")
        out.append(f"selected {s.selected.run_dir}")
        for col in m.series:
            if col.name in ("train/loss", "lr/group0") or col.name == m.last.get(
                "best_metric_name"
            ):
                out.append(
                    f"  {printable(col.name):<22} last {fmt_number(col.last):>9}  "
                    f"min {fmt_number(col.min):>9}  max {fmt_number(col.max):>9}"
                )
        if m.problem:
            out.append(f"  metrics: {m.problem}")
        if m.malformed_lines:
            out.append(f"  metrics: {m.malformed_lines} malformed line(s) skipped")
        tail = s.selected.log.lines[-10:]
        if tail:
            out.append("  log:")
            out.extend(f"    {line}" for line in tail)
        elif s.selected.log.problem:
            out.append(f"  log: {s.selected.log.problem}")
    return "\n".join(_lines(out))
