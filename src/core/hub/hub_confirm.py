"""Does the Hub have this file at that path now? The one check autostop (core.hub.weights_safety,
before the machine is stopped) and push (core.hub.push, before a push is skipped as
unchanged) make.

`lookup_on_hub(weights)` asks, for each file, the repo and path its push record names, at
the repo's head (one paths-info request per repo): its LFS sha256 (or the git blob sha1 of
a file kept in git) must be the one on disk. Each file comes back as:

- "confirmed": the Hub has that very file there;
- "missing": no such path or repo (deleted, or invisible to this token), a token the Hub
  refuses, a record naming another endpoint than the one asked (a run directory is
  untrusted: the token never goes where a record says), or no usable repo and path;
- "different": another file is at that path;
- "unchecked": the Hub could not be asked (no network, a timeout, a 5xx or 429,
  HF_HUB_OFFLINE set); `HubCheck.unreachable` says why.

Never raises.
"""

from __future__ import annotations

import hashlib
import os
import warnings

from ..base.safeio import open_regular
from ..base.urls import strip_userinfo
from ..base.values import value_text
from .weights_safety import HubCheck, HubFile, RunWeights

CHUNK = 1 << 20
URL_MAX = 2048  # characters of a push record's endpoint
_TRUE = ("1", "on", "yes", "true")


def offline() -> bool:
    """HF_HUB_OFFLINE is set (as huggingface_hub reads it), in the environment or at its
    import."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover
        return False


def lookup_on_hub(
    weights: list[RunWeights],
    *,
    token: str | None = None,
    endpoint: str | None = None,
    timeout: float | None = None,
) -> HubCheck:
    """What the Hub has of each file (see the module doc). `endpoint`: the Hub asked (default
    HF_ENDPOINT, else huggingface.co); a record naming another one is not believed."""
    from ..run.hub_target import repo_problem
    from .hub_client import DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, configure_hub, get_token
    from .hub_errors import describe_error, scrub

    token = token or get_token()
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    ours = strip_userinfo(endpoint)
    groups: dict[str, list[RunWeights]] = {}
    files: list[HubFile] = []
    for w in weights:
        record = w.record or {}
        theirs = value_text(record.get("endpoint") or ours, URL_MAX).rstrip("/")
        repo = record.get("repo")
        if theirs != ours:
            detail = f"pushed to {theirs}, not to {ours} (HF_ENDPOINT), which this watcher asks"
            files.append(HubFile(w, "missing", detail))
        elif not isinstance(repo, str) or repo_problem(repo) or not record.get("path"):
            files.append(HubFile(w, "missing", "its push record names no usable repo and path"))
        else:
            groups.setdefault(repo, []).append(w)
    unreachable = None
    if groups and offline():
        unreachable = "HF_HUB_OFFLINE is set: the Hub is not asked"
        for group in groups.values():
            files.extend(HubFile(w, "unchecked", unreachable) for w in group)
        return HubCheck(0.0, tuple(files), unreachable)
    for repo, group in groups.items():
        try:
            configure_hub(timeout)
            from huggingface_hub import HfApi

            api = HfApi(endpoint=endpoint, token=token)
            paths = [str(w.record.get("path")) for w in group]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                entries = api.get_paths_info(repo, paths, repo_type="model")
            found = {getattr(e, "path", None): e for e in entries}
            files.extend(_compare(w, found.get(str(w.record.get("path"))), repo) for w in group)
        except Exception as exc:
            why = scrub(describe_error(exc, repo=repo, endpoint=ours, timeout=timeout), token)
            if _not_found(exc):
                why = f"{repo} is not on the Hub (deleted, or this token cannot see it)"
            elif _unreachable(exc):
                unreachable = why
                files.extend(HubFile(w, "unchecked", why) for w in group)
                continue
            else:
                why = f"cannot check {repo}: {why}"
            files.extend(HubFile(w, "missing", why) for w in group)
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


def _unreachable(exc: BaseException) -> bool:
    """The Hub could not be asked: no network, a timeout, a 5xx or 429, offline mode (as
    opposed to an answer: 401, 403, 404, a bad request)."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    from .hub_client import HubLimit, HubTimeout

    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (HubTimeout, HubLimit, OfflineModeIsEnabled, httpx2.TransportError)):
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
