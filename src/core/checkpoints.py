"""A run's checkpoints: which there are, in what order, how big, the epoch and metric each
holds, why one cannot be pushed, and where a push would put it.

The refresh builds the selected run's list (`CheckpointLister`, on the refresh thread),
the Snapshot carries it, and the push dialogs show it: the UI lists no folder and reads
no file. The epoch and metric come from the rows the run's MetricsReader has already
read (metrics.CheckpointRows); a push reads them the same way (`checkpoint_epoch_metric`),
so the dialog and the push record agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .hub_target import ARTIFACTS_REQUEST, PushTarget, push_target
from .metrics import CheckpointRows, MetricsReader
from .run_files import checkpoint_problem
from .runpath import outside_run

EPOCH_FILE_RE = re.compile(r"epoch_(\d+)\.pt")
MAX_LISTED = 500  # a weights folder with more .pt files lists best, last and the newest


@dataclass(frozen=True)
class Checkpoint:
    name: str  # "best.pt", "last.pt", "epoch_7.pt", any other *.pt in weights/
    path: str
    exists: bool  # it can be stat'ed (a dangling symlink cannot)
    size: int | None
    epoch: int | None
    metric_name: str | None  # "mAP50-95"
    metric: float | None
    problem: str | None  # why it cannot be pushed: outside the run, not a regular file
    target: PushTarget  # where a push puts it, or why it cannot


def resolve(run_dir: str, file: str) -> tuple[str, str]:
    """(name, path) of the checkpoint a push request names: a name in weights/, or a path."""
    if os.sep in file or (os.altsep and os.altsep in file):
        return os.path.basename(file), file
    return file, os.path.join(run_dir, "weights", file)


def order_key(name: str) -> tuple:
    """best.pt, last.pt, then epoch_N.pt by N, then any other name."""
    m = EPOCH_FILE_RE.fullmatch(name)
    rank = 0 if name == "best.pt" else 1 if name == "last.pt" else 2 if m else 3
    return (rank, int(m[1]) if m else 0, name)


def epoch_metric(name: str, rows: CheckpointRows) -> tuple[int | None, str | None, float | None]:
    """(epoch, metric name, metric) of checkpoint `name` by the metrics rows; Nones when
    unknown. best.pt: the last row with is_best (else the last row's best_epoch);
    last.pt: the last row; epoch_N.pt: N and the last row of epoch N."""
    m = EPOCH_FILE_RE.fullmatch(name)
    if name == "best.pt":
        if rows.best is not None:
            return rows.best
        if rows.last_best is not None and rows.last_best[0] is not None:
            return rows.last_best
        return None, None, None
    if m:
        want = int(m[1])
        got = rows.by_epoch.get(want)
        return (want, *got) if got is not None else (want, None, None)
    if name == "last.pt" and rows.last is not None:
        return rows.last
    return None, None, None


def metrics_inside(run_dir: str) -> bool:
    """metrics.jsonl is not a symlink out of the run (whose rows a push does not trust)."""
    return outside_run(run_dir, os.path.join(run_dir, "metrics.jsonl")) is None


def checkpoint_rows(run_dir: str) -> CheckpointRows:
    """The rows of the run's metrics.jsonl, read now (the push): what the refresh's
    MetricsReader holds, for a run nothing is watching."""
    if not metrics_inside(run_dir):
        return CheckpointRows()
    reader = MetricsReader(run_dir)
    reader.poll()
    return reader.checkpoint_rows if reader.source == "metrics.jsonl" else CheckpointRows()


def checkpoint_epoch_metric(run_dir: str, name: str) -> tuple[int | None, str | None, float | None]:
    """(epoch, metric name, metric) of checkpoint `name`, reading metrics.jsonl now."""
    return epoch_metric(name, checkpoint_rows(run_dir))


def default_checkpoint(checkpoints: Iterable[Checkpoint]) -> str:
    """What `p` pushes: best.pt, or last.pt when there is no best.pt."""
    there = {c.name for c in checkpoints if c.exists}
    return "last.pt" if "best.pt" not in there and "last.pt" in there else "best.pt"


class CheckpointLister:
    """One run's checkpoints, for the refresh of the selected run.

    weights/ is listed again only when its inode or mtime changes; each listed file is
    stat'ed on every call (libreyolo rewrites best.pt in place, and a new epoch_N.pt
    grows after it appears) and checked for pushing (inside the run, a regular file)
    again only when its stat or its link changes."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = os.path.abspath(run_dir)
        self.weights = os.path.join(self.run_dir, "weights")
        self._key: tuple | None = None
        self._names: tuple[str, ...] = ()
        self.not_listed = 0  # .pt files left out beyond MAX_LISTED
        self._problems: dict[str, tuple[tuple, str | None]] = {}

    def _list(self) -> None:
        try:
            st = os.stat(self.weights)
            key = (st.st_ino, st.st_mtime_ns)
        except OSError:
            key = None
        if key == self._key:
            return
        self._key = key
        try:
            names = [n for n in os.listdir(self.weights) if n.endswith(".pt")] if key else []
        except OSError:  # not a directory, unreadable
            names = []
        names.sort(key=order_key)
        if len(names) > MAX_LISTED:
            keep = [n for n in names[:2] if n in ("best.pt", "last.pt")]
            rest = [n for n in names if n not in keep]
            names = keep + rest[len(rest) - (MAX_LISTED - len(keep)) :]
            self.not_listed = len(rest) + len(keep) - len(names)
        else:
            self.not_listed = 0
        self._names = tuple(names)
        self._problems = {n: p for n, p in self._problems.items() if n in names}

    def _problem(self, name: str, path: str, st: os.stat_result) -> str | None:
        try:
            link = os.lstat(path)
            sig = (st.st_ino, st.st_dev, st.st_mode, link.st_ino, link.st_mtime_ns)
        except OSError:
            sig = (st.st_ino, st.st_dev, st.st_mode)
        cached = self._problems.get(name)
        if cached is not None and cached[0] == sig:
            return cached[1]
        problem = checkpoint_problem(self.run_dir, path, name)
        self._problems[name] = (sig, problem)
        return problem

    def checkpoints(self, rows: CheckpointRows, settings) -> tuple[Checkpoint, ...]:
        """The listed checkpoints, ordered (order_key), with what `rows` says of each."""
        self._list()
        out = []
        for name in self._names:
            path = os.path.join(self.weights, name)
            try:
                st = os.stat(path)
            except OSError:
                st = None
            epoch, metric_name, metric = epoch_metric(name, rows)
            out.append(
                Checkpoint(
                    name=name,
                    path=path,
                    exists=st is not None,
                    size=st.st_size if st is not None else None,
                    epoch=epoch,
                    metric_name=metric_name,
                    metric=metric,
                    problem=self._problem(name, path, st) if st is not None else None,
                    target=push_target(settings, self.run_dir, name),
                )
            )
        return tuple(out)


def artifacts_target(settings, run_dir: str) -> PushTarget:
    return push_target(settings, run_dir, ARTIFACTS_REQUEST)


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
        "hub_repo": c.target.repo or None,
        "hub_path": c.target.path,
        "hub_problem": c.target.problem,
    }
