"""The files of a run that a push reads: the small artifacts, metrics.jsonl, the checkpoint.

A run directory is untrusted input. A push reads only what lies inside the run (a symlink
that resolves elsewhere is skipped: `core.run.runpath`) and only regular files, opened without
blocking (`core.base.safeio`: a FIFO never hangs a push). What is skipped, and why, comes back
as notices: one line each, to record and show.
"""

from __future__ import annotations

import hashlib
import os

from ..base.safeio import NotRegularFile, open_regular, read_fd
from .runpath import fd_outside_run, outside_run

ARTIFACTS = ("status.json", "metrics.jsonl", "results.csv", "summary.json", "train_config.yaml")
ARTIFACT_MAX_BYTES = 64 * 1024 * 1024


def outside_notice(name: str, real: str) -> str:
    return f"{name} resolves to {real}, outside the run directory"


def _open_in_run(run_dir: str, path: str, name: str) -> int:
    """A descriptor of the regular file `path`, checked to lie inside `run_dir`; raises
    OSError (FileNotFoundError, NotRegularFile, ...) or _Outside."""
    real = outside_run(run_dir, path)
    if real is not None:
        raise _Outside(outside_notice(name, real))
    fd = open_regular(path)
    real = fd_outside_run(run_dir, fd)
    if real is not None:  # swapped for a symlink between the check and the open
        os.close(fd)
        raise _Outside(outside_notice(name, real))
    return fd


class _Outside(Exception):
    pass


def checkpoint_problem(run_dir: str, path: str, name: str) -> str | None:
    """Why the checkpoint at `path` cannot be pushed (outside the run, not a regular file),
    in one line; None when it can be tried (a missing file is the caller's message)."""
    real = outside_run(run_dir, path)
    if real is not None:
        return outside_notice(name, real) + ": not pushed"
    try:
        fd = open_regular(path)
    except NotRegularFile:
        return f"{name} is not a regular file"
    except OSError:
        return None
    os.close(fd)
    return None


def read_artifacts(run_dir: str) -> tuple[list[tuple[str, bytes]], list[str]]:
    """((name, bytes) of each small artifact that exists, notices). Each is read once (so
    hashing and sending see the same bytes); metrics.jsonl is cut after its last complete
    line. An artifact outside the run, not a regular file, unreadable or over 64 MB is
    skipped with a notice; a missing one is simply not there."""
    out, notices = [], []
    for name in ARTIFACTS:
        path = os.path.join(run_dir, name)
        if not os.path.lexists(path):
            continue
        try:
            fd = _open_in_run(run_dir, path, name)
        except _Outside as exc:
            notices.append(f"{exc} (skipped)")
            continue
        except FileNotFoundError:
            continue
        except OSError as exc:
            notices.append(f"{name} skipped: {exc.strerror or exc}")
            continue
        try:
            data = _read_fd(fd, ARTIFACT_MAX_BYTES)
        except OSError as exc:
            notices.append(f"{name} skipped: {exc.strerror or exc}")
            continue
        finally:
            os.close(fd)
        if data is None or len(data) > ARTIFACT_MAX_BYTES:
            notices.append(f"{name} skipped: larger than {ARTIFACT_MAX_BYTES >> 20} MB")
            continue
        if name == "metrics.jsonl" and data and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
        if data:
            out.append((name, data))
    return out, notices


def _read_fd(fd: int, limit: int) -> bytes | None:
    """The file's bytes; None when it holds more than `limit` (it may grow while read)."""
    if os.fstat(fd).st_size > limit:
        return None
    data = read_fd(fd, limit)
    return None if len(data) > limit else data


def artifacts_digest(artifacts: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for name, data in artifacts:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()
