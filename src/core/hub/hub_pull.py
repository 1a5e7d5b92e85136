"""Pulling a run's files back from the Hugging Face Hub: verified, never torn, never clobbering.

`pull(repo, run, ...)` downloads what pushes put in `repo` for the run named `run` (by
`hub_path`, as core.hub.push placed it: the checkpoint at hub_path with {run} and {file} filled
in, the small artifacts beside it) into `<to_dir>/<run>/` in libreyolo's layout:
`weights/best.pt`, `weights/last.pt`, `weights/epoch_N.pt`, and status.json, metrics.jsonl,
results.csv, summary.json, train_config.yaml at the top of the run directory.

`which`: "best" (best.pt; last.pt, with a notice, when the repo has no best.pt for the
run), "last", or "all" (best.pt, last.pt, every epoch_N.pt and the artifacts).

Every file is pinned to one commit (the repo's head when the pull starts) and verified
the way huggingface_hub's `verify_repo_checksums` does: against the LFS sha256 the Hub
lists for the file (a checkpoint), or its git blob sha1 (a small text file the Hub keeps
in git). The bytes go to a private (0600) temporary file in the target directory, hashed
as they arrive, and are `os.replace`d to the real name only when size and hash match (and a
checkpoint is a complete torch checkpoint, core.run.torch_checkpoint: a torn file pushed by
another tool never replaces a good one): a mismatch, a broken-off download or an
interruption leaves nothing under the real name (and removes the temporary file). A local
file with the same content is left alone ("already here"); a different one is replaced only
with `force`.

The token is read the huggingface_hub way (core.hub.hub_client; a public repo needs none) and
never printed, recorded or put in an error message; URLs shown lose their credentials.
`pull()` never raises for a Hub or file problem: the outcome is the PullResult. Arguments
that cannot work (a bad repo or run name, a hub_path pull cannot read back) raise
PullArgumentError before any request.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from ..base.safeio import NotRegularFile, open_regular
from ..base.urls import strip_userinfo
from ..base.values import shown
from ..run.checkpoints import EPOCH_FILE_RE, file_epoch
from ..run.hub_target import repo_path
from ..run.run_files import ARTIFACTS
from ..run.torch_checkpoint import check_checkpoint
from .hub_client import DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, bounded, configure_hub, get_token
from .hub_errors import describe_pull_error, scrub

WHICH = ("best", "last", "all")
DOWNLOADED, ALREADY_HERE, ERROR = "downloaded", "already here", "error"
CHUNK = 1 << 20
RUNS_SHOWN = 10  # runs named when RUN is not in the repo
DOWNLOAD_RETRIES = 2  # a 429 or 5xx on a file GET; never a timeout
LISTED_MAX = 20_000  # entries of one listing (a run's folder holds a few hundred at most)
LISTING_MAX_BYTES = 32 * 1024 * 1024  # one answer of the Hub before the downloads

# the same shape core.run.hub_target and core.base.config accept
_REPO_RE = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


class PullArgumentError(ValueError):
    """The arguments cannot work; raised before any request (the CLI exits 2)."""


class _PullFailed(Exception):
    """The whole pull failed; the message is the one line to show."""


class _FileFailed(Exception):
    """This file failed (a mismatch, a refusal, a local error); the pull goes on."""


@dataclass(frozen=True)
class PulledFile:
    rel: str  # "weights/best.pt", "status.json": where it goes in the run directory
    path: str  # the local path
    repo_path: str
    size: int | None
    sha256: str | None
    outcome: str  # DOWNLOADED | ALREADY_HERE | ERROR
    error: str | None = None
    verified_by: str | None = None  # "sha256" (LFS) | "git-sha1" (a file kept in git)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "rel": self.rel,
            "repo_path": self.repo_path,
            "size": self.size,
            "sha256": self.sha256,
            "verified_by": self.verified_by,
            "outcome": self.outcome,
            "error": self.error,
        }


@dataclass(frozen=True)
class PullResult:
    repo: str
    run: str
    run_dir: str
    which: str
    endpoint: str
    revision: str | None = None
    files: tuple[PulledFile, ...] = ()
    notices: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(f.outcome != ERROR for f in self.files)

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "repo": self.repo,
            "run": self.run,
            "dir": self.run_dir,
            "file": self.which,
            "endpoint": self.endpoint,
            "revision": self.revision,
            "files": [f.to_json() for f in self.files],
            "notices": list(self.notices),
            "error": self.error,
        }


# -- where a push put a run's files ---------------------------------------------------


@dataclass(frozen=True)
class _Wanted:
    name: str  # best.pt, epoch_3.pt, status.json
    rel: str
    repo_path: str
    size: int
    algo: str  # "sha256" | "git-sha1"
    digest: str


@dataclass
class _Layout:
    """The repo paths of one run's files under one hub_path."""

    hub_path: str
    run: str
    directory: str = ""  # where the run's checkpoints and artifacts lie ("" = the root)
    names: dict[str, str] = field(default_factory=dict)  # repo path -> file name
    epoch: re.Pattern | None = None  # matches the base name of an epoch_N.pt
    shared: bool = False  # the folder holds every run's artifacts: none are this run's

    def artifact_paths(self) -> set[str]:
        return {f"{self.directory}/{a}" if self.directory else a for a in ARTIFACTS}

    def name_of(self, path: str) -> str | None:
        if path in self.names:
            return self.names[path]
        head, _, base = path.rpartition("/")
        if self.epoch is not None and head == self.directory:
            m = self.epoch.fullmatch(base)
            if m and len(set(m.groups())) == 1:
                return f"epoch_{m.group(1)}.pt"  # the digits as pushed
        return None


