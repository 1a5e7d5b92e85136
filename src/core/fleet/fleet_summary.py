"""One line of the fleet's hosts table, and its totals, from each host's state (a
core.fleet.fleet.HostState) and its Snapshot (core.fleet.host_ranges.host_snapshot): the screen's
table and `rgpu-tui fleet --once` print these same rows.

Only what the host's snapshot says: a number it does not give is None here, and the
table shows it as unknown. The totals add up what is known and say how many hosts
did not give a figure (a host without a price is not $0/h).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.snapshot import AutostopPlan, Snapshot
from ..model.snapshot_from_json import SnapshotJsonError
from .host_ranges import host_snapshot

STATE_ORDER = (
    "running",
    "stalled",
    "starting",
    "dead",
    "failed",
    "stopped",
    "completed",
    "unknown",
)


def gpu_source_label(source: object) -> str:
    """What a host's GPUs are when they are not the machine's own: "sim" (--fake-gpus),
    "replay" (--gpu-replay), else ""."""
    return {"fake": "sim", "replay": "replay"}.get(source, "") if isinstance(source, str) else ""


@dataclass(frozen=True)
class HostSummary:
    name: str
    reachable: bool
    connecting: bool  # the first try has not ended yet
    error: str | None  # why it is not reachable (one line), or why its snapshot is unreadable
    down_since: float | None  # wall clock: unreachable since then
    gpus: int | None  # None: no GPUs known (NVML unavailable, no snapshot)
    gpu_util: float | None  # the mean utilisation of the GPUs that report it
    runs: tuple[tuple[str, int], ...]  # (state, count), in STATE_ORDER then by name
    newest: str | None  # the newest run's name (the runs list's first)
    newest_state: str | None
    best: float | None  # its best metric
    best_name: str | None
    eta_seconds: float | None  # its ETA (a running run)
    price_per_hour: float | None
    spent: float | None
    idle: bool  # every GPU under 5% and no running run
    idle_spent: float | None  # what the current idle stretch has cost
    autostop: AutostopPlan | None = None  # what the host's `rgpu-tui watch` plans, if any
    # where its GPU numbers come from: "nvml", "fake" (simulated: invented numbers) or
    # "replay" (a recording); None without GPUs
    gpu_source: str | None = None
    eta_overdue_seconds: float | None = None  # its last epoch is this late (no ETA then)

    @property
    def gpu_label(self) -> str:
        return gpu_source_label(self.gpu_source)


def read_snapshot(doc) -> tuple[Snapshot | None, str | None]:
    """A host's snapshot document as dataclasses, its numbers held to the local ranges
    (core.fleet.host_ranges.host_snapshot); or None and why it is unreadable (one line)."""
    if doc is None:
        return None, None
    try:
        return host_snapshot(doc), None
    except SnapshotJsonError as exc:
        return None, f"its snapshot is unreadable: {exc}"
    except Exception as exc:  # a bug here must not take the fleet down
        return None, f"its snapshot is unreadable: {type(exc).__name__}: {exc}"


def summarize(state, snap: Snapshot | None, error: str | None = None) -> HostSummary:
    """`state`: the host's core.fleet.fleet.HostState; `snap`: its snapshot as dataclasses
    (kept while the host is unreachable: the table shows its last known runs greyed);
    `error`: why the snapshot could not be read."""
    gpus = util = source = None
    counts: dict[str, int] = {}
    newest = newest_state = best = best_name = eta = overdue = None
    price = spent = idle_spent = autostop = None
    idle = False
    if snap is not None:
        g = snap.gpus
        if g is not None and g.available:
            gpus = len(g.devices)
            source = g.source
            utils = [d.util_percent for d in g.devices if d.util_percent is not None]
            util = sum(utils) / len(utils) if utils else None
            idle = g.idle
        for r in snap.runs:
            counts[r.state] = counts.get(r.state, 0) + 1
        if snap.runs:
            r = snap.runs[0]
            newest, newest_state = r.name, r.state
            best, best_name = r.best_metric, r.best_metric_name
            if r.state in ("running", "stalled"):
                eta, overdue = r.eta_seconds, r.eta_overdue_seconds
        autostop = snap.autostop  # the host's watcher's plan; never made up here
        c = snap.cost
        if c is not None and c.configured:
            price, spent = c.price_per_hour, c.spent
            idle_spent = c.idle_now_spent if idle else None
    order = [s for s in STATE_ORDER if s in counts] + sorted(set(counts) - set(STATE_ORDER))
    return HostSummary(
        name=state.name,
        reachable=state.reachable,
        connecting=not state.settled and not state.reachable,
        error=state.error if not state.reachable else error,
        down_since=state.since if not state.reachable else None,
        gpus=gpus,
        gpu_util=util,
        runs=tuple((s, counts[s]) for s in order),
        newest=newest,
        newest_state=newest_state,
        best=best,
        best_name=best_name,
        eta_seconds=eta,
        price_per_hour=price,
        spent=spent,
        idle=idle,
        idle_spent=idle_spent,
        autostop=autostop,
        gpu_source=source,
        eta_overdue_seconds=overdue,
    )


@dataclass(frozen=True)
class FleetTotals:
    machines: int
    reachable: int
    gpus: int
    per_hour: float  # the known prices of the reachable hosts
    unpriced: int  # reachable hosts without a price
    idle: int  # reachable hosts idling now
    idle_per_hour: float  # the known prices of those
    idle_unpriced: int  # idling hosts without a price
    simulated: int = 0  # of `gpus`: simulated ones (--fake-gpus)
    replayed: int = 0  # of `gpus`: replayed from a recording (--gpu-replay)


def totals(hosts: list[HostSummary]) -> FleetTotals:
    up = [h for h in hosts if h.reachable]
    idle = [h for h in up if h.idle]
    return FleetTotals(
        machines=len(hosts),
        reachable=len(up),
        gpus=sum(h.gpus or 0 for h in up),
        per_hour=sum(h.price_per_hour or 0.0 for h in up),
        unpriced=sum(1 for h in up if h.price_per_hour is None),
        idle=len(idle),
        idle_per_hour=sum(h.price_per_hour or 0.0 for h in idle),
        idle_unpriced=sum(1 for h in idle if h.price_per_hour is None),
        simulated=sum(h.gpus or 0 for h in up if h.gpu_source == "fake"),
        replayed=sum(h.gpus or 0 for h in up if h.gpu_source == "replay"),
    )
