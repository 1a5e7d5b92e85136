"""Is every weights file under the root on the Hub? (what autostop asks before it stops the
machine: any doubt holds it)

`WeightsChecker.survey(root, runs, now)` walks the whole root for weights folders
(core.run.weights_finder: every `*/weights/` folder, dot-folders and folders the run finder
skips included, bounded; what it could not look at is a doubt) and judges each weights
file that would be lost on its own:

- `best.pt` of every weights folder;
- `last.pt` too when the run did not complete (what a resume needs; a folder no run
  reads as completed counts as not completed), or when there is no best.pt;
- every `*.pt` of another name than epoch_N.pt (`final.pt`: nothing else holds it);
- with none of these, the newest epoch_N.pt (the highest N).

Only regular files are weights: a FIFO, device or folder named best.pt is not one (and
does not hide a real last.pt: each file is judged on its own). Each file's verdict:

- "safe": the sha256 of the file on disk equals the one the newest successful push of
  that file recorded in the run's `.rgpu/pushes.jsonl` (outcome "ok", or "skipped");
- "not_pushed" (no successful push of it), "changed" (pushed, but the file differs now),
  "outside" (a symlink that leaves the run: rgpu-tui does not push it), "uncheckable"
  (it cannot be read: permission denied, a watcher running as another user): not safe;
- "writing" (changed within SETTLE_S: a trainer or a copy may still be writing it) and
  "hashing" (its hash is being computed): not known yet.

Hashing a multi-GB file every refresh is not done: `WeightsChecker` keeps each file's
sha256 by its identity (path, device, inode, size, mtime and ctime: a file rewritten in
place with the same size and its mtime put back has a new ctime) and hashes only when that
changes, in one worker thread of its own; `survey()` never reads a checkpoint, only stats
it (and re-reads a pushes.jsonl when its inode, size or mtime changed).

`hub_check()` then asks the Hub (core.hub.hub_confirm, in the same worker) for each safe
file at the path its record names: "confirmed", or not ("missing", "different"), or the Hub
could not be asked ("unreachable": autostop holds on that too, unless
autostop_trust_records). An answer is used only for the attempt it was asked for (asked
after `since`), for the same files and the same push records: a new push record, a new
attempt after a busy stretch, asks again.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..base.safeio import open_regular
from ..model.snapshot import RunInfo
from ..records.push_records import PUSHES_READ_MAX, pushes_path
from ..records.records import read_json_lines
from ..run.run_files import checkpoint_problem
from ..run.torch_checkpoint import check_checkpoint
from ..run.weights_finder import WeightsFinder, WeightsScan

SETTLE_S = 5.0  # a file changed this recently may still be being written
CHUNK = 1 << 20
HUB_RESULT_MAX_AGE_S = 600.0  # a Hub answer older than this is asked again
HUB_RETRY_S = 60.0  # a Hub that could not be asked is asked again after this long
SURVEY_EVERY_S = 30.0  # while not due, the root is walked again at most this often
SAFE, NOT_PUSHED, CHANGED, OUTSIDE, UNCHECKABLE, TORN, WRITING, HASHING = (
    "safe",
    "not_pushed",
    "changed",
    "outside",
    "uncheckable",
    "torn",
    "writing",
    "hashing",
)
UNSAFE = (NOT_PUSHED, CHANGED, OUTSIDE, UNCHECKABLE, TORN)
PENDING = (WRITING, HASHING)
_EPOCH = re.compile(r"epoch_(\d{1,12})\.pt")


@dataclass(frozen=True)
class FileKey:
    """One version of a file: any write changes it (ctime cannot be put back)."""

    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


NO_KEY = FileKey("", 0, 0, 0, 0, 0)


@dataclass(frozen=True)
class RunWeights:
    run_dir: str
    name: str  # the run's name as the runs list shows it (or its folder under the root)
    file: str  # "best.pt" | "last.pt" | "epoch_7.pt" | ...
    key: FileKey
    verdict: str  # SAFE, NOT_PUSHED, CHANGED, OUTSIDE, UNCHECKABLE, TORN, WRITING, HASHING
    detail: str  # one line: what is wrong, or where it is on the Hub
    sha256: str | None = None
    record: dict | None = None  # the newest successful push of this file
    last_error: str | None = None  # the newest push attempt of this file, when it failed

    @property
    def label(self) -> str:
        return f"{self.name} {self.file}"


@dataclass(frozen=True)
class Survey:
    """Every weights file under a root that would be lost, and what could not be looked at."""

    root: str
    weights: list[RunWeights]
    doubts: tuple[str, ...] = ()  # one line each: autostop holds while there is one
    runs: int = 0  # runs the run finder listed
    folders: int = 0  # weights folders found

    def keys(self) -> frozenset:
        return frozenset((w.run_dir, w.file, w.key, w.verdict) for w in self.weights)


@dataclass(frozen=True)
class HubFile:
    weights: RunWeights
    status: str  # "confirmed" | "missing" | "different" | "unchecked"
    detail: str


@dataclass(frozen=True)
class HubCheck:
    at: float
    files: tuple[HubFile, ...]
    unreachable: str | None  # why the Hub could not be asked

    @property
    def bad(self) -> tuple[HubFile, ...]:
        return tuple(f for f in self.files if f.status in ("missing", "different"))


def hub_key(weights: Iterable[RunWeights]) -> tuple:
    """The question put to the Hub: these files, these versions, these push records."""
    return tuple(
        sorted(
            (
                w.run_dir,
                w.file,
                w.sha256 or "",
                *(str((w.record or {}).get(k)) for k in ("repo", "path", "endpoint", "time")),
                str((w.record or {}).get("commit_url")),
            )
            for w in weights
        )
    )


class WeightsChecker:
    """Verdicts for every weights file under a root; hashing and the Hub off the caller's
    thread. `survey`, `check` and `hub_check` are called from one thread at a time."""

    def __init__(
        self,
        *,
        settle_s: float = SETTLE_S,
        hub_lookup: Callable[[list[RunWeights]], HubCheck] | None = None,
    ) -> None:
        if hub_lookup is None:
            from .hub_confirm import lookup_on_hub as hub_lookup
        self.settle_s = settle_s
        self._hub_lookup = hub_lookup
        self._cond = threading.Condition()
        self._jobs: deque = deque()
        self._queued: set = set()
        self._hashes: dict[FileKey, str | None] = {}  # None: could not be read
        self._torn: dict[FileKey, str] = {}  # why a hashed file is no complete checkpoint
        self._hub: dict[tuple, HubCheck] = {}
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pushes: dict[str, tuple[tuple, list[dict]]] = {}
        self._finders: dict[str, WeightsFinder] = {}
        self._last_scan: tuple[float, WeightsScan] | None = None
        self.hashed = 0  # files hashed (for tests and numbers)

    # -- the verdicts -------------------------------------------------------------

    def survey(
        self, root: str, runs: Iterable[RunInfo], now: float, *, fresh: bool = True
    ) -> Survey:
        """Every weights file under `root` that would be lost (see the module doc). With
        `fresh` False, the last walk of the same root younger than SURVEY_EVERY_S is used
        again (the countdown's line; each file is still judged now). Never raises for a
        run's files."""
        root = os.path.abspath(root)
        runs = list(runs)
        by_dir = {r.run_dir: r for r in runs}
        last = self._last_scan
        recent = last is not None and last[1].root == root and now - last[0] < SURVEY_EVERY_S
        if not fresh and recent:
            scan = last[1]  # the walk of a few seconds ago; each file is judged again
        else:
            finder = self._finders.get(root)
            if finder is None:
                self._finders = {root: (finder := WeightsFinder(root))}
            scan = finder.scan()
            self._last_scan = (now, scan)
        out: list[RunWeights] = []
        for folder, names in sorted(scan.folders.items()):
            run_dir = os.path.dirname(folder)
            info = by_dir.get(run_dir)
            name = info.name if info is not None else _name_under(root, run_dir)
            completed = info is not None and info.state == "completed"
            try:
                out.extend(self._folder(run_dir, name, folder, names, completed, now))
            except Exception as exc:  # one odd folder never spoils the others, or the loop
                out.append(RunWeights(
                    run_dir, name, "weights", NO_KEY, UNCHECKABLE,
                    f"its weights could not be checked ({type(exc).__name__})",
                ))  # fmt: skip
        self._forget(out, by_dir)
        return Survey(root, out, scan.doubts, len(runs), len(scan.folders))

    def check(self, runs: Iterable[RunInfo], now: float) -> list[RunWeights]:
        """The verdicts of each run's own weights folder (`survey` without the walk)."""
        runs = list(runs)
        out: list[RunWeights] = []
        for run in runs:
            folder = os.path.join(run.run_dir, "weights")
            try:
                names = tuple(n for n in os.listdir(folder) if n.endswith(".pt"))
            except OSError:
                continue
            out.extend(
                self._folder(run.run_dir, run.name, folder, names, run.state == "completed", now)
            )
        self._forget(out, {r.run_dir: r for r in runs})
        return out

    def _forget(self, judged: list[RunWeights], runs: dict) -> None:
        """Forget the hashes of files no longer judged, and pushes of runs gone."""
        seen = {w.key for w in judged}
        dirs = {w.run_dir for w in judged} | set(runs)
        with self._cond:
            for key in [k for k in self._hashes if k not in seen]:
                del self._hashes[key]
                self._torn.pop(key, None)
        for run_dir in [d for d in self._pushes if d not in dirs]:
            del self._pushes[run_dir]

    def _folder(
        self, run_dir: str, name: str, folder: str, names, completed: bool, now: float
    ) -> list[RunWeights]:
        """The files of one weights folder that would be lost, each judged."""
        found: dict[str, os.stat_result | OSError] = {}
        for file in names:
            path = os.path.join(folder, file)
            try:
                st = os.stat(path)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # gone, or a dangling link
                    found[file] = exc  # cannot be told: permission denied, a loop of links
                continue
            if not _regular(st.st_mode):
                continue  # a FIFO, device or folder named *.pt: no weights
            found[file] = st
        keep = []
        if "best.pt" in found:
            keep.append("best.pt")
        if "last.pt" in found and (not completed or "best.pt" not in found):
            keep.append("last.pt")
        keep.extend(
            sorted(f for f in found if f not in ("best.pt", "last.pt") and not _EPOCH.fullmatch(f))
        )
        if not keep and found:  # epoch_N.pt only: the newest is what a resume needs
            keep.append(max(found, key=lambda f: _newest(f, found[f])))
        return [self._one(run_dir, name, folder, file, found[file], now) for file in keep]

    def _one(self, run_dir: str, name: str, folder: str, file: str, st, now: float) -> RunWeights:
        path = os.path.join(folder, file)
        records = [r for r in self._records(run_dir) if r.get("file") == file]
        good = [r for r in records if r.get("outcome") in ("ok", "skipped")]
        record = good[-1] if good else None
        last_error = None
        if records and records[-1].get("outcome") == "error":
            last_error = str(records[-1].get("error") or "no reason given")
        key = NO_KEY if isinstance(st, OSError) else _key(path, st)

        def verdict(what: str, detail: str, sha: str | None = None) -> RunWeights:
            return RunWeights(run_dir, name, file, key, what, detail, sha, record, last_error)

        problem = checkpoint_problem(run_dir, path, file)
        if problem and "not a regular file" not in problem:
            return verdict(OUTSIDE, problem)
        if isinstance(st, OSError):
            why = "permission denied" if st.errno in (errno.EACCES, errno.EPERM) else st.strerror
            return verdict(UNCHECKABLE, f"{file} cannot be checked ({why})")
        if now - st.st_mtime < self.settle_s:
            return verdict(WRITING, f"{file} changed {max(now - st.st_mtime, 0):.0f} s ago")
        with self._cond:
            known = key in self._hashes
            sha = self._hashes.get(key)
        if not known:
            self._submit(("hash", key), lambda: self._hash(key))
            return verdict(HASHING, f"hashing {file} ({st.st_size / 1e6:.0f} MB)")
        if sha is None:
            return verdict(UNCHECKABLE, f"{file} cannot be read to check it (permission denied?)")
        if record is None or record.get("sha256") != sha:
            with self._cond:
                torn = self._torn.get(key)
            if torn:  # the one validity check (core.run.torch_checkpoint): no push can take it
                return verdict(TORN, f"{torn}: it cannot be pushed", sha)
        if record is None:
            return verdict(NOT_PUSHED, f"{file} was never pushed", sha)
        if record.get("sha256") != sha:
            epoch = record.get("epoch")
            when = f" (epoch {epoch})" if isinstance(epoch, int) else ""
            return verdict(CHANGED, f"{file} changed since its last push{when}", sha)
        where = f"{record.get('repo')}: {record.get('path')}"
        return verdict(SAFE, f"{file} is on the Hub at {where}", sha)

    def _records(self, run_dir: str) -> list[dict]:
        """The run's push records, re-read only when pushes.jsonl changed."""
        try:
            st = os.stat(pushes_path(run_dir))
            stat_key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stat_key = None
        cached = self._pushes.get(run_dir)
        if cached is not None and cached[0] == stat_key:
            return cached[1]
        records = read_json_lines(pushes_path(run_dir), PUSHES_READ_MAX) if stat_key else []
        self._pushes[run_dir] = (stat_key, records)
        return records

    # -- the Hub --------------------------------------------------------------------

    def hub_check(
        self, weights: list[RunWeights], now: float, since: float | None = None
    ) -> HubCheck | None:
        """What the Hub says of these (safe) weights; None while it is being asked (in the
        worker). An answer is given again only when it was asked at or after `since` (this
        attempt), for the same files and records, and is younger than HUB_RESULT_MAX_AGE_S
        (HUB_RETRY_S when the Hub could not be asked)."""
        key = hub_key(weights)
        with self._cond:
            got = self._hub.get(key)
        if got is not None and (since is None or got.at >= since):
            max_age = HUB_RETRY_S if got.unreachable else HUB_RESULT_MAX_AGE_S
            if now - got.at <= max_age:
                return got
        wanted = list(weights)

        def ask() -> None:
            result = self._hub_lookup(wanted)
            result = HubCheck(now, result.files, result.unreachable)
            with self._cond:
                self._hub = {key: result}  # only the newest question is kept

        self._submit(("hub", key, now), ask)
        return None

    # -- the worker -----------------------------------------------------------------

    def _submit(self, job_key, fn) -> None:
        with self._cond:
            if self._closed or job_key in self._queued:
                return
            if job_key[0] == "hub" and any(k[:2] == job_key[:2] for k in self._queued):
                return  # the same question is being asked
            self._queued.add(job_key)
            self._jobs.append((job_key, fn))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="rgpu-weights-check", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job_key, fn = self._jobs.popleft()
            try:
                fn()
            except Exception:  # never let the worker die; the job is asked again
                pass
            finally:
                with self._cond:
                    self._queued.discard(job_key)
                    self._cond.notify_all()

    def _hash(self, key: FileKey) -> None:
        """sha256 of the file, kept only if it is still the same version afterwards, and
        whether it is a complete torch checkpoint (a torn one can never be pushed)."""
        sha = sha256_of(key)
        if sha is False:
            return  # it changed while being read: hashed again at a later check
        torn = torn_problem(key) if sha is not None else None
        with self._cond:
            self._hashes[key] = sha
            if torn:
                self._torn[key] = torn
            self.hashed += 1

    def idle(self) -> bool:
        with self._cond:
            return not self._jobs and not self._queued

    def wait_idle(self, timeout: float) -> bool:
        """For tests and the bench: wait until no job is queued or running."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queued, timeout)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._jobs.clear()
            self._cond.notify_all()


def sha256_of(key: FileKey) -> str | None | bool:
    """The sha256 of the version `key` names; None when it cannot be read; False when the
    file is not (or no longer) that version."""
    try:
        fd = open_regular(key.path)
    except OSError:
        return None
    try:
        if _key(key.path, os.fstat(fd)) != key:
            return False
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        return h.hexdigest() if _key(key.path, os.fstat(fd)) == key else False
    except OSError:
        return None
    finally:
        os.close(fd)


def torn_problem(key: FileKey) -> str | None:
    """Why the file is a torn checkpoint: empty, or a zip (what torch.save writes) cut short
    or without its pickle, by the one validity check (core.run.torch_checkpoint). None for a
    complete one, and for a file that is no zip at all (not torch.save's: push says why)."""
    if key.size:
        try:
            fd = open_regular(key.path)
        except OSError:
            return None
        try:
            if os.read(fd, 2) != b"PK":
                return None
        except OSError:
            return None
        finally:
            os.close(fd)
    checked = check_checkpoint(key.path)
    return checked.problem


def _key(path: str, st: os.stat_result) -> FileKey:
    return FileKey(path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _newest(file: str, st) -> tuple:
    """The order of epoch_N.pt files: the highest N, then the newest."""
    m = _EPOCH.fullmatch(file)
    mtime = 0 if isinstance(st, OSError) else st.st_mtime_ns
    return (1, int(m.group(1)), mtime) if m else (0, 0, mtime)


def _name_under(root: str, run_dir: str) -> str:
    """A folder the run finder does not list, by its path under the root."""
    rel = os.path.relpath(run_dir, root)
    return os.path.basename(root.rstrip(os.sep)) if rel == "." else rel
