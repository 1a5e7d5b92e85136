"""A run's checkpoints: which there are, in what order, how big, the epoch and metric each
holds, whether each is a complete torch checkpoint, why one cannot be pushed, and where a
push would put it.

The refresh builds the selected run's list (`CheckpointLister`, on the refresh thread),
the Snapshot carries it, and the push dialogs show it: the UI lists no folder and reads
no file. The epoch and metric come from the rows the run's MetricsReader has already
read (metrics.CheckpointRows); a push reads them the same way (`checkpoint_epoch_metric`),
so the dialog and the push record agree. Whether a file is complete is
core.run.torch_checkpoint's check (its zip directory, 10-40 ms for a small model's
checkpoint), made again only when the file's stat changes, for at most CHECKS_PER_CALL files
a call (best.pt, last.pt, then the newest epoch_N.pt first), never on a file changed less
than WRITING_S ago (libreyolo may be writing it: not torn, just not finished).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from ..base.formatting import fmt_bytes, fmt_number
from ..base.values import EPOCHS
from ..model.snapshot import Checkpoint, PushTarget
from .hub_target import ARTIFACTS_REQUEST, push_target
from .metrics import CheckpointRows, MetricsReader
from .run_files import checkpoint_problem
from .runpath import outside_run
from .torch_checkpoint import check_checkpoint

EPOCH_FILE_RE = re.compile(r"epoch_(\d+)\.pt")
EPOCH_DIGITS_MAX = len(str(int(EPOCHS.hi)))  # a longer N is out of range before int() reads it
MAX_LISTED = 500  # a weights folder with more .pt files lists best, last and the newest
STABLE_S = 60.0  # a checkpoint unchanged this long is stat'ed again when weights/ changes
CHECKS_PER_CALL = 4  # validity checks (zip directories read) per refresh, at most
WRITING_S = 2.0  # a file changed more recently is not checked yet (it may be being written)


def resolve(run_dir: str, file: str) -> tuple[str, str]:
    """(name, path) of the checkpoint a push request names: a name in weights/, or a path."""
    if os.sep in file or (os.altsep and os.altsep in file):
        return os.path.basename(file), file
    return file, os.path.join(run_dir, "weights", file)


def file_epoch(name: str) -> int | None:
    """N of an `epoch_N.pt` name when N is an epoch (core.base.values.EPOCHS, as for every
    epoch read); None for any other name and for an N out of that range
    (`epoch_18446744073709551617.pt`, 240 digits): the file's epoch is unknown, it is no
    epoch file for the charts, the order, auto-push, resume or pull."""
    m = EPOCH_FILE_RE.fullmatch(name)
    if m is None or len(m[1]) > EPOCH_DIGITS_MAX:
        return None
    n = int(m[1])
    return n if n in EPOCHS else None


def order_key(name: str) -> tuple:
    """best.pt, last.pt, then epoch_N.pt by N, then any other name."""
    n = file_epoch(name)
    rank = 0 if name == "best.pt" else 1 if name == "last.pt" else 2 if n is not None else 3
    return (rank, n or 0, name)


def epoch_metric(name: str, rows: CheckpointRows) -> tuple[int | None, str | None, float | None]:
    """(epoch, metric name, metric) of checkpoint `name` by the metrics rows; Nones when
    unknown. best.pt: the last row with is_best (else the last row's best_epoch);
    last.pt: the last row; epoch_N.pt: N and the last row of epoch N."""
    n = file_epoch(name)
    if name == "best.pt":
        if rows.best is not None:
            return rows.best
        if rows.last_best is not None and rows.last_best[0] is not None:
            return rows.last_best
        return None, None, None
    if n is not None:
        got = rows.by_epoch.get(n)
        return (n, *got) if got is not None else (n, None, None)
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
    """What `p` pushes: best.pt, or last.pt when there is no best.pt; never a file found
    invalid (torn) when another is not: then last.pt, else the newest epoch_N.pt."""
    checkpoints = [c for c in checkpoints if c.exists]
    there = {c.name for c in checkpoints}
    usable = {c.name for c in checkpoints if c.valid is not False}
    for name in ("best.pt", "last.pt"):
        if name in usable:
            return name
    epochs = [c.name for c in checkpoints if c.name in usable and file_epoch(c.name) is not None]
    if epochs:
        return max(epochs, key=order_key)
    return "last.pt" if "best.pt" not in there and "last.pt" in there else "best.pt"


def validity_text(c: Checkpoint) -> str:
    """A checkpoint in a few words for the dialogs: "34.9 MB, epoch 20, mAP50-95 0.41",
    "0 B, INVALID (torn or not a checkpoint)" (a file not checked yet is not marked)."""
    parts = [fmt_bytes(c.size)]
    if c.valid is False:  # what the metrics say it holds, it does not hold
        return f"{parts[0]}, INVALID (torn or not a checkpoint)"
    if c.epoch is not None:
        parts.append(f"epoch {c.epoch}")
    if c.metric is not None:
        parts.append(f"{c.metric_name or 'metric'} {fmt_number(c.metric)}")
    return ", ".join(parts)


class _Entry:
    """What the lister knows of one listed file."""

    __slots__ = ("path", "sig", "mtime", "built", "built_for", "checked", "checked_for")

    def __init__(self, path: str) -> None:
        self.path = path
        self.sig: tuple | None = None  # of its stat; None: not stat'ed, or missing
        self.mtime = 0.0
        self.built: Checkpoint | None = None
        self.built_for: tuple | None = None  # (sig, rows_key, target, checked)
        self.checked = None  # core.run.torch_checkpoint.Checked of the file at checked_for
        self.checked_for: tuple | None = None


class CheckpointLister:
    """One run's checkpoints, for the refresh of the selected run.

    weights/ is listed again only when its inode or mtime changes, and then every file is
    stat'ed again; between listings, best.pt and last.pt (libreyolo rewrites them in
    place) and any file changed in the last STABLE_S seconds (a new epoch_N.pt still
    being written) are stat'ed on every call, the others not. A file is checked for
    pushing (inside the run, a regular file), and its Checkpoint built, again only when
    its stat, the rows or its target changed."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = os.path.abspath(run_dir)
        self.weights = os.path.join(self.run_dir, "weights")
        self._key: tuple | None = None
        self._names: tuple[str, ...] = ()
        self.not_listed = 0  # .pt files left out beyond MAX_LISTED
        self._entries: dict[str, _Entry] = {}
        self._targets: dict[tuple, PushTarget] = {}
        self._last: tuple[Checkpoint, ...] = ()

    def _list(self) -> bool:
        """List weights/ again if it changed; True when it did."""
        try:
            st = os.stat(self.weights)
            key = (st.st_ino, st.st_mtime_ns)
        except OSError:
            key = None
        if key == self._key:
            return False
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
        self._entries = {
            n: self._entries.get(n) or _Entry(os.path.join(self.weights, n)) for n in names
        }
        return True

    def target(self, settings, name: str) -> PushTarget:
        """push_target for `name` (ARTIFACTS_REQUEST: the artifacts), kept per setting."""
        key = (name, getattr(settings, "hub_repo", None), settings.hub_path)
        got = self._targets.get(key)
        if got is None:
            if len(self._targets) > 2 * MAX_LISTED:
                self._targets.clear()
            got = self._targets[key] = push_target(settings, self.run_dir, name)
        return got

    def checkpoints(
        self, rows: CheckpointRows, settings, *, rows_key=None, now: float | None = None
    ) -> tuple[Checkpoint, ...]:
        """The listed checkpoints, ordered (order_key), with what `rows` says of each.
        rows_key: changes whenever `rows` may have (None: they are read every call); now:
        the clock, for STABLE_S (None: every file is stat'ed)."""
        relisted = self._list()
        rows_key = object() if rows_key is None else rows_key
        out = []
        changed = relisted
        for name in self._names:
            e = self._entries[name]
            if (
                relisted
                or e.sig is None
                or now is None
                or name in ("best.pt", "last.pt")
                or now - e.mtime < STABLE_S
            ):
                try:
                    st = os.stat(e.path)
                    e.sig = (st.st_ino, st.st_dev, st.st_mode, st.st_size, st.st_mtime_ns)
                    e.mtime = st.st_mtime
                except OSError:
                    e.sig = None
        self._check(now)
        for name in self._names:
            e = self._entries[name]
            target = self.target(settings, name)
            checked = e.checked if e.checked_for == e.sig else None
            built_for = (e.sig, rows_key, target, checked)
            if e.built is None or e.built_for != built_for:
                e.built, e.built_for = self._build(name, e, rows, target, checked), built_for
                changed = True
            out.append(e.built)
        if changed:
            self._last = tuple(out)
        return self._last

    def _check(self, now: float | None) -> None:
        """Check the validity of up to CHECKS_PER_CALL files whose stat changed since
        their last check: best.pt, last.pt, then the newest epoch_N.pt first."""
        order = [n for n in self._names if n in ("best.pt", "last.pt")]
        order += [n for n in reversed(self._names) if n not in ("best.pt", "last.pt")]
        budget = CHECKS_PER_CALL
        for name in order:
            if budget <= 0:
                return
            e = self._entries[name]
            if e.sig is None or e.checked_for == e.sig:
                continue
            if now is not None and 0 <= now - e.mtime < WRITING_S:
                continue  # may be being written: checked once it has been still a moment
            if outside_run(self.run_dir, e.path) is not None:  # never read (its problem says)
                e.checked, e.checked_for = None, e.sig
                continue
            e.checked, e.checked_for = check_checkpoint(e.path, name), e.sig
            budget -= 1

    def _build(self, name: str, e: _Entry, rows: CheckpointRows, target, checked) -> Checkpoint:
        epoch, metric_name, metric = epoch_metric(name, rows)
        exists = e.sig is not None
        return Checkpoint(
            name=name,
            path=e.path,
            exists=exists,
            size=e.sig[3] if exists else None,
            epoch=epoch,
            metric_name=metric_name,
            metric=metric,
            problem=checkpoint_problem(self.run_dir, e.path, name) if exists else None,
            target=target,
            valid=checked.valid if checked is not None and exists else None,
            invalid=checked.problem if checked is not None and exists else None,
        )


def artifacts_target(settings, run_dir: str) -> PushTarget:
    return push_target(settings, run_dir, ARTIFACTS_REQUEST)
