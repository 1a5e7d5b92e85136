"""Where a push goes: the Hub repo and the path in it, or why it cannot go anywhere.

`push_target` is the one place that turns the settings (`hub_repo`, `hub_path` with {run}
and {file}) into a target: the push (core.hub.push) uses it, and the push dialogs show what it
says (carried in the Snapshot's selected run), so the path a dialog shows is the path
that is pushed.
"""

from __future__ import annotations

import os
import re

from ..model.snapshot import PushTarget

ARTIFACTS_REQUEST = "artifacts"  # PushRequest.file for "the small artifacts only"
NO_REPO = (
    "no Hub repo: set hub_repo (--hub-repo ORG/NAME, RGPU_HUB_REPO, or hub_repo in the config)"
)

_REPO_RE = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


class TargetError(ValueError):
    """A hub_path that gives no usable path; str(error) is the line to show."""


def repo_problem(repo: str) -> str | None:
    """Why `repo` cannot be pushed to (unset, or not ORG/NAME); None when it can."""
    if not repo:
        return NO_REPO
    if not _REPO_RE.fullmatch(repo):
        return f"bad Hub repo {repo!r}: must look like ORG/NAME"
    return None


def repo_path(hub_path: str, run: str, file: str) -> str:
    """hub_path with {run} and {file} filled in; raises TargetError when it is not a
    usable relative path."""
    path = hub_path.replace("{run}", run).replace("{file}", file)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or path.startswith("/"):
        raise TargetError(f"hub_path {hub_path!r} gives {path!r}, not a path inside the repo")
    return "/".join(parts)


def push_target(settings, run_dir: str, name: str) -> PushTarget:
    """Where pushing checkpoint `name` ("best.pt"), or ARTIFACTS_REQUEST, of the run in
    run_dir goes, by settings.hub_repo and settings.hub_path."""
    repo = (getattr(settings, "hub_repo", None) or "").strip()
    run = os.path.basename(os.path.abspath(run_dir).rstrip(os.sep))
    artifacts = name == ARTIFACTS_REQUEST
    try:
        full = repo_path(settings.hub_path, run, "x" if artifacts else name)
    except TargetError as exc:
        return PushTarget(repo, None, "", repo_problem(repo), str(exc))
    folder = full.rpartition("/")[0]
    path = (folder or ".") if artifacts else full
    return PushTarget(repo, path, folder, repo_problem(repo))
