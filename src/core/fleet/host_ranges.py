"""Numbers from another machine, in the ranges the local readers use: out of range is unknown.

A remote host's Snapshot JSON is checked field by field against its dataclass annotations
(core.model.snapshot_from_json, the codec); `host_snapshot` then derives again what the JSON
does not carry, by the local rules (a checkpoint's repo problem: core.run.hub_target; the
push default: core.run.checkpoints), and holds each number against its range, as
the local readers do with status.json (core.base.values): a price of -5, a progress of
-3.5, an epoch of -1 or a memory of -1 MiB become None (unknown), and the host view says
which, instead of showing them:

- a run's odd fields go into that run's `problem` ("from the host: progress out of range
  (-3.5)"), shown in its header as a local run's odd status.json fields are;
- the machine's (GPUs, system, cost, autostop) go into the Snapshot's `problem`
  ("host sent numbers out of range, shown as unknown: cost.price_per_hour (-5), ..."),
  the message the host view shows.

An element of a series out of range is a gap (None); a GPU (or a MIG device, or a GPU
process) whose index (pid) is out of range is left out, and said.

A run's chart (Snapshot.charts) is checked as a whole, since its parts only mean something
together (`whole_chart`): its epochs increasing and in range, every series and the times
as long as the epochs, stride and rows that could have been, every mark an epoch, every
number in its range, each list and text within what a local chart holds. A chart that
fails is kept as its run with nothing to draw and the reason as its problem ("the host
sent a chart that does not hold together: series train/loss has 6 values for 5 epochs"),
so one bad host never takes down the view of the others; at most MAX_RUNS charts are kept.
"""

from __future__ import annotations

import dataclasses

from ..base.values import (
    COST,
    DISK_GB,
    DURATIONS,
    EPOCHS,
    FLOAT_MAX,
    MINUTES,
    MONEY,
    PIDS,
    PRICE_PER_HOUR,
    TIMES,
    Range,
    shown,
)
from ..model.snapshot import (
    AutostopPlan,
    ChartSeries,
    Checkpoint,
    CostView,
    DiskInfo,
    GpuDevice,
    GpuProcess,
    GpuView,
    MetricColumn,
    MetricsView,
    MigInstance,
    PushInfo,
    RunChart,
    RunInfo,
    Snapshot,
    SystemView,
)
from ..model.snapshot_from_json import snapshot_from_json
from ..picture.charts import MAX_NAME, MAX_RUNS
from ..run.checkpoints import default_checkpoint
from ..run.hub_target import repo_problem
from ..run.series import MAX_MARKS, MAX_POINTS
from ..run.train_config import KEY_MAX, MAX_KEYS, VALUE_MAX

PROGRESS = Range(0.0, 1.0)  # a fraction, as core.picture.watch computes it
PERCENT = Range(0.0, 100.0)
AMOUNT = Range(0.0, FLOAT_MAX)  # bytes, MiB, watts, MHz, hours: never negative
COUNT = Range(0, 2**63 - 1)
GPU_INDEX = Range(0, 4096)
TEMPERATURE_C = Range(-50.0, 200.0)
MAX_NAMED = 6  # odd fields named in one problem line; the rest are counted