def _template_regex(text: str, file_regex: str) -> str:
    """`text` (one hub_path segment) as a regex: {run} -> a run name (the same one each
    time it appears), {file} -> file_regex, the rest literal."""
    out, seen_run = [], False
    for part in re.split(r"(\{run\}|\{file\})", text):
        if part == "{run}":
            out.append("(?P=run)" if seen_run else "(?P<run>[^/]+?)")
            seen_run = True
        elif part == "{file}":
            out.append(file_regex)
        else:
            out.append(re.escape(part))
    return "".join(out)


def _segments(hub_path: str) -> list[str]:
    return [p for p in hub_path.replace("\\", "/").split("/") if p not in ("", ".")]


def layout(hub_path: str, run: str) -> _Layout:
    """Where pushes of `run` put its files; PullArgumentError when pull cannot tell."""
    segments = _segments(hub_path)
    if "{file}" not in hub_path:
        raise PullArgumentError(
            f"hub_path {hub_path!r} has no {{file}}: every checkpoint went to one path, "
            "pull cannot tell them apart"
        )
    if any("{file}" in s for s in segments[:-1]):
        raise PullArgumentError(
            f"hub_path {hub_path!r} puts {{file}} in a folder name: pull needs it in the "
            "last part (like {run}/{file})"
        )
    try:
        probe = repo_path(hub_path, run, "x")
        names = {repo_path(hub_path, run, n): n for n in ("best.pt", "last.pt")}
        base = repo_path(hub_path, run, "epoch_\0.pt").rpartition("/")[2]
    except Exception as exc:  # core.run.hub_target says what is wrong with it, in one line
        raise PullArgumentError(str(exc)) from None
    directory = probe.rpartition("/")[0]
    shared = not any("{run}" in s for s in segments[:-1])
    epoch = re.compile(r"(\d+)".join(re.escape(p) for p in base.split("\0")))
    where = _Layout(hub_path, run, directory, names, epoch, shared)
    if not shared:  # else every run's artifacts land on the same paths: not this run's
        for path in sorted(where.artifact_paths()):
            names.setdefault(path, path.rpartition("/")[2])
    return where


def check_arguments(repo: str, run: str, which: str) -> None:
    if not _REPO_RE.fullmatch(repo or ""):
        raise PullArgumentError(f"bad Hub repo {repo!r}: must look like ORG/NAME")
    if (
        not run
        or run in (".", "..")
        or "/" in run
        or "\\" in run
        or "\0" in run
        or run != run.strip()
    ):
        raise PullArgumentError(f"bad run name {run!r}: must be one directory name")
    if which not in WHICH:
        raise PullArgumentError(f"--file must be one of {', '.join(WHICH)}, not {which!r}")


# -- the pull ---------------------------------------------------------------------------


