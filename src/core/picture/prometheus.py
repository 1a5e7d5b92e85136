"""The Snapshot as Prometheus metric families (`rgpu-tui exporter`): the metric contract.

`METRICS` is the contract: every name, its labels and its help, in the order served. The
names and labels are an interface (alert rules and dashboards are written against them,
docs/exporter.md lists them, tests hold the three together); a change to one is a breaking
change. `families()` turns one Snapshot into plain data (name, labels, samples); the
command (cli.exporter) hands them to prometheus_client, which escapes label values for the
text format. Nothing here imports prometheus_client.

- What is unknown is absent, never 0: a run without an ETA has no `rgpu_run_eta_seconds`,
  a lost GPU no utilisation, a machine without a price no money.
- A run's time and money are core.picture.cost.run_spent's, as every other view's.
- A run's label is its path relative to the root (the name the runs list shows; a launch
  still waiting for its status.json is "NAME (launch)"), made printable
  (core.base.text.printable). Two runs whose printable names collide get " #2", " #3" in
  the order of the Snapshot, so no two series of a family ever share their labels (a
  scrape with a duplicate series is thrown away whole).
- `rgpu_run_weights_unpushed` is given by the caller: core.records.push_records
  .UnpushedWeights, which reads the push records and the weights on disk (see there for
  what "confirmed" means).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..base.text import printable
from ..model.snapshot import RunInfo, Snapshot
from .cost import run_spent
from .idle import machine_idle

MIB = 1024 * 1024
KNOWN_STATES = ("running", "stalled", "starting", "completed", "failed", "stopped", "dead")


@dataclass(frozen=True)
class Metric:
    name: str
    labels: tuple[str, ...]
    help: str


def _m(name: str, labels: str, help_text: str) -> Metric:
    return Metric(name, tuple(labels.split()), help_text)


# The contract, in the order served (all gauges).
METRICS: tuple[Metric, ...] = (
    _m("rgpu_run_info", "run state model task", "A run, always 1; its state, model and task."),
    _m("rgpu_run_completed_epochs", "run", "Epochs the run has completed."),
    _m("rgpu_run_planned_epochs", "run", "Epochs the run will train in all."),
    _m("rgpu_run_progress_ratio", "run", "Completed epochs / planned epochs, 0 to 1."),
    _m("rgpu_run_eta_seconds", "run", "Seconds until a running run finishes, by its epoch time."),
    _m(
        "rgpu_run_eta_overdue_seconds",
        "run",
        "How late a running run's last epoch is past its estimate (then it has no ETA).",
    ),
    _m("rgpu_run_epoch_seconds", "run", "The run's mean seconds per epoch."),
    _m(
        "rgpu_run_elapsed_seconds",
        "run",
        "The run's time: every attempt's (launch and resumes), as every view gives it.",
    ),
    _m("rgpu_run_spent_dollars", "run", "The run's time at the machine's price per hour."),
    _m("rgpu_run_best_metric", "run metric", "The run's best validation metric so far."),
    _m("rgpu_run_dead", "run", "1 when status.json says running and the process is gone."),
    _m(
        "rgpu_run_weights_unpushed",
        "run",
        "1 when the run's newest weights (best.pt, else last.pt) are not confirmed on the Hub "
        "by its push records.",
    ),
    _m(
        "rgpu_run_last_update_timestamp_seconds",
        "run",
        "When status.json was last updated (its updated_at), Unix seconds.",
    ),
    _m("rgpu_gpu_utilization_ratio", "gpu uuid", "GPU utilisation, 0 to 1."),
    _m("rgpu_gpu_memory_used_bytes", "gpu", "GPU memory used."),
    _m("rgpu_gpu_memory_total_bytes", "gpu", "GPU memory in all."),
    _m("rgpu_gpu_temperature_celsius", "gpu", "GPU temperature."),
    _m("rgpu_gpu_power_watts", "gpu", "GPU power draw."),
    _m("rgpu_gpu_run", "gpu run", "1 for each GPU a run's processes use."),
    _m(
        "rgpu_gpu_source_info",
        "source",
        'Where the GPU figures come from, always 1: "nvml", "fake" (simulated, --fake-gpus) '
        'or "replay" (a recording, --gpu-replay).',
    ),
    _m("rgpu_machine_price_dollars_per_hour", "", "The machine's price per hour (settings)."),
    _m(
        "rgpu_machine_spent_dollars",
        "",
        "What the machine has cost since billing started (hours x price).",
    ),
    _m(
        "rgpu_machine_idle_seconds",
        "",
        "How long the machine has been idle, in its current idle stretch (0 when busy).",
    ),
    _m("rgpu_machine_idle_dollars", "", "What the current idle stretch has cost (0 when busy)."),
    _m("rgpu_disk_free_bytes", "", "Free space on the disk that holds the runs root."),
    _m(
        "rgpu_exporter_snapshot_timestamp_seconds",
        "",
        "When the Snapshot served was built, Unix seconds (a stuck refresh shows as its age).",
    ),
)
BY_NAME = {m.name: m for m in METRICS}


@dataclass
class Family:
    metric: Metric
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def add(self, labels: tuple[str, ...], value) -> None:
        """A sample, unless the value is unknown (None, NaN, an infinity)."""
        if value is None:
            return
        value = float(value)
        if math.isfinite(value):
            self.samples.append((labels, value))


def run_labels(snap: Snapshot) -> dict[str, str]:
    """run_dir -> its `run` label: the name relative to the root, printable, unique."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for r in snap.runs:
        base = printable(r.name)
        label, n = base, 1
        while label in taken:
            n += 1
            label = f"{base} #{n}"
        taken.add(label)
        out[r.run_dir] = label
    return out


