"""Auto-push: what settings.auto_push asks to push now, and the app's side of it.

This acts (its requests go to the PushQueue), so it lives apart from the read path: the
Collector builds Snapshots and knows nothing of pushing. `auto_push_requests` is the
policy for one run; the app calls `AutoPusher` with each new Snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..base.values import int_or_none as _int
from ..base.values import parse_time
from ..model.snapshot import Snapshot
from ..picture.watch import RunsWatcher
from ..records.push_records import last_push, read_pushes
from ..run.checkpoints import file_epoch
from .push import PushRequest


@dataclass
class AutoPushState:
    """What auto_push_requests has seen of one run (keep one per run)."""

    primed: bool = False
    best_epoch: int | None = None
    best_file: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) of best.pt
    epochs: set[int] = field(default_factory=set)
    last_primed: bool = False
    last_file: tuple[int, int, int] | None = None  # of last.pt (auto_push_files "last")


def _record_time(record: dict | None) -> float:
    at = parse_time((record or {}).get("time"))  # ISO text within TIMES, as every record's
    return float("inf") if at is None else at  # unknown: do not push because of it


def _best_epoch(row: dict | None) -> int | None:
    if not row:
        return None
    best = _int(row.get("best_epoch"))
    if best is None and row.get("is_best") is True:
        best = _int(row.get("epoch"))
    return best


def _weights(run_dir: str) -> list[str]:
    try:
        return os.listdir(os.path.join(run_dir, "weights"))
    except OSError:
        return []


def auto_push_requests(
    run_dir: str,
    settings,
    last_row: dict | None,
    state: AutoPushState,
    weights: Iterable[str] | None = None,
    *,
    catch_up: bool = False,
) -> list[PushRequest]:
    """The pushes settings.auto_push asks for now, given the run's latest metrics row
    (MetricsReader.last_row) and its weights listing (read from disk when None).

    "best": best.pt each time it is rewritten (its inode, size or mtime changes) or the
    row's best_epoch changes. "period": each epoch_N.pt not seen before. With "last" in
    settings.auto_push_files, last.pt each time it is rewritten too (in either mode); with
    only "last" there, best.pt is not pushed by "best". The first call
    only notes what exists, unless a push record of this run shows it was pushed before
    (then what came since is pushed) or catch_up is True (then what has not been pushed
    yet is). Mutates `state`. A push of an unchanged file is skipped cheaply, so an
    extra request (a rewrite seen twice) costs a copy, not a commit."""
    mode = getattr(settings, "auto_push", "off")
    if mode not in ("best", "period"):
        return []
    files = getattr(settings, "auto_push_files", ("best",))
    out = _best_or_period(run_dir, mode, files, last_row, state, weights, catch_up)
    if "last" in files:
        out.extend(_last(run_dir, state, weights, catch_up))
    return out


def _last(run_dir: str, state: AutoPushState, weights, catch_up: bool) -> list[PushRequest]:
    """last.pt each time it is rewritten (every epoch): the weights a resume needs. The
    first call notes it, unless it changed since its last push record (or catch_up)."""
    if weights is not None and "last.pt" not in set(weights):
        return []
    try:
        st = os.stat(os.path.join(run_dir, "weights", "last.pt"))
    except OSError:
        return []
    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
    if not state.last_primed:
        state.last_primed, state.last_file = True, sig
        record = last_push(run_dir, "last.pt", ok_only=True)
        if record is None and not catch_up:
            return []
        newer = st.st_mtime > _record_time(record) + 1.0  # records keep whole seconds
        return [PushRequest(run_dir, "last.pt")] if record is None or newer else []
    changed, state.last_file = sig != state.last_file, sig
    return [PushRequest(run_dir, "last.pt")] if changed else []


def _best_or_period(
    run_dir: str, mode: str, files, last_row, state: AutoPushState, weights, catch_up: bool
) -> list[PushRequest]:
    if mode == "best" and "best" not in files:
        return []
    if mode == "best":
        if weights is not None and "best.pt" not in set(weights):
            return []
        try:
            st = os.stat(os.path.join(run_dir, "weights", "best.pt"))
        except OSError:
            return []
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        best = _best_epoch(last_row)
        if not state.primed:
            state.primed, state.best_epoch, state.best_file = True, best, sig
            record = last_push(run_dir, "best.pt", ok_only=True)
            if record is None and not catch_up:
                return []
            newer = st.st_mtime > _record_time(record) + 1.0  # records keep whole seconds
            if record is None or newer or (best is not None and record.get("epoch") != best):
                return [PushRequest(run_dir, "best.pt")]
            return []
        changed = sig != state.best_file or (best is not None and best != state.best_epoch)
        state.best_file = sig
        if best is not None:
            state.best_epoch = best
        return [PushRequest(run_dir, "best.pt")] if changed else []
    names = set(_weights(run_dir) if weights is None else weights)
    epochs = sorted(e for n in names if (e := file_epoch(n)) is not None)
    if not state.primed:
        state.primed = True
        pushed = [
            e
            for r in read_pushes(run_dir)
            if r.get("outcome") == "ok"
            and isinstance(r.get("file"), str)
            and (e := file_epoch(r["file"])) is not None
        ]
        if catch_up:
            state.epochs = set(pushed)
        elif pushed:
            state.epochs = {e for e in epochs if e <= max(pushed)}
        else:
            state.epochs = set(epochs)
    new = [e for e in epochs if e not in state.epochs]
    state.epochs.update(new)
    return [PushRequest(run_dir, f"epoch_{e}.pt") for e in new]


class AutoPusher:
    """Keeps what auto-push has seen of each run (one AutoPushState per run)."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self._state: dict[str, AutoPushState] = {}

    def requests(self, snap: Snapshot, runs: RunsWatcher) -> list[PushRequest]:
        """What settings.auto_push asks to push now, for every running run."""
        out: list[PushRequest] = []
        for run in snap.runs:
            if run.state != "running":
                continue
            watcher = runs.watcher(run.run_dir)
            if watcher is None:
                continue
            state = self._state.setdefault(run.run_dir, AutoPushState())
            out.extend(
                auto_push_requests(run.run_dir, self.settings, watcher.metrics.last_row, state)
            )
        return out