def pull(
    repo: str,
    run: str,
    *,
    hub_path: str = "{run}/{file}",
    to_dir: str = ".",
    which: str = "best",
    force: bool = False,
    endpoint: str | None = None,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    on_download: Callable[[str, int], None] | None = None,
) -> PullResult:
    """Pull `which` of `run` from `repo` into `<to_dir>/<run>/`; see the module doc.

    on_download(rel, size) is called before each file's download starts (not for a file
    that is already here). Raises PullArgumentError for arguments that cannot work."""
    check_arguments(repo, run, which)
    where = layout(hub_path, run)
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    run_dir = os.path.join(os.path.abspath(to_dir), run)
    token = token or get_token()
    shown_endpoint = strip_userinfo(endpoint)
    files: list[PulledFile] = []
    notices: list[str] = []
    revision = None

    def result(error: str | None = None) -> PullResult:
        return PullResult(
            repo=repo, run=run, run_dir=run_dir, which=which, endpoint=shown_endpoint,
            revision=revision, files=tuple(files), notices=tuple(notices),
            error=None if error is None else scrub(error, token),
        )  # fmt: skip

    try:
        configure_hub(timeout)
        from huggingface_hub import HfApi

        api = HfApi(endpoint=endpoint, token=token)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # what is there, as a whole within --timeout (pages that never end, a drip)
            with bounded(timeout, LISTING_MAX_BYTES, f"the Hub's listing of {repo}"):
                revision = api.repo_info(repo, repo_type="model").sha
                listed = _listing(api, repo, where.directory, revision)
                found = {}
                for path, entry in listed.items():
                    name = where.name_of(path)
                    if name is None:
                        continue
                    if _odd_epoch(name):
                        notices.append(f"skipped {shown(path, 60)}: its epoch is out of range")
                        continue
                    found[name] = entry
                if not found:
                    raise _PullFailed(_not_there(api, repo, run, hub_path, revision))
            wanted = _select(found, which, run, repo, notices)
            if which == "all" and where.shared and where.artifact_paths() & set(listed):
                notices.append(
                    f"artifacts not pulled: hub_path {hub_path!r} puts every run's artifacts "
                    "in one folder, so they may be another run's"
                )
            for want in wanted:
                files.append(
                    _pull_one(
                        api, repo, revision, want, run_dir, force=force, endpoint=endpoint,
                        token=token, on_download=on_download,
                    )
                )  # fmt: skip
        return result()
    except Exception as exc:
        return result(_describe(exc, repo=repo, endpoint=endpoint, timeout=timeout))


def _listing(api, repo: str, directory: str, revision: str | None) -> dict:
    """{path: RepoFile} of the files directly in `directory` at `revision`; {} when the
    folder (or any commit) is not there."""
    from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError
    from huggingface_hub.hf_api import RepoFile

    try:
        entries = api.list_repo_tree(
            repo, path_in_repo=directory or None, revision=revision, repo_type="model"
        )
        return {e.path: e for e in _capped(entries, repo, directory) if isinstance(e, RepoFile)}
    except (EntryNotFoundError, RevisionNotFoundError):
        return {}


def _capped(entries, repo: str, directory: str):
    """The entries of a listing, at most LISTED_MAX of them (pages that never end)."""
    for n, entry in enumerate(entries):
        if n >= LISTED_MAX:
            where = f"{repo}: {directory}" if directory else repo
            raise _PullFailed(
                f"the Hub lists more than {LISTED_MAX} entries in {where}: not a run's folder "
                "(pull stopped listing)"
            )
        yield entry


def _not_there(api, repo: str, run: str, hub_path: str, revision: str | None) -> str:
    """The line for a run the repo has nothing of, naming the runs it has when one more
    listing can tell (the folder that holds the {run} part of hub_path)."""
    line = f"run {run} is not in {repo} (no files at {repo_path(hub_path, run, '{file}')})"
    runs = _runs_in(api, repo, hub_path, revision)
    if runs:
        shown = ", ".join(runs[:RUNS_SHOWN])
        more = f" and {len(runs) - RUNS_SHOWN} more" if len(runs) > RUNS_SHOWN else ""
        line += f"; runs there: {shown}{more}"
    elif runs is not None:
        line += "; it holds no runs"
    return line