RANGES: dict[type, dict[str, Range]] = {
    RunInfo: {
        "pid": PIDS, "current_epoch": EPOCHS, "total_epochs": EPOCHS, "best_epoch": EPOCHS,
        "progress": PROGRESS, "eta_seconds": DURATIONS, "elapsed_seconds": DURATIONS,
        "mean_epoch_seconds": DURATIONS, "gpu_indices": GPU_INDEX, "updated": TIMES,
        "eta_overdue_seconds": DURATIONS,
    },
    MetricColumn: {"best_epoch": EPOCHS},
    MetricsView: {"rows": COUNT, "malformed_lines": COUNT, "non_finite_values": COUNT},
    PushInfo: {"last_ok_epoch": EPOCHS, "last_ok_at": TIMES, "attempts": COUNT},
    Checkpoint: {"size": AMOUNT, "epoch": EPOCHS},
    GpuView: {"idle_seconds": DURATIONS},
    GpuDevice: {
        "index": GPU_INDEX, "util_percent": PERCENT, "mem_util_percent": PERCENT,
        "fan_percent": PERCENT,
        "mem_used_mib": AMOUNT, "mem_total_mib": AMOUNT, "power_w": AMOUNT,
        "power_limit_w": AMOUNT, "sm_clock_mhz": AMOUNT, "temperature_c": TEMPERATURE_C,
        "util_history": PERCENT, "mem_history": AMOUNT, "minor": GPU_INDEX,
        "mem_clock_mhz": AMOUNT, "sm_clock_max_mhz": AMOUNT, "mem_clock_max_mhz": AMOUNT,
        "pcie_gen": COUNT, "pcie_gen_max": COUNT, "pcie_width": COUNT, "pcie_width_max": COUNT,
        "pcie_tx_kbs": AMOUNT, "pcie_rx_kbs": AMOUNT, "ecc_corrected": COUNT,
        "ecc_uncorrected": COUNT, "retired_pages": COUNT, "remapped_rows": COUNT,
        "xid_count": COUNT, "xid_last": COUNT,
    },
    GpuProcess: {"pid": PIDS, "used_mib": AMOUNT},
    MigInstance: {
        "mig_index": GPU_INDEX, "mem_used_mib": AMOUNT, "mem_total_mib": AMOUNT,
        "util_percent": PERCENT,
    },
    SystemView: {
        "cpu_percent": PERCENT, "cpu_max_percent": PERCENT, "load_avg": AMOUNT,
        "mem_used_bytes": AMOUNT, "mem_total_bytes": AMOUNT, "swap_used_bytes": AMOUNT,
        "swap_total_bytes": AMOUNT, "largest_checkpoint_bytes": AMOUNT,
        "disk_full_in_hours": AMOUNT,
    },
    DiskInfo: {"total_bytes": AMOUNT, "used_bytes": AMOUNT, "free_bytes": AMOUNT},
    CostView: {
        "price_per_hour": PRICE_PER_HOUR, "billing_started_at": TIMES, "billed_hours": AMOUNT,
        "spent": COST, "run_spent": COST, "per_epoch": COST, "to_finish": COST,
        "projected_total": COST, "stopped_per_hour": COST, "idle_seconds": DURATIONS,
        "idle_spent": COST, "idle_now_seconds": DURATIONS, "idle_now_spent": COST,
        "idle_minutes": MINUTES, "disk_gb": DISK_GB, "balance_left": MONEY,
        "balance_runs_out_at": TIMES, "price_read_at": TIMES, "price_age_seconds": DURATIONS,
    },
    AutostopPlan: {"fires_at": TIMES},
}  # fmt: skip

_BAD = object()  # a whole value that cannot stand (a non-optional field out of range)


def host_snapshot(doc) -> Snapshot:
    """A host's snapshot document as the fleet shows it: read back by the codec
    (core.model.snapshot_from_json: SnapshotJsonError, one line, when it is not one), what
    JSON does not carry derived by the local rules, every number held to its range."""
    return in_ranges(_derived(snapshot_from_json(doc)))


def _derived(snap: Snapshot) -> Snapshot:
    """The selected run's push default and each checkpoint's repo problem, as a refresh
    derives them (of a target with both a repo and a path problem only the repo problem
    comes back: the one every dialog shows first)."""
    sel = snap.selected
    if sel is None:
        return snap
    checkpoints = []
    for c in sel.checkpoints:
        why = repo_problem(c.target.repo)
        if why is not None:
            c = dataclasses.replace(
                c, target=dataclasses.replace(c.target, repo_problem=why, path_problem=None)
            )
        checkpoints.append(c)
    selected = dataclasses.replace(
        sel, checkpoints=tuple(checkpoints), push_default=default_checkpoint(checkpoints)
    )
    return dataclasses.replace(snap, selected=selected)


