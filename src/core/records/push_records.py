"""Reading `<run>/.rgpu/pushes.jsonl`: what was pushed to the Hub, and when.

The push (core.hub.push) appends one record per attempt; this module only reads them, for the
push itself (is this file unchanged since its last push?), auto-push, the header's
"pushed best.pt ep37 4m ago" (`push_info`) and the exporter's `rgpu_run_weights_unpushed`
(`UnpushedWeights`). Torn or malformed lines are skipped (core.records.records). The records
are run files, so untrusted: the URL and the error `push_info` passes on lose any
`user:password@` and anything shaped like a Hugging Face token (the app's own records never
hold one; another writer's might).
"""

from __future__ import annotations

import os
from stat import S_ISREG

from ..base.urls import strip_userinfo
from ..base.values import EPOCHS, TIMES, checked, parse_time
from ..model.snapshot import PushInfo
from ..run.run_files import checkpoint_problem
from ..run.tail import redact
from .records import read_json_lines

RECORDS = "pushes.jsonl"
# a run's newest weights: weights/best.pt, else weights/last.pt (autostop asks the same)
NEWEST_WEIGHTS = ("best.pt", "last.pt")
PUSHES_READ_MAX = 4 * 1024 * 1024  # the newest records of a pushes.jsonl that are read


def pushes_path(run_dir: str) -> str:
    return os.path.join(run_dir, ".rgpu", RECORDS)


def read_pushes(run_dir: str) -> list[dict]:
    """Every complete record, oldest first; a torn or malformed line is skipped."""
    return read_json_lines(pushes_path(run_dir))


def last_push(run_dir: str, file: str | None = None, *, ok_only: bool = False) -> dict | None:
    """The newest record (for `file` when given; only outcome "ok" when ok_only)."""
    for record in reversed(read_pushes(run_dir)):
        if file is not None and record.get("file") != file:
            continue
        if ok_only and record.get("outcome") != "ok":
            continue
        return record
    return None


def _no_secret(value):
    """A text from a record with no credentials in its URLs and no token-shaped word."""
    return redact(strip_userinfo(value)) if isinstance(value, str) else value


def push_info(records: list[dict], best_size: int | None, best_mtime: float | None) -> PushInfo:
    """The summary the run header shows, from the records and best.pt's size and mtime on
    disk now (None when there is no best.pt): the newest successful push, the newest
    attempt's outcome, and whether best.pt changed since it was last pushed (its size
    differs, or it is more than a second newer than that push: records keep whole
    seconds)."""
    ok = [r for r in records if r.get("outcome") in ("ok", "skipped")]
    last = records[-1] if records else {}
    good = ok[-1] if ok else {}
    best_changed = None
    best_ok = [r for r in ok if r.get("file") == "best.pt"]
    if best_ok and best_size is not None:
        best_changed = changed_since(best_ok[-1], best_size, best_mtime)
    return PushInfo(
        last_ok_file=good.get("file"),
        last_ok_epoch=checked(good.get("epoch"), EPOCHS, integer=True)[0],
        last_ok_at=parse_time(good.get("time")),
        last_ok_url=_no_secret(good.get("commit_url")),
        last_outcome=last.get("outcome"),
        last_error=_no_secret(last.get("error")),
        best_changed=best_changed,
        attempts=len(records),
    )


def changed_since(record: dict, size: int, mtime: float | None) -> bool:
    """Whether the file on disk now (its size, its mtime) is not the one `record` pushed:
    its size differs, or it is newer than the bytes the push copied (`file_mtime`, the
    file's mtime when staged: a file rewritten during the settle wait is the one pushed);
    a record without it: more than a second newer than the push (whole seconds)."""
    copied = checked(record.get("file_mtime"), TIMES)[0]
    if copied is not None:
        newer = mtime is not None and mtime > copied + 1e-6
    else:
        at = parse_time(record.get("time"))
        newer = at is not None and mtime is not None and mtime > at + 1.0
    return bool(record.get("size") != size or newer)


def _stat_key(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, S_ISREG(st.st_mode))


class UnpushedWeights:
    """Are a run's newest weights (NEWEST_WEIGHTS) confirmed by its push records?

    `unpushed(run_dir)` is None when the run has no weights/best.pt nor weights/last.pt that
    is a regular file (nothing to lose); False when they are confirmed: the newest
    successful record of that file in .rgpu/pushes.jsonl (outcome "ok", or "skipped":
    unchanged since an "ok" one) has its size, and the file is not more than a second
    newer than that record (`changed_since`); True otherwise (never pushed, changed since
    its push, or a symlink that leaves the run, which a push refuses). No hash is taken and
    the Hub is not asked (autostop does both, core.hub.weights_safety). Per run, pushes.jsonl
    is re-read and the weights re-checked only when one of their stats changed. Reads only;
    never raises for a run's files."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple, bool | None]] = {}

    def unpushed(self, run_dir: str) -> bool | None:
        for name in NEWEST_WEIGHTS:
            path = os.path.join(run_dir, "weights", name)
            weights = _stat_key(path)
            if weights is not None:
                break
        else:
            self._cache.pop(run_dir, None)
            return None
        key = (name, weights, _stat_key(pushes_path(run_dir)))
        cached = self._cache.get(run_dir)
        if cached is not None and cached[0] == key:
            return cached[1]
        verdict = self._verdict(run_dir, name, path, weights, key[2] is not None)
        self._cache[run_dir] = (key, verdict)
        return verdict

    @staticmethod
    def _verdict(run_dir: str, name: str, path: str, weights: tuple, has_records: bool):
        _ino, size, mtime_ns, regular = weights
        if not regular:
            return None  # a FIFO or a folder named best.pt: no weights
        try:
            if checkpoint_problem(run_dir, path, name):
                return True  # outside the run (or swapped for a FIFO): not pushed by rgpu-tui
        except OSError:
            return True
        records = read_json_lines(pushes_path(run_dir), PUSHES_READ_MAX) if has_records else []
        ok = [r for r in records if r.get("file") == name and r.get("outcome") in ("ok", "skipped")]
        return not ok or changed_since(ok[-1], size, mtime_ns / 1e9)

    def forget_others(self, run_dirs) -> None:
        """Drop what is kept of runs no longer found."""
        keep = set(run_dirs)
        for run_dir in [d for d in self._cache if d not in keep]:
            del self._cache[run_dir]