def families(
    snap: Snapshot, unpushed: Callable[[RunInfo], bool | None] | Mapping[str, bool | None]
) -> list[Family]:
    """Every family of METRICS for this Snapshot, in METRICS' order (a family with no
    sample is kept: it has no series). `unpushed`: a run's weights verdict, by RunInfo or
    a mapping of run_dir (None: it has no weights, the metric is absent)."""
    fam = {m.name: Family(m) for m in METRICS}
    verdict = unpushed if callable(unpushed) else (lambda r: unpushed.get(r.run_dir))
    labels = run_labels(snap)
    price = snap.cost.price_per_hour if snap.cost is not None else None
    for r in snap.runs:
        _run(fam, r, labels[r.run_dir], verdict(r), price)
    _gpus(fam, snap, labels)
    _machine(fam, snap)
    fam["rgpu_exporter_snapshot_timestamp_seconds"].add((), snap.generated_at)
    return list(fam.values())


def _run(
    fam: dict[str, Family], r: RunInfo, run: str, unpushed: bool | None, price: float | None
) -> None:
    fam["rgpu_run_info"].add((run, r.state, printable(r.model), printable(r.task)), 1)
    fam["rgpu_run_completed_epochs"].add((run,), r.completed_epochs)
    fam["rgpu_run_planned_epochs"].add((run,), r.total_epochs)
    fam["rgpu_run_progress_ratio"].add((run,), r.progress)
    fam["rgpu_run_eta_seconds"].add((run,), r.eta_seconds)
    fam["rgpu_run_eta_overdue_seconds"].add((run,), r.eta_overdue_seconds)
    fam["rgpu_run_epoch_seconds"].add((run,), r.mean_epoch_seconds)
    seconds, dollars = run_spent(r, price)
    fam["rgpu_run_elapsed_seconds"].add((run,), seconds)
    fam["rgpu_run_spent_dollars"].add((run,), dollars)
    fam["rgpu_run_best_metric"].add((run, printable(r.best_metric_name)), r.best_metric)
    if r.state in KNOWN_STATES:  # "unknown": nothing readable, so whether it died is unknown
        fam["rgpu_run_dead"].add((run,), 1 if r.state == "dead" else 0)
    if unpushed is not None:
        fam["rgpu_run_weights_unpushed"].add((run,), 1 if unpushed else 0)
    fam["rgpu_run_last_update_timestamp_seconds"].add((run,), r.updated)


def _gpus(fam: dict[str, Family], snap: Snapshot, labels: dict[str, str]) -> None:
    g = snap.gpus
    if g is None:
        return
    fam["rgpu_gpu_source_info"].add((printable(g.source),), 1)
    for d in g.devices:
        gpu = str(d.index)
        util = d.util_percent / 100 if d.util_percent is not None else None
        fam["rgpu_gpu_utilization_ratio"].add((gpu, printable(d.uuid)), util)
        fam["rgpu_gpu_memory_used_bytes"].add((gpu,), _bytes(d.mem_used_mib))
        fam["rgpu_gpu_memory_total_bytes"].add((gpu,), _bytes(d.mem_total_mib))
        fam["rgpu_gpu_temperature_celsius"].add((gpu,), d.temperature_c)
        fam["rgpu_gpu_power_watts"].add((gpu,), d.power_w)
        for run_dir in sorted(set(d.runs)):
            run = labels.get(run_dir) or printable(os.path.relpath(run_dir, snap.root))
            fam["rgpu_gpu_run"].add((gpu, run), 1)


def _bytes(mib: float | None) -> float | None:
    return mib * MIB if mib is not None else None


def _machine(fam: dict[str, Family], snap: Snapshot) -> None:
    c = snap.cost
    if c is not None:
        fam["rgpu_machine_price_dollars_per_hour"].add((), c.price_per_hour)
        fam["rgpu_machine_spent_dollars"].add((), c.spent)
        idle_s, idle_dollars = c.idle_now_seconds, c.idle_now_spent
        if idle_s is None and not machine_idle(snap.runs, snap.gpus):
            idle_s = 0.0  # busy: known not idle
            idle_dollars = 0.0 if c.price_per_hour is not None else None
        fam["rgpu_machine_idle_seconds"].add((), idle_s)
        fam["rgpu_machine_idle_dollars"].add((), idle_dollars)
    if snap.system is not None and snap.system.disk is not None:
        fam["rgpu_disk_free_bytes"].add((), snap.system.disk.free_bytes)