def in_ranges(snap: Snapshot) -> Snapshot:
    """`snap` with every number out of its range unknown, and said (see the module doc)."""
    runs = []
    for run in snap.runs:
        odd: list[str] = []
        checked = _ranged(run, "", odd)
        if odd:
            said = "from the host: " + _listed([f"{o[0]} out of range ({o[1]})" for o in odd])
            problem = f"{checked.problem}; {said}" if checked.problem else said
            checked = dataclasses.replace(checked, problem=problem)
        runs.append(checked)
    odd = []
    changes: dict = {"runs": tuple(runs)}
    if snap.charts:
        changes["charts"] = tuple(whole_chart(c) for c in snap.charts[:MAX_RUNS])
    for name in ("gpus", "system", "cost", "autostop", "selected"):
        value = getattr(snap, name)
        if value is not None:
            got = _ranged(value, f"{name}.", odd)
            changes[name] = None if got is _BAD else got
    if odd:
        said = "host sent numbers out of range, shown as unknown: " + _listed(
            [f"{o[0]} ({o[1]})" for o in odd]
        )
        changes["problem"] = f"{snap.problem}; {said}" if snap.problem else said
    return dataclasses.replace(snap, **changes)


def _listed(parts: list[str]) -> str:
    text = ", ".join(parts[:MAX_NAMED])
    return text + (f" and {len(parts) - MAX_NAMED} more" if len(parts) > MAX_NAMED else "")


def _ranged(value, where: str, odd: list):
    """`value` (a dataclass of the Snapshot) with its numbers held to RANGES; each one out
    of range is appended to `odd` as (path, shown value). _BAD when a field that cannot be
    unknown is out of range."""
    ranges = RANGES.get(type(value), {})
    changes = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        path = f"{where}{f.name}"
        rng = ranges.get(f.name)
        if rng is not None:
            got = _number(item, rng, path, odd, f)
        elif dataclasses.is_dataclass(item):
            got = _ranged(item, path + ".", odd)
            if got is _BAD:
                got = None if _optional(f) else _BAD
        elif isinstance(item, tuple) and item and dataclasses.is_dataclass(item[0]):
            kept = [_ranged(x, f"{path}[{i}].", odd) for i, x in enumerate(item)]
            got = tuple(x for x in kept if x is not _BAD)
        else:
            continue
        if got is _BAD:
            return _BAD
        if got is not item:
            changes[f.name] = got
    return dataclasses.replace(value, **changes) if changes else value


def _number(item, rng: Range, path: str, odd: list, f: dataclasses.Field):
    if isinstance(item, tuple):  # a series: a gap for each odd value; indices: dropped
        bad = [x for x in item if _out(x, rng)]
        if not bad:
            return item
        odd.append((path, shown(bad[0])))
        if f.name == "load_avg":
            return None
        if f.name == "gpu_indices":
            return tuple(x for x in item if not _out(x, rng))
        return tuple(None if _out(x, rng) else x for x in item)
    if not _out(item, rng):
        return item
    odd.append((path, shown(item)))
    if _optional(f):
        return None
    if f.default is not dataclasses.MISSING:
        return f.default
    return _BAD


def _out(x, rng: Range) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x not in rng


def _optional(f: dataclasses.Field) -> bool:
    return "None" in str(f.type)


# what a chart from a host may hold: what a local one can (core.run.series, core.picture.charts)
CHART_SERIES_MAX = 64  # the requested metrics (16) and a family's default panels
CHART_COLUMNS_MAX = 2_000  # numeric columns the picker lists
CHART_SAVED_MAX = 1_000  # epoch_N.pt files
CHART_TEXT_MAX = 1_000  # a problem line, a model family
NOT_WHOLE = "the host sent a chart that does not hold together: "


def whole_chart(chart: RunChart) -> RunChart:
    """`chart` when its parts agree and each is in range (see the module doc); otherwise
    its run with nothing to draw, the reason its problem."""
    why = _chart_fault(chart)
    if why is None:
        return chart
    return RunChart(run_dir=chart.run_dir, problem=NOT_WHOLE + why)


