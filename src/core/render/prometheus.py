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
from ..machine.gpu_health import CLOCK_EVENT_NAMES
from ..model.snapshot import RunInfo, Snapshot
from ..picture.cost import run_spent
from ..picture.idle import machine_idle

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
    # GPU health (core.machine.gpu_health): what explains a slow epoch
    _m(
        "rgpu_gpu_clock_event_active",
        "gpu reason",
        "1 while NVML's clock-event (throttle) reason is active, else 0: gpu_idle, "
        "applications_clocks, sw_power_cap, hw_slowdown, sync_boost, sw_thermal, hw_thermal, "
        "hw_power_brake, display_clocks.",
    ),
    _m("rgpu_gpu_clock_hertz", "gpu clock", 'The current clock; clock is "sm" or "memory".'),
    _m("rgpu_gpu_clock_max_hertz", "gpu clock", 'The maximum clock; clock is "sm" or "memory".'),
    _m("rgpu_gpu_pcie_link_generation", "gpu", "The PCIe link's current generation."),
    _m("rgpu_gpu_pcie_link_generation_max", "gpu", "The PCIe link's maximum generation."),
    _m("rgpu_gpu_pcie_link_width", "gpu", "The PCIe link's current width (lanes)."),
    _m("rgpu_gpu_pcie_link_width_max", "gpu", "The PCIe link's maximum width (lanes)."),
    _m(
        "rgpu_gpu_pcie_throughput_bytes_per_second",
        "gpu direction",
        'PCIe throughput; direction is "tx" or "rx" (NVML\'s 20 ms sample).',
    ),
    _m(
        "rgpu_gpu_ecc_errors",
        "gpu type",
        'ECC errors since the driver loaded (volatile); type is "corrected" or "uncorrected".',
    ),
    _m("rgpu_gpu_retired_pages", "gpu", "Memory pages retired (both causes)."),
    _m("rgpu_gpu_remapped_rows", "gpu", "Memory rows remapped (corrected and uncorrected)."),
    _m("rgpu_gpu_remap_pending", "gpu", "1 when a row remap or page retirement waits for a reset."),
    _m("rgpu_gpu_xid_errors", "gpu", "XID errors seen (NVML events) since the exporter started."),
    _m("rgpu_gpu_fan_ratio", "gpu", "Fan speed, 0 to 1 of its maximum."),
    _m("rgpu_gpu_pstate", "gpu", "The performance state: 0 (P0, the fastest) to 15."),
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
        _health(fam, d, gpu)


def _health(fam: dict[str, Family], d, gpu: str) -> None:
    """The health families of one GPU; what NVML did not give is absent."""
    if d.clock_events is not None:
        for reason in CLOCK_EVENT_NAMES:
            fam["rgpu_gpu_clock_event_active"].add((gpu, reason), reason in d.clock_events)
    for clock, now, most in (
        ("sm", d.sm_clock_mhz, d.sm_clock_max_mhz),
        ("memory", d.mem_clock_mhz, d.mem_clock_max_mhz),
    ):
        fam["rgpu_gpu_clock_hertz"].add((gpu, clock), _hertz(now))
        fam["rgpu_gpu_clock_max_hertz"].add((gpu, clock), _hertz(most))
    fam["rgpu_gpu_pcie_link_generation"].add((gpu,), d.pcie_gen)
    fam["rgpu_gpu_pcie_link_generation_max"].add((gpu,), d.pcie_gen_max)
    fam["rgpu_gpu_pcie_link_width"].add((gpu,), d.pcie_width)
    fam["rgpu_gpu_pcie_link_width_max"].add((gpu,), d.pcie_width_max)
    for direction, kbs in (("tx", d.pcie_tx_kbs), ("rx", d.pcie_rx_kbs)):
        value = kbs * 1024 if kbs is not None else None
        fam["rgpu_gpu_pcie_throughput_bytes_per_second"].add((gpu, direction), value)
    fam["rgpu_gpu_ecc_errors"].add((gpu, "corrected"), d.ecc_corrected)
    fam["rgpu_gpu_ecc_errors"].add((gpu, "uncorrected"), d.ecc_uncorrected)
    fam["rgpu_gpu_retired_pages"].add((gpu,), d.retired_pages)
    fam["rgpu_gpu_remapped_rows"].add((gpu,), d.remapped_rows)
    fam["rgpu_gpu_remap_pending"].add((gpu,), d.remap_pending)
    fam["rgpu_gpu_xid_errors"].add((gpu,), d.xid_count)
    fan = d.fan_percent / 100 if d.fan_percent is not None else None
    fam["rgpu_gpu_fan_ratio"].add((gpu,), fan)
    pstate = d.pstate[1:] if d.pstate and d.pstate[1:].isdigit() else None
    fam["rgpu_gpu_pstate"].add((gpu,), int(pstate) if pstate is not None else None)


def _hertz(mhz: float | None) -> float | None:
    return mhz * 1e6 if mhz is not None else None


def _bytes(mib: float | None) -> float | None:
    return mib * MIB if mib is not None else None


def _machine(fam: dict[str, Family], snap: Snapshot) -> None:
    c = snap.cost
    if c is not None:
        fam["rgpu_machine_price_dollars_per_hour"].add((), c.price_per_hour)
        fam["rgpu_machine_spent_dollars"].add((), c.spent)
        idle_s, idle_dollars = c.idle_now_seconds, c.idle_now_spent
        if idle_s is None and (snap.setup or not machine_idle(snap.runs, snap.gpus)):
            idle_s = 0.0  # busy: known not idle
            idle_dollars = 0.0 if c.price_per_hour is not None else None
        fam["rgpu_machine_idle_seconds"].add((), idle_s)
        fam["rgpu_machine_idle_dollars"].add((), idle_dollars)
    if snap.system is not None and snap.system.disk is not None:
        fam["rgpu_disk_free_bytes"].add((), snap.system.disk.free_bytes)