def _runs_in(api, repo: str, hub_path: str, revision: str | None) -> list[str] | None:
    """The run names pushes left in the repo (sorted); None when that cannot be told."""
    from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError
    from huggingface_hub.hf_api import RepoFile, RepoFolder

    segments = _segments(hub_path)
    index = next((i for i, s in enumerate(segments) if "{run}" in s), None)
    if index is None:
        return None
    last = index == len(segments) - 1
    pattern = re.compile(_template_regex(segments[index], r"(?:best|last|epoch_\d+)\.pt"))
    parent = "/".join(segments[:index])
    try:
        entries = api.list_repo_tree(
            repo, path_in_repo=parent or None, revision=revision, repo_type="model"
        )
        runs = set()
        for entry in _capped(entries, repo, parent):
            if not isinstance(entry, RepoFile if last else RepoFolder):
                continue
            m = pattern.fullmatch(entry.path.rpartition("/")[2])
            if m:
                runs.add(m.group("run"))
        return sorted(runs)
    except (EntryNotFoundError, RevisionNotFoundError):
        return []
    except Exception:  # the listing is a courtesy: the line stands without it
        return None


def _select(found: dict, which: str, run: str, repo: str, notices: list[str]) -> list[_Wanted]:
    def want(name: str) -> _Wanted:
        entry = found[name]
        rel = f"weights/{name}" if name.endswith(".pt") else name
        lfs = getattr(entry, "lfs", None)
        if lfs is not None and getattr(lfs, "sha256", None):
            return _Wanted(name, rel, entry.path, int(lfs.size), "sha256", lfs.sha256.lower())
        return _Wanted(name, rel, entry.path, int(entry.size), "git-sha1", entry.blob_id.lower())

    names = sorted(found, key=_order)
    has = ", ".join(names[:RUNS_SHOWN])
    if len(names) > RUNS_SHOWN:
        has += f" and {len(names) - RUNS_SHOWN} more"
    if which == "best":
        if "best.pt" in found:
            return [want("best.pt")]
        if "last.pt" in found:
            notices.append(f"{repo} has no best.pt for {run}: pulling last.pt")
            return [want("last.pt")]
        raise _PullFailed(f"{repo} has no best.pt or last.pt for {run} (it has {has})")
    if which == "last":
        if "last.pt" in found:
            return [want("last.pt")]
        raise _PullFailed(f"{repo} has no last.pt for {run} (it has {has})")
    return [want(name) for name in sorted(found, key=_order)]


def _odd_epoch(name: str) -> bool:
    """epoch_N.pt with an N out of the epoch range (core.run.checkpoints.file_epoch: 5000
    digits is not a number to parse)."""
    return EPOCH_FILE_RE.fullmatch(name) is not None and file_epoch(name) is None


def _order(name: str) -> tuple:
    n = file_epoch(name)
    if name in ("best.pt", "last.pt"):
        return (0, name, 0)
    if n is not None:
        return (1, "", n)
    return (2, name, 0)


# -- one file ---------------------------------------------------------------------------


def _hashers(want: _Wanted):
    """(sha256, the hasher that checks want's digest: the same sha256, or git's sha1)."""
    sha256 = hashlib.sha256()
    if want.algo == "sha256":
        return sha256, sha256
    return sha256, hashlib.sha1(b"blob %d\0" % want.size)


def _local_same(path: str, want: _Wanted) -> tuple[bool, str | None, str | None]:
    """(same content, its sha256 when same, why it is different) for the file at `path`.
    Reads it non-blocking and only if it is a regular file (a FIFO never hangs a pull)."""
    if os.path.isdir(path):
        raise _FileFailed(f"{path} is a directory")
    try:
        fd = open_regular(path)
    except NotRegularFile:
        return False, None, "not a regular file"
    except FileNotFoundError:
        return False, None, "a dangling symlink"
    except OSError as exc:
        return False, None, f"unreadable: {exc.strerror or exc}"
    try:
        if os.fstat(fd).st_size != want.size:
            return False, None, "a different size"
        sha256, check = _hashers(want)
        while chunk := os.read(fd, CHUNK):
            sha256.update(chunk)
            if check is not sha256:
                check.update(chunk)
    except OSError as exc:
        return False, None, f"unreadable: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if check.hexdigest() == want.digest:
        return True, sha256.hexdigest(), None
    return False, None, "different content"


