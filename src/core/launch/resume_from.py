"""Which checkpoint a resume starts from: the newest complete one, or the one asked for.

A run killed while libreyolo saved a checkpoint has a torn last.pt (0 bytes, or a zip cut
short) beside complete epoch_N.pt and best.pt files (libreyolo 1.6.0 writes last.pt, then
best.pt on an improvement, then epoch_N.pt every save_period epochs, each the same training
state). The candidates are weights/last.pt, weights/best.pt and the newest MAX_EPOCH_FILES
epoch_N.pt; each is checked by core.run.torch_checkpoint (complete or torn) and read for
the epoch it holds: from the checkpoint (libreyolo's 0-based `epoch`, + 1), else the N of
epoch_N.pt, else unknown (then it ranks by its modification time). The default is the
newest valid one by epoch; at the same epoch last.pt, then epoch_N.pt, then best.pt.

`resume=True` with `model=RUN/weights/X.pt` (any .pt in the run's weights/) continues RUN
from the epoch after X's: libreyolo (models/base/model.py `_resume_train_args`) takes the
run directory from the checkpoint's path, with exist_ok. A checkpoint elsewhere (`--from
PATH`) is given with `project=` and `name=` of the run and `exist_ok=True`, so it continues
the same directory too. libreyolo rewrites last.pt at the first epoch it saves, and best.pt
and epoch_N.pt later: a torn candidate is kept aside (renamed `<name>.torn-<time>`, never
deleted) when the resume starts, so nothing is lost and nothing torn is pushed or offered.

Reads only (the renames are core.launch.resume's, when it starts the resume).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from ..base.formatting import fmt_bytes
from ..base.invocation import command
from ..run.checkpoints import file_epoch
from ..run.runpath import outside_run
from ..run.torch_checkpoint import check_checkpoint

MAX_EPOCH_FILES = 8  # the newest epoch_N.pt files offered (each is read: ~35 ms for yolo9-t)
_RANK = {"last.pt": 0, "best.pt": 2}  # at the same epoch: last.pt, epoch_N.pt, best.pt
_NAMED = re.compile(r"(best|last|epoch_\d+)(\.pt)?")


class ResumeFromError(ValueError):
    """No checkpoint to resume from, or the one asked for cannot be; one line."""


@dataclass(frozen=True)
class ResumeCandidate:
    """One checkpoint a resume may start from."""

    name: str  # last.pt, best.pt, epoch_20.pt, or the file name of a path given
    path: str
    size: int | None
    epoch: int | None  # the epochs done it holds
    epoch_from: str | None  # "checkpoint", "file name", None (unknown: ranked by mtime)
    mtime: float | None
    problem: str | None  # why it cannot be resumed from (torn, outside the run, ...)
    torn: bool = False  # a regular file that is no complete checkpoint: kept aside on resume

    @property
    def valid(self) -> bool:
        return self.problem is None

    def describe(self) -> str:
        """ "epoch 20, 35.1 MB" / "0 B, INVALID: last.pt is empty ..." for the dialog."""
        size = fmt_bytes(self.size)
        if self.problem is not None:
            return f"{size}, INVALID: {self.problem}"
        if self.epoch is None:
            return f"epoch unknown, {size}"
        return f"epoch {self.epoch}, {size}"


def _candidate(run_dir: str | None, name: str, path: str, total: int | None) -> ResumeCandidate:
    try:
        st = os.stat(path)
        size, mtime = st.st_size, st.st_mtime
    except OSError:
        size = mtime = None
    where = outside_run(run_dir, path) if run_dir is not None and size is not None else None
    if where is not None:
        return ResumeCandidate(
            name, path, size, None, None, mtime, f"{name} resolves to {where}, outside the run"
        )
    got = check_checkpoint(path, name, epoch=True)
    epoch, source = got.epoch, "checkpoint" if got.epoch is not None else None
    named = file_epoch(name)
    if epoch is None and named is not None:
        epoch, source = named, "file name"
    problem = got.problem
    total = total if total is not None else got.total_epochs
    if problem is None and epoch is not None and total is not None and epoch >= total:
        problem = f"{name} holds all {total} epochs: nothing left to train from it"
    torn = got.problem is not None and size is not None and os.path.isfile(path)
    return ResumeCandidate(name, path, size, epoch, source, mtime, problem, torn)


def list_candidates(run_dir: str, total: int | None = None) -> tuple[ResumeCandidate, ...]:
    """The run's checkpoints a resume may start from, the default first (see the module
    doc); invalid ones last. `total`: the run's epochs (a checkpoint holding all of them
    has nothing left to resume)."""
    weights = os.path.join(run_dir, "weights")
    try:
        names = [n for n in os.listdir(weights) if n.endswith(".pt")]
    except OSError:
        names = []
    epochs = sorted((n for n in names if file_epoch(n) is not None), key=file_epoch)
    chosen = [n for n in ("last.pt", "best.pt") if n in names] + epochs[-MAX_EPOCH_FILES:]
    found = [_candidate(run_dir, n, os.path.join(weights, n), total) for n in chosen]
    return tuple(sorted(found, key=_order))


def _order(c: ResumeCandidate) -> tuple:
    """Valid first; then the newest epoch (unknown last, by mtime); last.pt, epoch_N.pt,
    best.pt at the same epoch."""
    return (
        not c.valid,
        -(c.epoch if c.epoch is not None else -1),
        _RANK.get(c.name, 1),
        -(c.mtime or 0.0),
    )


def pick(
    run_dir: str, candidates: tuple[ResumeCandidate, ...], choice: str | None
) -> ResumeCandidate:
    """The candidate to resume from: the first (newest valid) when `choice` is None, else
    the one `choice` names: best | last | epoch_N (with or without .pt) | a path to a .pt.
    Raises ResumeFromError (one line) when there is none or it cannot be resumed from."""
    name = os.path.basename(run_dir) or run_dir
    if choice is None:
        if not candidates:
            raise ResumeFromError(
                f"{name}: no checkpoint in weights/ (last.pt, epoch_N.pt, best.pt): nothing to "
                f"resume from (libreyolo writes last.pt after each epoch; `{command()} pull` "
                "brings a pushed one back)"
            )
        if not candidates[0].valid:
            why = "; ".join(c.problem for c in candidates if c.problem)
            raise ResumeFromError(f"{name}: no complete checkpoint to resume from: {why}")
        return candidates[0]
    choice = choice.strip()
    m = _NAMED.fullmatch(choice)
    if m:
        wanted = m[1] + ".pt"
        for c in candidates:
            if c.name == wanted:
                break
        else:
            path = os.path.join(run_dir, "weights", wanted)
            if not os.path.lexists(path):
                raise ResumeFromError(f"{name}: no weights/{wanted} to resume from")
            c = _candidate(run_dir, wanted, path, None)  # an older epoch_N.pt, not listed
    else:
        path = os.path.abspath(os.path.expanduser(choice))
        if not path.endswith(".pt"):
            raise ResumeFromError(
                f"--from {choice!r}: give best, last, epoch_N or the path of a .pt checkpoint"
            )
        if not os.path.lexists(path):
            raise ResumeFromError(f"--from: {path} does not exist")
        inside = os.path.dirname(path) == os.path.join(run_dir, "weights")
        c = _candidate(run_dir if inside else None, os.path.basename(path), path, None)
    if c.problem is not None:
        raise ResumeFromError(f"{name}: not resumed from {c.name}: {c.problem}")
    return c


def in_weights(run_dir: str, path: str) -> bool:
    """Is `path` directly in the run's weights/ (libreyolo then keeps writing into the run)?"""
    return os.path.dirname(os.path.abspath(path)) == os.path.join(run_dir, "weights")


def set_aside_name(path: str, now: float | None = None) -> str:
    """`<path>.torn-<YYYYmmdd-HHMMSS>` (a free name: `-2`, `-3`... when taken)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    base = f"{path}.torn-{stamp}"
    out, n = base, 1
    while os.path.lexists(out):
        n += 1
        out = f"{base}-{n}"
    return out
