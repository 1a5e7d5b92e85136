"""The Snapshot as JSON (`rgpu-tui snapshot --json`, `rgpu-tui cost --json`).

Raw strings (json escapes them), NaN and infinities as null, times as ISO 8601 text.
core.model.snapshot_from_json, beside it, reads it back (a remote host's Snapshot, in the
fleet view): the codec in both directions, next to the dataclasses (core.model.snapshot).
"""

from __future__ import annotations

import math
from dataclasses import asdict

from ..base.formatting import iso
from .snapshot import (
    Attempt,
    AutostopPlan,
    Checkpoint,
    CostView,
    GpuView,
    RunChart,
    RunInfo,
    Snapshot,
    SystemView,
)

LOG_TAIL_LEN = 50


def _clean(value):
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def checkpoint_to_json(c: Checkpoint) -> dict:
    return {
        "name": c.name,
        "path": c.path,
        "exists": c.exists,
        "size": c.size,
        "epoch": c.epoch,
        "metric_name": c.metric_name,
        "metric": c.metric,
        "problem": c.problem,
        "valid": c.valid,
        "invalid": c.invalid,
        "hub_repo": c.target.repo or None,
        "hub_path": c.target.path,
        "hub_problem": c.target.problem,
    }


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
            "completed_epochs": r.completed_epochs,
            "total_epochs": r.total_epochs,
            "progress": r.progress,
            "eta_seconds": r.eta_seconds,
            "eta_overdue_seconds": r.eta_overdue_seconds,
            "elapsed_seconds": r.elapsed_seconds,
            "mean_epoch_seconds": r.mean_epoch_seconds,
            "best_metric": r.best_metric,
            "best_metric_name": r.best_metric_name,
            "best_epoch": r.best_epoch,
            "updated_at": r.updated_at,
            "error": r.error,
            "model": r.model,
            "task": r.task,
            "problem": r.problem,
            "gpu_indices": list(r.gpu_indices),
            "attempts": [attempt_to_json(a) for a in r.attempts],
            "epochs_trained": sum(a.epochs or 0 for a in r.attempts) if r.attempts else None,
        }
    )


def attempt_to_json(a: Attempt) -> dict:
    """One attempt; its times as ISO text (None when not known)."""
    return {
        "started_at": iso(a.started_at) if a.started_at is not None else None,
        "ended_at": iso(a.ended_at) if a.ended_at is not None else None,
        "epochs": a.epochs,
        "ended": a.ended,
        "seconds": a.seconds,
        "known_by": a.known_by,
    }


def gpus_to_json(g: GpuView, now: float | None = None) -> dict:
    """`idle_since`: `now` less the idle seconds the idle clock counted (a gap in sampling
    counts at most core.picture.idle.GAP_CAP_S), so it agrees with the screen and the cost."""
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
    for key in ("billing_started_at", "balance_runs_out_at", "price_read_at"):
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
                        "last_epoch": c.last_epoch,
                        "min_epoch": c.min_epoch,
                        "max_epoch": c.max_epoch,
                    }
                    for c in m.series
                },
                "rows": m.rows,
                "malformed_lines": m.malformed_lines,
                "problem": m.problem,
                "non_finite_values": m.non_finite_values,
            },
            "log_path": s.selected.log.path,
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
            "autostop": autostop_to_json(s.autostop) if s.autostop is not None else None,
            "charts": [chart_to_json(c) for c in s.charts],
            "setup": [
                {**asdict(p), "started_at": iso(p.started_at) if p.started_at else None}
                for p in s.setup
            ],
        }
    )


def chart_to_json(c: RunChart) -> dict:
    """A RunChart as the chart view gets it (core.model.snapshot_from_json reads it back):
    every field by name; `series` a list of {"name", "values"}; `config` [key, text] pairs."""
    out = asdict(c)
    out["config"] = [list(pair) for pair in c.config]
    return _clean(out)


def autostop_to_json(a: AutostopPlan) -> dict:
    return {
        "phase": a.phase,
        "message": a.message,
        "fires_at": iso(a.fires_at) if a.fires_at is not None else None,
    }