def _chart_fault(c: RunChart) -> str | None:
    n = len(c.epochs)
    if n > MAX_POINTS:
        return f"{n} epochs (at most {MAX_POINTS})"
    bad = _first_out(c.epochs, EPOCHS, integer=True)
    if bad is not None:
        return f"epoch out of range ({shown(bad)})"
    if any(b <= a for a, b in zip(c.epochs, c.epochs[1:], strict=False)):
        return "its epochs do not increase"
    if c.spent_seconds and len(c.spent_seconds) != n:
        return f"{len(c.spent_seconds)} times for {n} epochs"
    bad = _first_out(c.spent_seconds, DURATIONS)
    if bad is not None:
        return f"time out of range ({shown(bad)})"
    if len(c.series) > CHART_SERIES_MAX:
        return f"{len(c.series)} series (at most {CHART_SERIES_MAX})"
    for s in c.series:
        fault = _series_fault(s, n)
        if fault is not None:
            return fault
    for name, items, most in (
        ("columns", c.columns, CHART_COLUMNS_MAX),
        ("resume points", c.resumes, MAX_MARKS),
        ("diverged epochs", c.diverged, MAX_MARKS),
        ("saved epochs", c.saved, CHART_SAVED_MAX),
        ("config keys", c.config, MAX_KEYS),
    ):
        if len(items) > most:
            return f"{len(items)} {name} (at most {most})"
    if any(not 0 < len(name) <= MAX_NAME for name in c.columns):
        return "a column name empty or too long"
    for name, marks in (("resume point", c.resumes), ("diverged epoch", c.diverged)):
        bad = _first_out(marks, EPOCHS, integer=True)
        if bad is not None:
            return f"{name} out of range ({shown(bad)})"
    bad = _first_out(c.saved, EPOCHS, integer=True)
    if bad is not None:
        return f"saved epoch out of range ({shown(bad)})"
    if c.best_epoch is not None and _out_int(c.best_epoch, EPOCHS):
        return f"best_epoch out of range ({shown(c.best_epoch)})"
    if c.best_metric is not None and _out(c.best_metric, METRIC_RANGE):
        return f"best_metric out of range ({shown(c.best_metric)})"
    if c.time_total is not None and _out(c.time_total, DURATIONS):
        return f"time_total out of range ({shown(c.time_total)})"
    if _out_int(c.rows, COUNT) or c.rows < n:
        return f"rows {shown(c.rows)} for {n} epochs"
    if _out_int(c.stride, COUNT) or c.stride < 1 or (c.stride > 1 and c.stride > c.rows):
        return f"stride {shown(c.stride)} for {shown(c.rows)} rows"
    if any(len(k) > KEY_MAX or len(v) > VALUE_MAX for k, v in c.config):
        return "a config key or value too long"
    texts = (c.best_metric_name, c.family, c.config_problem, c.problem)
    if any(t is not None and len(t) > CHART_TEXT_MAX for t in texts):
        return "a text too long"
    return None


def _series_fault(s: ChartSeries, n: int) -> str | None:
    name = shown(s.name, 40)
    if not 0 < len(s.name) <= MAX_NAME:
        return "a series name empty or too long"
    if len(s.values) != n:
        return f"series {name} has {len(s.values)} values for {n} epochs"
    bad = _first_out((v for v in s.values if v is not None), METRIC_RANGE)
    if bad is not None:
        return f"series {name} has a value out of range ({shown(bad)})"
    return None


METRIC_RANGE = Range(-FLOAT_MAX, FLOAT_MAX)  # finite (a series' None is a gap)


def _first_out(items, rng: Range, *, integer: bool = False):
    for x in items:
        if (_out_int(x, rng) if integer else _out(x, rng)) or isinstance(x, bool):
            return x
    return None


def _out_int(x, rng: Range) -> bool:
    return not isinstance(x, int) or isinstance(x, bool) or x not in rng
