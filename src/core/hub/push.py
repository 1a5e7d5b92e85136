"""Pushing checkpoints to the Hugging Face Hub: never a torn file, never a lost one.

A push is one commit to `settings.hub_repo` (created private when missing) that
holds one checkpoint of one run, at `settings.hub_path` with {run} and {file}
filled in, plus the run's small artifacts that exist (status.json,
metrics.jsonl, results.csv, summary.json, train_config.yaml) beside it. The
checkpoint is first staged (`core.hub.staging`): a private, verified copy of one
complete version, uploaded from a file object that reports its position, and
removed afterwards whatever happened. Pushing a file whose staged sha256 equals
the last successful push of that file to that repo path makes no commit when the
Hub still has that very file there (asked first: core.hub.hub_confirm, the check
autostop makes); when it does not, or cannot be asked, a notice says so and it
is pushed.

Every attempt appends one JSON line to `<run>/.rgpu/pushes.jsonl`.

The token is read the standard huggingface_hub way (HF_TOKEN, or the stored
login) and never printed, recorded, logged or put in an error message.

Network behaviour: an httpx client with connect/read/write timeouts is
installed through `huggingface_hub.set_client_factory` (core.hub.hub_client); a
timeout ends the push at once with "the Hub did not answer within N s"
(huggingface_hub would retry it five times). huggingface_hub retries preupload,
the LFS batch, the PUT and the verify by itself; repo creation and the commit are
retried here (core.hub.hub_errors.retrying: transient errors only, 5xx, 429,
connection refused/reset, with waits of 1 s and 2 s).

`push()` never raises. It is blocking: call it from a worker thread, or use
`core.hub.push_queue.PushQueue` (one upload at a time in a daemon thread, events in
order). Pushes in one process share one HTTP client: run them one at a time (the
queue does).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from ..base.private import private_dir
from ..base.urls import strip_userinfo
from ..records.push_records import pushes_path, read_pushes
from ..records.records import append_json_line
from ..run.checkpoints import checkpoint_epoch_metric, checkpoint_rows, resolve
from ..run.hub_target import ARTIFACTS_REQUEST, push_target
from ..run.run_files import artifacts_digest, checkpoint_problem, read_artifacts
from .hub_client import DEFAULT_ENDPOINT, DEFAULT_TIMEOUT
from .hub_client import configure_hub as _configure_hub
from .hub_client import get_token as _get_token
from .hub_errors import RETRY_WAITS, PushFailed, describe_error, retrying, scrub
from .staging import Staged, stage

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


class Interrupted(BaseException):
    """Raised into a push by a signal handler (`rgpu-tui push` on SIGTERM): the push records
    "interrupted by <args[0]>", removes its staging copy and lets the exception go on."""


# -- records ------------------------------------------------------------------


def rgpu_dir(run_dir: str) -> str:
    return os.path.join(run_dir, ".rgpu")


def staging_dir(run_dir: str) -> str:
    return os.path.join(rgpu_dir(run_dir), "staging")


def append_push_record(run_dir: str, record: dict) -> None:
    """One complete JSON line (see core.records.records); read by core.records.push_records."""
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


# -- the upload's progress ----------------------------------------------------------


class _ProgressReader(io.BufferedReader):
    """The staged file, read by huggingface_hub; once `report` is set each read tells it
    the absolute position (a retry seeks back to 0, and so does the bar)."""

    def __init__(self, path: str):
        super().__init__(io.FileIO(path, "rb"), buffer_size=1024 * 1024)
        self.total = os.fstat(self.fileno()).st_size
        self.report: Callable[[int, int], None] | None = None

    def read(self, size=-1):
        return self._reported(super().read(size))

    def read1(self, size=-1):
        return self._reported(super().read1(size))

    def _reported(self, data: bytes) -> bytes:
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
            raise PushFailed(target.repo_problem)
        if not os.path.isdir(run_dir):
            raise PushFailed(f"{run_dir}: no such run directory")
        if not is_artifacts:
            epoch, metric_name, metric = checkpoint_epoch_metric(run_dir, name)
            record.update(epoch=epoch, metric_name=metric_name, metric=metric)
        if target.path_problem:
            raise PushFailed(target.path_problem)
        path_in_repo, prefix = target.path, target.folder
        record["path"] = path_in_repo
        if not is_artifacts:
            if not os.path.exists(src):
                raise PushFailed(f"{name}: no such file in {os.path.dirname(src)}")
            problem = checkpoint_problem(run_dir, src, name)
            if problem:
                raise PushFailed(problem)
        token = token or _get_token()
        if not token:
            raise PushFailed(NO_TOKEN)

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
                raise PushFailed(f"cannot create {staging_dir(run_dir)}: {why}") from None
            staged = stage(
                src, staging_dir(run_dir), settle_s=settle_s, tries=tries,
                progress=copy_started, within=run_dir,
            )  # fmt: skip
            record.update(sha256=staged.sha256, size=staged.size, file_mtime=staged.mtime)
            if staged.epoch is not None and staged.epoch != record["epoch"]:
                # rewritten since it was asked for (an epoch ended during the settle
                # wait): the record says what the bytes hold, the ask is kept apart
                record["asked_epoch"] = record["epoch"]
                record["epoch"] = staged.epoch
                record["metric_name"], record["metric"] = _metric_of(run_dir, staged.epoch)
        artifacts, record["notices"] = read_artifacts(run_dir)
        if is_artifacts:
            if not artifacts:
                raise PushFailed(f"no artifacts to push in {run_dir}")
            record.update(
                sha256=artifacts_digest(artifacts), size=sum(len(d) for _, d in artifacts)
            )

        previous = _last_ok(run_dir, name, repo, record["path"], record["endpoint"])
        if not force and previous is not None and previous.get("sha256") == record["sha256"]:
            phase("connecting")
            doubt = None if staged is None else _not_on_hub(
                run_dir, name, staged, previous, endpoint=endpoint, token=token, timeout=timeout
            )  # fmt: skip
            if doubt is None:  # the Hub has it there: nothing to do
                record["outcome"] = "skipped"
                record["commit_url"] = previous.get("commit_url")
                return _finish(run_dir, record, skipped=True)
            record["notices"].append(doubt)

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
                        raise PushFailed(f"the staged copy of {name} changed on disk")
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
            retrying(create_repo, retry_waits, sleep, attempts)
            info = retrying(commit, retry_waits, sleep, attempts)
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


def _metric_of(run_dir: str, epoch: int) -> tuple[str | None, float | None]:
    """The metric of `epoch` by the metrics rows (its last row), read now."""
    got = checkpoint_rows(run_dir).by_epoch.get(epoch)
    return got if got is not None else (None, None)


def _not_on_hub(
    run_dir: str, name: str, staged: Staged, previous: dict, *, endpoint: str, token: str,
    timeout: float,
) -> str | None:  # fmt: skip
    """None when the Hub has this very file where its last push put it (the check autostop
    makes, core.hub.hub_confirm); else why it is pushed again, in one line."""
    from .hub_confirm import lookup_on_hub
    from .weights_safety import SAFE, FileKey, RunWeights

    key = FileKey(staged.path, 0, 0, staged.size, 0, 0)
    label = os.path.basename(run_dir.rstrip(os.sep))
    w = RunWeights(run_dir, label, name, key, SAFE, "", staged.sha256, previous)
    check = lookup_on_hub([w], token=token, endpoint=endpoint, timeout=timeout)
    [found] = check.files
    if found.status == "confirmed":
        return None
    if check.unreachable:
        return f"cannot confirm {name} on the Hub ({check.unreachable}): pushing it again"
    return (
        f"{name} is unchanged since its last push, but the Hub disagrees ({found.detail}): "
        "pushing it again"
    )


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
