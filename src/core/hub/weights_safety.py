"""Is every run's newest weights file on the Hub? (what autostop asks before it stops the machine)

A run's newest weights are `weights/best.pt`, or `weights/last.pt` when there is no best.pt;
a run with neither has nothing to lose and is left out. Its verdict:

- "safe": the sha256 of the file on disk equals the one the newest successful push of
  that file recorded in the run's `.rgpu/pushes.jsonl` (outcome "ok", or "skipped":
  unchanged since an "ok" one);
- "not_pushed" (no successful push of it), "changed" (pushed, but the file differs now),
  "outside" (a symlink that leaves the run: rgpu-tui does not push it): not safe;
- "writing" (changed within SETTLE_S: a trainer or a copy may still be writing it) and
  "hashing" (its hash is being computed): not known yet.

A FIFO, device or folder named best.pt is not weights (nothing to lose). Hashing a
multi-GB file every refresh is not done: `WeightsChecker` keeps each file's sha256 by
(path, inode, size, mtime_ns) and hashes only when that changes, in one worker thread of
its own; `check()` never reads a checkpoint, only stats it (and re-reads a pushes.jsonl
when its inode, size or mtime changed).

`hub_check()` then asks the Hub (in the same worker) for the file at the path each record
names, at the repo's head: its LFS sha256 (or git blob sha1 for a file kept in git) must be
the one on disk. A path or repo the Hub does not have, or a different file there, is not
safe; a Hub that cannot be reached (no network, a timeout, a 5xx, a refused token) cannot
say, and the records are trusted (the result says so). Any other answer (a token it refuses,
a record naming another endpoint than HF_ENDPOINT, or no usable repo) is not safe.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..base.safeio import open_regular
from ..base.urls import strip_userinfo
from ..model.snapshot import RunInfo
from ..records.push_records import pushes_path
from ..records.records import read_json_lines
from ..run.run_files import checkpoint_problem

SETTLE_S = 5.0  # a file changed this recently may still be being written
CHUNK = 1 << 20
WEIGHTS = ("best.pt", "last.pt")
PUSHES_READ_MAX = 4 * 1024 * 1024  # the newest records of a pushes.jsonl that are read
HUB_RESULT_MAX_AGE_S = 600.0  # a hub check older than this is asked again
SAFE, NOT_PUSHED, CHANGED, OUTSIDE, WRITING, HASHING = (
    "safe",
    "not_pushed",
    "changed",
    "outside",
    "writing",
    "hashing",
)
UNSAFE = (NOT_PUSHED, CHANGED, OUTSIDE)
PENDING = (WRITING, HASHING)


@dataclass(frozen=True)
class FileKey:
    path: str
    ino: int
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class RunWeights:
    run_dir: str
    name: str  # the run's name as the runs list shows it
    file: str  # "best.pt" | "last.pt"
    key: FileKey
    verdict: str  # SAFE, NOT_PUSHED, CHANGED, OUTSIDE, WRITING, HASHING
    detail: str  # one line: what is wrong, or where it is on the Hub
    sha256: str | None = None
    record: dict | None = None  # the newest successful push of this file
    last_error: str | None = None  # the newest push attempt of this file, when it failed

    @property
    def label(self) -> str:
        return f"{self.name} {self.file}"


@dataclass(frozen=True)
class HubFile:
    weights: RunWeights
    status: str  # "confirmed" | "missing" | "different" | "unchecked"
    detail: str


@dataclass(frozen=True)
class HubCheck:
    at: float
    files: tuple[HubFile, ...]
    unreachable: str | None  # why the Hub could not be asked (then the records are trusted)

    @property
    def bad(self) -> tuple[HubFile, ...]:
        return tuple(f for f in self.files if f.status in ("missing", "different"))


def hub_key(weights: Iterable[RunWeights]) -> tuple:
    return tuple(
        sorted(
            (
                w.run_dir,
                w.file,
                w.sha256 or "",
                str((w.record or {}).get("repo")),
                str((w.record or {}).get("path")),
                str((w.record or {}).get("endpoint")),
            )
            for w in weights
        )
    )


class WeightsChecker:
    """Verdicts for every run's newest weights; hashing and the Hub off the caller's thread.
    `check` and `hub_check` are called from one thread (the watcher's loop)."""

    def __init__(
        self,
        *,
        settle_s: float = SETTLE_S,
        hub_lookup: Callable[[list[RunWeights]], HubCheck] | None = None,
    ) -> None:
        self.settle_s = settle_s
        self._hub_lookup = hub_lookup or lookup_on_hub
        self._cond = threading.Condition()
        self._jobs: deque = deque()
        self._queued: set = set()
        self._hashes: dict[FileKey, str | None] = {}  # None: could not be read
        self._hub: dict[tuple, HubCheck] = {}
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pushes: dict[str, tuple[tuple, list[dict]]] = {}
        self.hashed = 0  # files hashed (for tests and numbers)

    # -- the verdicts -------------------------------------------------------------

    def check(self, runs: Iterable[RunInfo], now: float) -> list[RunWeights]:
        """One verdict per run that has weights (see the module doc); hashing is started
        for a file whose hash is not known. Never raises for a run's files."""
        out = []
        seen = set()
        for run in runs:
            if _pseudo(run.run_dir):
                continue
            try:
                got = self._one(run, now)
            except Exception as exc:  # one odd run never spoils the others, or the loop
                got = None
                out.append(
                    RunWeights(
                        run.run_dir, run.name, "best.pt", FileKey("", 0, 0, 0), NOT_PUSHED,
                        f"could not be checked ({type(exc).__name__}): push it",
                    )
                )  # fmt: skip
            if got is not None:
                out.append(got)
                seen.add(got.key)
        with self._cond:  # forget the hashes of files that are no longer anyone's newest
            for key in [k for k in self._hashes if k not in seen]:
                del self._hashes[key]
        for run_dir in [d for d in self._pushes if d not in {r.run_dir for r in runs}]:
            del self._pushes[run_dir]
        return out

    def _one(self, run: RunInfo, now: float) -> RunWeights | None:
        for file in WEIGHTS:
            path = os.path.join(run.run_dir, "weights", file)
            try:
                st = os.stat(path)
            except OSError:
                continue
            break
        else:
            return None  # no weights: nothing to lose
        key = FileKey(path, st.st_ino, st.st_size, st.st_mtime_ns)
        records = [r for r in self._records(run.run_dir) if r.get("file") == file]
        good = [r for r in records if r.get("outcome") in ("ok", "skipped")]
        record = good[-1] if good else None
        last_error = None
        if records and records[-1].get("outcome") == "error":
            last_error = str(records[-1].get("error") or "no reason given")

        def verdict(what: str, detail: str, sha: str | None = None) -> RunWeights:
            return RunWeights(
                run.run_dir, run.name, file, key, what, detail, sha, record, last_error
            )

        problem = checkpoint_problem(run.run_dir, path, file)
        if problem and "not a regular file" in problem:
            return None  # a FIFO or a device named best.pt: no weights
        if problem:
            return verdict(OUTSIDE, problem)
        if now - st.st_mtime < self.settle_s:
            return verdict(WRITING, f"{file} changed {max(now - st.st_mtime, 0):.0f} s ago")
        with self._cond:
            known = key in self._hashes
            sha = self._hashes.get(key)
        if not known:
            self._submit(("hash", key), lambda: self._hash(key))
            return verdict(HASHING, f"hashing {file} ({st.st_size / 1e6:.0f} MB)")
        if sha is None:
            return verdict(NOT_PUSHED, f"{file} cannot be read to hash it")
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

    def hub_check(self, weights: list[RunWeights], now: float) -> HubCheck | None:
        """What the Hub says of these (safe) weights; None while it is being asked (asked
        in the worker; a result is kept HUB_RESULT_MAX_AGE_S for the same files)."""
        key = hub_key(weights)
        with self._cond:
            got = self._hub.get(key)
        if got is not None and now - got.at <= HUB_RESULT_MAX_AGE_S:
            return got
        wanted = list(weights)

        def ask() -> None:
            result = self._hub_lookup(wanted)
            result = HubCheck(now, result.files, result.unreachable)
            with self._cond:
                self._hub = {key: result}  # only the newest question is kept

        self._submit(("hub", key), ask)
        return None

    # -- the worker -----------------------------------------------------------------

    def _submit(self, job_key, fn) -> None:
        with self._cond:
            if self._closed or job_key in self._queued:
                return
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
        """sha256 of the file, kept only if it is still the same version afterwards."""
        sha = sha256_of(key)
        if sha is False:
            return  # it changed while being read: hashed again at a later check
        with self._cond:
            self._hashes[key] = sha
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
        if _key_of(fd, key.path) != key:
            return False
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        return h.hexdigest() if _key_of(fd, key.path) == key else False
    except OSError:
        return None
    finally:
        os.close(fd)


def _key_of(fd: int, path: str) -> FileKey:
    st = os.fstat(fd)
    return FileKey(path, st.st_ino, st.st_size, st.st_mtime_ns)


def _git_sha1(path: str, size: int) -> str | None:
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        h = hashlib.sha1(b"blob %d\0" % size)
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _pseudo(run_dir: str) -> bool:
    """core.picture.watch's pseudo run for a launch with no status.json yet: no weights of
    its own."""
    parent = os.path.dirname(run_dir)
    return (
        os.path.basename(parent) == "launch"
        and os.path.basename(os.path.dirname(parent)) == ".rgpu"
    )


# -- asking the Hub -----------------------------------------------------------------------


def lookup_on_hub(weights: list[RunWeights], *, token: str | None = None) -> HubCheck:
    """The Hub's metadata of each file at the repo and path its record names, at the repo's
    head (one paths-info request per repo). Only the Hub this process pushes to is asked
    (HF_ENDPOINT, else huggingface.co): a record naming another endpoint is not believed
    (a run directory is untrusted: the token never goes where a record says). Never raises."""
    from ..run.hub_target import repo_problem
    from .hub_client import DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, configure_hub, get_token
    from .hub_errors import describe_error, scrub

    token = token or get_token()
    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    ours = strip_userinfo(endpoint)
    groups: dict[str, list[RunWeights]] = {}
    files: list[HubFile] = []
    for w in weights:
        record = w.record or {}
        theirs = str(record.get("endpoint") or ours).rstrip("/")
        repo = record.get("repo")
        if theirs != ours:
            detail = f"pushed to {theirs}, not to {ours} (HF_ENDPOINT), which this watcher asks"
            files.append(HubFile(w, "missing", detail))
        elif not isinstance(repo, str) or repo_problem(repo) or not record.get("path"):
            files.append(HubFile(w, "missing", "its push record names no usable repo and path"))
        else:
            groups.setdefault(repo, []).append(w)
    unreachable = None
    for repo, group in groups.items():
        try:
            configure_hub(DEFAULT_TIMEOUT)
            from huggingface_hub import HfApi

            api = HfApi(endpoint=endpoint, token=token)
            paths = [str(w.record.get("path")) for w in group]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                entries = api.get_paths_info(repo, paths, repo_type="model")
            found = {getattr(e, "path", None): e for e in entries}
            files.extend(_compare(w, found.get(str(w.record.get("path"))), repo) for w in group)
        except Exception as exc:
            why = describe_error(exc, repo=repo, endpoint=ours, timeout=DEFAULT_TIMEOUT)
            why = scrub(why, token)
            if _not_found(exc):
                why = f"{repo} is not on the Hub (deleted, or this token cannot see it)"
            elif _unreachable(exc):
                unreachable = why
                files.extend(HubFile(w, "unchecked", why) for w in group)
                continue
            files.extend(HubFile(w, "missing", f"cannot check {repo}: {why}") for w in group)
    return HubCheck(0.0, tuple(files), unreachable)


def _compare(w: RunWeights, entry, repo: str) -> HubFile:
    path = str(w.record.get("path"))
    if entry is None or not hasattr(entry, "blob_id"):
        return HubFile(w, "missing", f"{repo} has no {path} at its head")
    lfs = getattr(entry, "lfs", None)
    if lfs is not None and getattr(lfs, "sha256", None):
        same = lfs.sha256.lower() == w.sha256
    else:
        same = _git_sha1(w.key.path, w.key.size) == str(entry.blob_id).lower()
    if same:
        return HubFile(w, "confirmed", f"{repo}: {path}")
    return HubFile(w, "different", f"{repo}: {path} at its head is another file")


def _unreachable(exc: BaseException) -> bool:
    """The Hub could not be asked: no network, a timeout, a 5xx or 429, offline mode (as
    opposed to an answer: 401, 403, 404, a bad request)."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    from .hub_client import HubTimeout

    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (HubTimeout, OfflineModeIsEnabled, httpx2.TransportError)):
            return True
        if isinstance(e, HfHubHTTPError):
            status = getattr(getattr(e, "response", None), "status_code", None)
            return status is not None and (status >= 500 or status == 429)
        e = e.__cause__ or e.__context__
    return False


def _not_found(exc: BaseException) -> bool:
    try:
        from huggingface_hub.errors import RepositoryNotFoundError
    except ImportError:  # pragma: no cover
        return False
    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, RepositoryNotFoundError):
            return True
        e = e.__cause__ or e.__context__
    return False