def _pull_one(
    api, repo, revision, want: _Wanted, run_dir: str, *, force, endpoint, token, on_download
) -> PulledFile:
    """One file: already here, downloaded and verified, or an error for this file alone.
    A Hub or network error ends the whole pull (it is raised)."""
    path = os.path.join(run_dir, *want.rel.split("/"))

    def done(outcome: str, sha256: str | None = None, error: str | None = None) -> PulledFile:
        return PulledFile(
            rel=want.rel, path=path, repo_path=want.repo_path, size=want.size, sha256=sha256,
            outcome=outcome, error=None if error is None else scrub(error, token),
            verified_by=want.algo,
        )  # fmt: skip

    try:
        if os.path.lexists(path):
            same, sha256, why = _local_same(path, want)
            if same:
                return done(ALREADY_HERE, sha256)
            if not force:
                raise _FileFailed(
                    f"{want.rel} is already here with {why}: not replaced (--force replaces it)"
                )
        parent = os.path.dirname(path)
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise _FileFailed(f"cannot create {parent}: {exc.strerror or exc}") from None
        if on_download is not None:
            try:
                on_download(want.rel, want.size)
            except Exception:
                pass
        sha256 = _download(api, repo, revision, want, path, endpoint=endpoint, token=token)
        return done(DOWNLOADED, sha256)
    except _FileFailed as exc:
        return done(ERROR, error=str(exc))


def _download(api, repo, revision, want: _Wanted, path: str, *, endpoint, token) -> str:
    """Download `want` to a private temporary file beside `path`, check size and hash, and
    os.replace it to `path`; the sha256. Nothing is left under either name on failure."""
    import httpx2
    from huggingface_hub import hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
    from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, http_stream_backoff

    from .hub_client import HubTimeout

    url = hf_hub_url(repo, want.repo_path, revision=revision, endpoint=endpoint)
    headers = build_hf_headers(token=token)  # never logged: it holds the token
    directory, base = os.path.split(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".pull", dir=directory)  # 0600
    except OSError as exc:
        raise _FileFailed(f"cannot write in {directory}: {exc.strerror or exc}") from None
    placed = False
    try:
        sha256, check = _hashers(want)
        got = 0
        with os.fdopen(fd, "wb") as out:
            with http_stream_backoff(
                "GET", url, headers=headers, max_retries=DOWNLOAD_RETRIES,
                retry_on_exceptions=(), retry_on_status_codes=(429, 500, 502, 503, 504),
            ) as response:  # fmt: skip
                hf_raise_for_status(response)
                try:
                    for chunk in response.iter_bytes(CHUNK):
                        got += len(chunk)
                        if got > want.size:
                            raise _FileFailed(
                                f"{want.rel}: the Hub sent more than the {want.size} bytes it "
                                "lists: nothing written"
                            )
                        sha256.update(chunk)
                        if check is not sha256:
                            check.update(chunk)
                        out.write(chunk)
                except HubTimeout:
                    raise
                except httpx2.TransportError as exc:
                    raise _FileFailed(
                        f"{want.rel}: the download broke off ({type(exc).__name__}) before its "
                        f"{want.size} bytes came: nothing written; pull again"
                    ) from None
            out.flush()
            os.fsync(out.fileno())
        if got != want.size:
            raise _FileFailed(
                f"{want.rel}: got {got} of {want.size} bytes: nothing written; pull again"
            )
        if check.hexdigest() != want.digest:
            raise _FileFailed(
                f"{want.rel}: the download does not match the Hub's {want.algo} "
                f"({check.hexdigest()[:12]}... instead of {want.digest[:12]}...): nothing written"
            )
        if want.rel.endswith(".pt"):  # the one validity check (core.run.torch_checkpoint)
            torn = check_checkpoint(tmp, want.name).problem
            if torn is not None:
                raise _FileFailed(f"{want.rel} on the Hub: {torn}: nothing written")
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _FileFailed(f"cannot write {path}: {exc.strerror or exc}") from None
        placed = True
        return sha256.hexdigest()
    except OSError as exc:  # the disk (full, read-only); the Hub's errors are OSErrors too
        if isinstance(exc, (HfHubHTTPError, OfflineModeIsEnabled)):
            raise
        raise _FileFailed(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if not placed:
            try:
                os.unlink(tmp)
            except OSError:
                pass


# -- errors -----------------------------------------------------------------------------


def _describe(exc: BaseException, *, repo: str, endpoint: str, timeout: float) -> str:
    """One line for a failed pull: ours, else core.hub.hub_errors.describe_pull_error."""
    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, _PullFailed):
            return str(e)
        e = e.__cause__ or e.__context__
    return describe_pull_error(exc, repo=repo, endpoint=strip_userinfo(endpoint), timeout=timeout)
