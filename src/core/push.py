"""Pushing checkpoints to the Hugging Face Hub: never a torn file, never a lost one.

A push is one commit to `settings.hub_repo` (created private when missing) that
holds one checkpoint of one run, at `settings.hub_path` with {run} and {file}
filled in, plus the run's small artifacts that exist (status.json,
metrics.jsonl, results.csv, summary.json, train_config.yaml) beside it. The
checkpoint is first staged (`core.staging`): a private, verified copy of one
complete version, uploaded from a file object that reports its position, and
removed afterwards whatever happened. Pushing a file whose staged sha256 equals
the last successful push of that file to that repo path makes no commit.

Every attempt appends one JSON line to `<run>/.rgpu/pushes.jsonl`.

The token is read the standard huggingface_hub way (HF_TOKEN, or the stored
login) and never printed, recorded, logged or put in an error message.

Network behaviour: an httpx client with connect/read/write timeouts is
installed through `huggingface_hub.set_client_factory`; a timeout ends the push
at once with "the Hub did not answer within N s" (huggingface_hub would retry it
five times). huggingface_hub retries preupload, the LFS batch, the PUT and the
verify by itself; repo creation and the commit are retried here (transient
errors only: 5xx, 429, connection refused/reset), with waits of 1 s and 2 s.

`push()` never raises. It is blocking: call it from a worker thread, or use
`PushQueue` (one upload at a time in a daemon thread, events in order). Pushes
in one process share one HTTP client: run them one at a time (the queue does).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .checkpoints import EPOCH_FILE_RE, checkpoint_epoch_metric, resolve
from .hub_client import HubTimeout
from .hub_client import configure_hub as _configure_hub
from .hub_client import get_token as _get_token
from .hub_target import ARTIFACTS_REQUEST, push_target
from .hub_target import repo_path as repo_path  # where it always was (core.hub_pull uses it)
from .private import private_dir
from .push_records import last_push, pushes_path, read_pushes
from .records import append_json_line
from .run_files import artifacts_digest, checkpoint_problem, read_artifacts
from .staging import Staged, StagingError, stage
from .tail import redact
from .urls import strip_userinfo
from .values import int_or_none as _int

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 60.0
RETRY_WAITS = (1.0, 2.0)
NO_TOKEN = "no Hugging Face token: set HF_TOKEN or run `hf auth login`"
PROGRESS_INTERVAL = 0.1

_FILE_ARG_RE = re.compile(r"(best|last|epoch_\d+)(\.pt)?")


# -- data ---------------------------------------------------------------------


@dataclass(frozen=True)
class PushRequest:
    run_dir: str
    file: str  # "best.pt" | "last.pt" | "epoch_7.pt" | "artifacts" | a path to a .pt file


@dataclass(frozen=True)
class PushResult:
    ok: bool
    skipped_unchanged: bool
    repo: str
    path: str | None
    commit_url: str | None
    sha256: str | None
    size: int | None
    epoch: int | None
    metric_name: str | None
    metric: float | None
    error: str | None
    file: str | None = None  # "best.pt", ...: what was pushed
    notices: tuple[str, ...] = ()  # what was skipped and why (an artifact outside the run)

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "skipped_unchanged": self.skipped_unchanged,
            "file": self.file,
            "repo": self.repo,
            "path": self.path,
            "commit_url": self.commit_url,
            "sha256": self.sha256,
            "size": self.size,
            "epoch": self.epoch,
            "metric_name": self.metric_name,
            "metric": self.metric,
            "error": self.error,
            "notices": list(self.notices),
        }


@dataclass(frozen=True)
class PushEvent:
    """What PushQueue reports, in order, from its event thread.

    kind "queued": request accepted (or it replaced a queued one for the same file);
    "started": its push began; "progress": bytes_done/bytes_total of the upload (0/0
    while staging) and phase ("settling", "staging", "connecting", "uploading");
    "finished": result holds the PushResult."""

    kind: str
    request: PushRequest
    bytes_done: int = 0
    bytes_total: int = 0
    phase: str | None = None
    result: PushResult | None = None


class _PushFailed(Exception):
    """A push failure whose message is already the one line to show."""


class Interrupted(BaseException):
    """Raised into a push by a signal handler (`rgpu-tui push` on SIGTERM): the push records
    "interrupted by <args[0]>", removes its staging copy and lets the exception go on."""


# -- records ------------------------------------------------------------------


def rgpu_dir(run_dir: str) -> str:
    return os.path.join(run_dir, ".rgpu")


def staging_dir(run_dir: str) -> str:
    return os.path.join(rgpu_dir(run_dir), "staging")


def append_push_record(run_dir: str, record: dict) -> None:
    """One complete JSON line (see core.records); read by core.push_records."""
    append_json_line(pushes_path(run_dir), record)


# -- what a checkpoint is -----------------------------------------------------


def file_for_arg(arg: str | None, run_dir: str) -> str:
    """The PushRequest.file for a command-line --file value.

    None: best.pt, or last.pt when there is no best.pt. best/last/epoch_N (with or
    without .pt) name weights/<that>.pt; "artifacts" the small artifacts only; anything
    else is a path to a checkpoint."""
    if arg is None:
        weights = os.path.join(run_dir, "weights")
        if not os.path.exists(os.path.join(weights, "best.pt")) and os.path.exists(
            os.path.join(weights, "last.pt")
        ):
            return "last.pt"
        return "best.pt"
    if arg == ARTIFACTS_REQUEST:
        return arg
    m = _FILE_ARG_RE.fullmatch(arg)
    if m:
        return m.group(1) + ".pt"
    return os.path.abspath(arg)


def commit_message(
    run: str, name: str, epoch: int | None, metric_name: str | None, metric: float | None
) -> str:
    text = f"{run}: {name}"
    if epoch is not None:
        text += f" epoch {epoch}"
    if metric is not None:
        text += f" {metric_name or 'metric'}={metric:.4g}"
    return text


# -- the HTTP client ------------------------------------------------------------

# the client and the token: core.hub_client (shared with core.hub_pull)


class _ProgressReader(io.BufferedReader):
    """The staged file, read by huggingface_hub; once `report` is set each read tells it
    the absolute position (a retry seeks back to 0, and so does the bar)."""

    def __init__(self, path: str):
        super().__init__(io.FileIO(path, "rb"), buffer_size=1024 * 1024)
        self.total = os.fstat(self.fileno()).st_size
        self.report: Callable[[int, int], None] | None = None

    def read(self, size=-1):
        data = super().read(size)
        report = self.report
        if report is not None:
            report(self.tell(), self.total)
        return data

    def read1(self, size=-1):
        data = super().read1(size)
        report = self.report
        if report is not None:
            report(self.tell(), self.total)
        return data


def _throttled(progress: Callable[[int, int], None] | None) -> Callable[[int, int], None]:
    state = {"t": 0.0, "done": -1}

    def report(done: int, total: int) -> None:
        if progress is None:
            return
        t = time.monotonic()
        if done >= total or done < state["done"] or t - state["t"] >= PROGRESS_INTERVAL:
            state["t"], state["done"] = t, done
            try:
                progress(done, total)
            except Exception:  # a broken callback must not break the upload
                pass

    return report


# -- errors ---------------------------------------------------------------------


def _chain(exc: BaseException) -> list[BaseException]:
    seen, out = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _first_line(text: str, limit: int = 200) -> str:
    for line in str(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def scrub(text: str, token: str | None) -> str:
    """Remove the token (and anything shaped like one) and URL credentials from text."""
    if token:
        text = text.replace(token, "***")
    return redact(strip_userinfo(text))


def _status(exc) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def describe_error(
    exc: BaseException, *, repo: str, endpoint: str, timeout: float, attempts: int = 1
) -> str:
    """One line saying what went wrong and what to do (the token is scrubbed by the caller)."""
    try:
        from huggingface_hub.errors import (
            HfHubHTTPError,
            HFValidationError,
            OfflineModeIsEnabled,
            RepositoryNotFoundError,
        )
    except ImportError:  # pragma: no cover
        HfHubHTTPError = HFValidationError = OfflineModeIsEnabled = RepositoryNotFoundError = ()
    try:
        import httpx2

        net_timeout, net_error = httpx2.TimeoutException, httpx2.TransportError
    except ImportError:  # pragma: no cover
        net_timeout = net_error = ()
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, (_PushFailed, StagingError)):
            return str(e)
        if isinstance(e, HubTimeout):
            return f"the Hub did not answer within {e.timeout:g} s: try again later"
        if isinstance(e, net_timeout):
            return f"the Hub did not answer within {timeout:g} s: try again later"
        if isinstance(e, OfflineModeIsEnabled):
            return "HF_HUB_OFFLINE is set: unset it to push"
        if isinstance(e, RepositoryNotFoundError):
            return f"repo {repo} not found (404): check the name and that the token can see it"
        if isinstance(e, HfHubHTTPError):
            status = _status(e)
            server = _first_line(getattr(e, "server_message", None) or "")
            if status == 401:
                return "token rejected (401): check HF_TOKEN or run `hf auth login`"
            if status == 403:
                return f"no write access to {repo} (403): use a token with write access"
            if status == 404:
                return f"repo {repo} not found (404): check the name and that the token can see it"
            if status == 429:
                return "the Hub is rate-limiting this token (429): try again later"
            if status is not None and status >= 500:
                tries = f" ({attempts} tries)" if attempts > 1 else ""
                return f"the Hub failed with {status}{tries}: try again later"
            return f"the Hub refused the push ({status})" + (f": {server}" if server else "")
        if isinstance(e, HFValidationError):
            return f"bad repo name {repo}: {_first_line(str(e))}"
        if isinstance(e, net_error):
            reason = _first_line(str(e)) or type(e).__name__
            return f"cannot reach the Hub at {endpoint}: {reason}"
    for e in chain:
        if isinstance(e, ValueError) and "LFS" in str(e):
            return f"the Hub rejected the upload: {_first_line(str(e))}"
        if isinstance(e, OSError) and not isinstance(e, HfHubHTTPError):
            where = f" ({e.filename})" if getattr(e, "filename", None) else ""
            return f"{e.strerror or _first_line(str(e)) or type(e).__name__}{where}"
    return f"push failed: {type(exc).__name__}: {_first_line(str(exc))}"


def _transient(exc: BaseException) -> bool:
    """Worth another try: 5xx/429, or the connection refused/reset; never a timeout."""
    try:
        import httpx2
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:  # pragma: no cover
        return False
    for e in _chain(exc):
        if isinstance(e, HubTimeout):
            return False
        if isinstance(e, HfHubHTTPError):
            status = _status(e)
            return status is not None and (status >= 500 or status == 429)
        if isinstance(e, httpx2.TimeoutException):
            return False
        if isinstance(e, httpx2.TransportError):
            return True
    return False


def _retrying(fn, waits, sleep, counter: list[int]):
    waits = tuple(waits)
    for i in range(len(waits) + 1):
        counter[0] = i + 1
        try:
            return fn()
        except Exception as exc:
            if i >= len(waits) or not _transient(exc):
                raise
            sleep(waits[i])
    raise AssertionError("unreachable")  # pragma: no cover


# -- the push ---------------------------------------------------------------------


def _iso(ts: float) -> str:
    return (
        datetime.fromtimestamp(ts, timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def push(
    req: PushRequest,
    settings,
    *,
    progress: Callable[[int, int], None] | None = None,
    now: Callable[[], float] = time.time,
    endpoint: str | None = None,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    settle_s: float = 2.0,
    tries: int = 5,
    retry_waits: Iterable[float] = RETRY_WAITS,
    on_phase: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    force: bool = False,
) -> PushResult:
    """Push one checkpoint (or only the artifacts) of one run; see the module doc.

    Never raises: the outcome is the PushResult, and a record is appended to
    <run>/.rgpu/pushes.jsonl. progress(bytes_done, bytes_total) reports the upload of
    the checkpoint (throttled to ~10 per second, absolute positions); on_phase(name)
    says what it is doing: "settling", "staging", "connecting", "uploading".
    force: push even when the last successful push of this file had the same sha256."""
    started = now()
    run_dir = os.path.abspath(req.run_dir)
    run = os.path.basename(run_dir.rstrip(os.sep))
    repo = (settings.hub_repo or "").strip()
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    report = _throttled(progress)
    record: dict = {
        "time": _iso(started),
        "file": None,
        "sha256": None,
        "size": None,
        "epoch": None,
        "metric_name": None,
        "metric": None,
        "repo": repo or None,
        "path": None,
        "endpoint": strip_userinfo(endpoint),  # never a user:password@ in a record
        "commit_url": None,
        "outcome": "error",
        "error": None,
        "notices": [],
    }
    staged: Staged | None = None
    attempts = [0]

    def phase(name: str) -> None:
        if on_phase is not None:
            try:
                on_phase(name)
            except Exception:
                pass

    try:
        is_artifacts = req.file == ARTIFACTS_REQUEST
        name, src = (ARTIFACTS_REQUEST, None) if is_artifacts else resolve(run_dir, req.file)
        record["file"] = name
        target = push_target(settings, run_dir, name)  # what the push dialogs show, too
        if target.repo_problem:
            raise _PushFailed(target.repo_problem)
        if not os.path.isdir(run_dir):
            raise _PushFailed(f"{run_dir}: no such run directory")
        if not is_artifacts:
            epoch, metric_name, metric = checkpoint_epoch_metric(run_dir, name)
            record.update(epoch=epoch, metric_name=metric_name, metric=metric)
        if target.path_problem:
            raise _PushFailed(target.path_problem)
        path_in_repo, prefix = target.path, target.folder
        record["path"] = path_in_repo
        if not is_artifacts:
            if not os.path.exists(src):
                raise _PushFailed(f"{name}: no such file in {os.path.dirname(src)}")
            problem = checkpoint_problem(run_dir, src, name)
            if problem:
                raise _PushFailed(problem)
        token = token or _get_token()
        if not token:
            raise _PushFailed(NO_TOKEN)

        if not is_artifacts:
            phase("settling")
            copying = [False]

            def copy_started(done: int, total: int) -> None:
                if not copying[0]:
                    copying[0] = True
                    phase("staging")

            try:
                private_dir(staging_dir(run_dir), run_dir)  # .rgpu/ and staging/: 0700
            except OSError as exc:
                why = exc.strerror or exc
                raise _PushFailed(f"cannot create {staging_dir(run_dir)}: {why}") from None
            staged = stage(
                src, staging_dir(run_dir), settle_s=settle_s, tries=tries,
                progress=copy_started, within=run_dir,
            )  # fmt: skip
            record.update(sha256=staged.sha256, size=staged.size)
        artifacts, record["notices"] = read_artifacts(run_dir)
        if is_artifacts:
            if not artifacts:
                raise _PushFailed(f"no artifacts to push in {run_dir}")
            record.update(
                sha256=artifacts_digest(artifacts), size=sum(len(d) for _, d in artifacts)
            )

        previous = _last_ok(run_dir, name, repo, record["path"], record["endpoint"])
        if not force and previous is not None and previous.get("sha256") == record["sha256"]:
            record["outcome"] = "skipped"
            record["commit_url"] = previous.get("commit_url")
            return _finish(run_dir, record, skipped=True)

        phase("connecting")
        _configure_hub(timeout)
        from huggingface_hub import CommitOperationAdd, HfApi

        api = HfApi(endpoint=endpoint, token=token)
        message = commit_message(
            run, name if not is_artifacts else "artifacts", record["epoch"],
            record["metric_name"], record["metric"],
        )  # fmt: skip

        def create_repo():
            return api.create_repo(repo, private=True, exist_ok=True, repo_type="model")

        def commit():
            with contextlib.ExitStack() as stack:
                ops = []
                if staged is not None:
                    reader = stack.enter_context(_ProgressReader(staged.path))
                    op = CommitOperationAdd(path_in_repo=path_in_repo, path_or_fileobj=reader)
                    if op.upload_info.sha256.hex() != staged.sha256:
                        raise _PushFailed(f"the staged copy of {name} changed on disk")
                    reader.report = report
                    ops.append(op)
                for art_name, data in artifacts:
                    art_path = f"{prefix}/{art_name}" if prefix else art_name
                    ops.append(CommitOperationAdd(path_in_repo=art_path, path_or_fileobj=data))
                phase("uploading")
                return api.create_commit(
                    repo, ops, commit_message=message, repo_type="model", num_threads=1
                )

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _retrying(create_repo, retry_waits, sleep, attempts)
            info = _retrying(commit, retry_waits, sleep, attempts)
        record["commit_url"] = strip_userinfo(str(info.commit_url))
        record["outcome"] = "ok"
        if record["size"] is not None:
            report(record["size"], record["size"])
        return _finish(run_dir, record)
    except Exception as exc:
        message = describe_error(
            exc, repo=repo or "?", endpoint=endpoint, timeout=timeout, attempts=attempts[0]
        )
        record["error"] = scrub(message, token)
        record["outcome"] = "error"
        return _finish(run_dir, record)
    except BaseException as exc:  # Ctrl-C, SIGTERM in the CLI: record it, then stop
        if isinstance(exc, Interrupted) and exc.args:
            how = exc.args[0]
        else:
            how = "SIGINT" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__
        record["error"], record["outcome"] = f"interrupted by {how}", "error"
        _finish(run_dir, record)
        raise
    finally:
        if staged is not None:
            staged.remove()


def _last_ok(run_dir: str, name: str, repo: str, path: str | None, endpoint: str) -> dict | None:
    for record in reversed(read_pushes(run_dir)):
        if (
            record.get("outcome") == "ok"
            and record.get("file") == name
            and record.get("repo") == repo
            and record.get("path") == path
            and record.get("endpoint", endpoint) == endpoint
        ):
            return record
    return None


def _finish(run_dir: str, record: dict, skipped: bool = False) -> PushResult:
    if os.path.isdir(run_dir):
        try:
            append_push_record(run_dir, record)
        except (OSError, ValueError):
            pass  # the push itself is what matters; the record is best effort
    return PushResult(
        ok=record["outcome"] in ("ok", "skipped"),
        skipped_unchanged=skipped,
        repo=record["repo"] or "",
        path=record["path"],
        commit_url=record["commit_url"],
        sha256=record["sha256"],
        size=record["size"],
        epoch=record["epoch"],
        metric_name=record["metric_name"],
        metric=record["metric"],
        error=record["error"],
        file=record["file"],
        notices=tuple(record["notices"]),
    )


# -- the queue --------------------------------------------------------------------


def _key(req: PushRequest) -> tuple[str, str]:
    return os.path.abspath(req.run_dir), req.file


class PushQueue:
    """One upload at a time in a daemon thread. A request for a (run_dir, file) that
    is already queued (not started) replaces it in place.

    on_event(PushEvent) is called, in order, from one background thread (never the
    caller's): "queued" then "started", "progress"..., "finished" for each request.
    `settings` may be reassigned; each push reads it when it starts."""

    def __init__(
        self,
        settings,
        on_event: Callable[[PushEvent], None],
        *,
        push_fn: Callable[..., PushResult] | None = None,
        **push_kwargs,
    ):
        self.settings = settings
        self._on_event = on_event
        self._push = push_fn or push
        self._kwargs = push_kwargs
        self._cond = threading.Condition()
        self._queue: list[PushRequest] = []
        self._current: PushRequest | None = None
        self._closed = False
        self._worker: threading.Thread | None = None
        self._events: list[PushEvent | None] = []
        self._events_cond = threading.Condition()
        self._dispatcher: threading.Thread | None = None

    # -- public
    def submit(self, req: PushRequest) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the push queue is closed")
            key = _key(req)
            for i, queued in enumerate(self._queue):
                if _key(queued) == key:
                    self._queue[i] = req
                    break
            else:
                self._queue.append(req)
            self._emit(PushEvent("queued", req))
            self._start_threads()
            self._cond.notify_all()

    def pending(self) -> list[PushRequest]:
        """Queued requests, not the one being pushed."""
        with self._cond:
            return list(self._queue)

    def current(self) -> PushRequest | None:
        with self._cond:
            return self._current

    def busy(self) -> bool:
        with self._cond:
            return self._current is not None or bool(self._queue)

    def close(self, timeout: float | None = None) -> bool:
        """Drop queued requests, wait up to `timeout` for the running push and the
        events. True when everything finished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()
            worker = self._worker
        if worker is not None:
            worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with self._events_cond:
            self._events.append(None)
            self._events_cond.notify_all()
            dispatcher = self._dispatcher
        if dispatcher is not None:
            dispatcher.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t is not None and t.is_alive() for t in (worker, dispatcher))

    # -- threads
    def _start_threads(self) -> None:
        if self._worker is None:
            self._dispatcher = threading.Thread(
                target=self._dispatch, name="rgpu-push-events", daemon=True
            )
            self._dispatcher.start()
            self._worker = threading.Thread(target=self._work, name="rgpu-push", daemon=True)
            self._worker.start()

    def _emit(self, event: PushEvent) -> None:
        with self._events_cond:
            self._events.append(event)
            self._events_cond.notify_all()

    def _dispatch(self) -> None:
        while True:
            with self._events_cond:
                while not self._events:
                    self._events_cond.wait()
                event = self._events.pop(0)
            if event is None:
                return
            try:
                self._on_event(event)
            except Exception:
                pass

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                req = self._queue.pop(0)
                self._current = req
                self._emit(PushEvent("started", req))
            phase_now = [None]

            def on_phase(name: str, req=req, phase_now=phase_now) -> None:
                phase_now[0] = name
                self._emit(PushEvent("progress", req, 0, 0, phase=name))

            def on_progress(done: int, total: int, req=req, phase_now=phase_now) -> None:
                self._emit(PushEvent("progress", req, done, total, phase=phase_now[0]))

            try:
                result = self._push(
                    req, self.settings, progress=on_progress, on_phase=on_phase, **self._kwargs
                )
            except Exception as exc:  # push() never raises; a stand-in might
                result = PushResult(
                    ok=False, skipped_unchanged=False, repo=self.settings.hub_repo or "",
                    path=None, commit_url=None, sha256=None, size=None, epoch=None,
                    metric_name=None, metric=None, error=f"push failed: {type(exc).__name__}",
                    file=req.file,
                )  # fmt: skip
            with self._cond:
                self._current = None
                self._emit(PushEvent("finished", req, result=result))


# -- automatic pushes ---------------------------------------------------------------


@dataclass
class AutoPushState:
    """What auto_push_requests has seen of one run (keep one per run)."""

    primed: bool = False
    best_epoch: int | None = None
    best_file: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) of best.pt
    epochs: set[int] = field(default_factory=set)


def _record_time(record: dict | None) -> float:
    text = str((record or {}).get("time") or "")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")  # unknown: do not push because of it


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
    row's best_epoch changes. "period": each epoch_N.pt not seen before. The first call
    only notes what exists, unless a push record of this run shows it was pushed before
    (then what came since is pushed) or catch_up is True (then what has not been pushed
    yet is). Mutates `state`. A push of an unchanged file is skipped cheaply, so an
    extra request (a rewrite seen twice) costs a copy, not a commit."""
    mode = getattr(settings, "auto_push", "off")
    if mode not in ("best", "period"):
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
    epochs = sorted(int(m.group(1)) for n in names if (m := EPOCH_FILE_RE.fullmatch(n)))
    if not state.primed:
        state.primed = True
        pushed = [
            int(m.group(1))
            for r in read_pushes(run_dir)
            if r.get("outcome") == "ok" and (m := EPOCH_FILE_RE.fullmatch(str(r.get("file"))))
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
