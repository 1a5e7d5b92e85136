"""Is this process the run's? One rule for what a run reads as (`status`, the app: RUN or
DEAD) and for what `stop` may signal (core.launch.stop_target adds its own guards on top).

status.json is written by the trainer and is untrusted: its `pid` may name any process on
the machine (a reused pid, a buggy writer, a hostile one). The process with that pid is
the run's only when all of these hold:

- it is not an rgpu-tui process (a watcher, an agent, the fleet, the app: `is_rgpu_tui`),
  whatever status.json claims;
- it is alive (not gone, not a zombie);
- it started when the run did. When this machine's launcher started it, its start time
  must equal the one recorded in launches.jsonl (within CREATE_TIME_SLACK_S). Otherwise
  it must fall within the window around status.json's `started_at`: from START_BEFORE_S
  (10 min) before to START_AFTER_S after. libreyolo's process starts, imports torch and
  reads the dataset, then writes started_at, so the process is a little older than
  started_at; a pid reused later is younger, a process that ran for hours before (pid 1,
  sshd, a shell) is older. (pid 1 itself may be the run: a trainer started as a
  container's first process; `stop` never signals it.)

- it works in that run directory (given `run_dir`): its working directory, an argument of
  its command line (a path, or `key=path`, relative to its working directory; or libreyolo's
  `project=P name=N` pair) or one of its open files is the run directory or inside it. A
  pulled copy of a run beside its running original names the original's pid in its
  status.json: that process works in the original, so the copy is not running and `stop`
  on the copy signals nothing.

With neither start time known it cannot be told: the run reads as alive (the state says
what status.json says) and `stop` refuses (`verified` is False); so too when its working
directory, command line and open files cannot be read (another user's process).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

import psutil

from ..base.values import PIDS

START_BEFORE_S = 600.0  # the process may start up to 10 min before status.json's started_at
START_AFTER_S = 5.0  # ... and up to 5 s after it (started_at has one-second precision)
CREATE_TIME_SLACK_S = 2.0  # psutil's create_time recorded at launch vs. read again now
MAX_ARGS = 4096  # a command line's arguments looked at, at most
MAX_FILES = 4096  # open files looked at, at most

RGPU_TUI_NAMES = ("rgpu-tui",)
RGPU_TUI_MODULE = "rgpu_tui"


@dataclass(frozen=True)
class ProcessCheck:
    alive: bool  # the run's process is alive (or cannot be told apart: see `verified`)
    reason: str | None = None  # why it is not the run's live process
    gone: bool = False  # no process has that pid any more (or it is a zombie)
    verified: bool = False  # alive and its start time matched the run's
    proc: psutil.Process | None = None
    elsewhere: bool = False  # alive, started with the run, but works in another directory


def clock(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).astimezone().strftime("%H:%M:%S")


def is_rgpu_tui(proc: psutil.Process) -> bool:
    """Whether `proc` is an rgpu-tui process: the `rgpu-tui` console script (its process
    name, or argv[0] or argv[1] named so), `python -m rgpu_tui...`, or `python -c` code that
    imports rgpu_tui. False when it cannot be read."""
    try:
        name = proc.name()
        argv = proc.cmdline()
    except (psutil.Error, OSError):
        return False
    if name in RGPU_TUI_NAMES:
        return True
    if any(os.path.basename(a) in RGPU_TUI_NAMES for a in argv[:2]):
        return True
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "-m" and value.split(".")[0] == RGPU_TUI_MODULE:
            return True
        if flag == "-c" and RGPU_TUI_MODULE in value:
            return True
    return any(a.startswith("-m" + RGPU_TUI_MODULE) for a in argv[1:3])


def _inside(path: str | None, roots: tuple[str, ...]) -> bool:
    return path is not None and any(
        path == root or path.startswith(root.rstrip("/") + "/") for root in roots
    )


def _path(path: str, cwd: str | None) -> str | None:
    """`path` made absolute and normal, by its text alone: no path a process names is
    looked up (a dead NFS mount must not block a refresh)."""
    if not path or "\0" in path:
        return None
    if not os.path.isabs(path):
        if cwd is None:
            return None
        path = os.path.join(cwd, path)
    return os.path.normpath(path)


def works_in(proc: psutil.Process, run_dir: str) -> bool | None:
    """Whether `proc` works in `run_dir` (see the module doc); None when nothing of it can
    be read (another user's process). The run directory is compared as given and with its
    symlinks resolved; what the process names is compared by its text (the kernel gives
    its cwd and open files resolved already)."""
    roots = tuple(dict.fromkeys((os.path.abspath(run_dir), os.path.realpath(run_dir))))
    readable = False
    cwd = None
    try:
        cwd = proc.cwd()
        readable = True
        if _inside(_path(cwd, None), roots):
            return True
    except (psutil.Error, OSError):
        pass
    try:
        argv = proc.cmdline()
        readable = True
    except (psutil.Error, OSError):
        argv = []
    pairs: dict[str, str] = {}
    for arg in argv[:MAX_ARGS]:
        key, eq, value = arg.partition("=")
        for candidate in (arg, value) if eq else (arg,):
            if ("/" in candidate or candidate in (".", "..")) and _inside(
                _path(candidate, cwd), roots
            ):
                return True
        if eq:
            pairs[key.lstrip("-")] = value
    project, name = pairs.get("project"), pairs.get("name")
    if project and name and _inside(_path(os.path.join(project, name), cwd), roots):
        return True  # libreyolo writes the run to project/name
    try:
        files = proc.open_files()
        readable = True
    except (psutil.Error, OSError):
        files = []
    if any(_inside(_path(f.path, None), roots) for f in files[:MAX_FILES]):
        return True
    return False if readable else None


def run_process(
    pid, started_at: float | None, create_time: float | None = None, run_dir: str | None = None
) -> ProcessCheck:
    """Whether `pid` is the run's live process (see the module doc)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid not in PIDS:
        return ProcessCheck(False, "no pid in status.json")
    try:
        proc = psutil.Process(pid)
        created = proc.create_time()
        status = proc.status()
    except psutil.NoSuchProcess:
        return ProcessCheck(False, f"process {pid} is gone", gone=True)
    except psutil.AccessDenied:
        return ProcessCheck(True, None)  # exists, owned by someone else: cannot tell more
    except (psutil.Error, OSError) as exc:
        return ProcessCheck(False, f"process {pid}: {exc}")
    if status == psutil.STATUS_ZOMBIE:
        return ProcessCheck(False, f"process {pid} has exited (zombie)", gone=True)
    if is_rgpu_tui(proc):
        return ProcessCheck(False, f"pid {pid} is rgpu-tui itself, not the run")
    if create_time is not None:
        if abs(created - create_time) > CREATE_TIME_SLACK_S:
            return ProcessCheck(
                False, f"pid {pid} now belongs to another process (started {clock(created)})"
            )
    elif started_at is not None:
        if created > started_at + START_AFTER_S:
            return ProcessCheck(False, f"pid {pid} now belongs to a newer process")
        if created < started_at - START_BEFORE_S:
            return ProcessCheck(
                False,
                f"pid {pid} belongs to a process started at {clock(created)}, more than "
                f"{START_BEFORE_S / 60:g} min before the run started ({clock(started_at)})",
            )
    else:
        return _in_run(proc, run_dir, ProcessCheck(True, None, proc=proc))
    return _in_run(proc, run_dir, ProcessCheck(True, None, verified=True, proc=proc))


def _in_run(proc: psutil.Process, run_dir: str | None, check: ProcessCheck) -> ProcessCheck:
    """`check`, unless the process does not work in `run_dir` (or cannot be told to)."""
    if run_dir is None:
        return check
    works = works_in(proc, run_dir)
    if works is None:  # nothing of it readable: alive, but not known to be the run's
        return ProcessCheck(True, None, proc=proc)
    if not works:
        return ProcessCheck(
            False,
            f"pid {proc.pid} works in another directory, not this run's (its copy's "
            "original, or a reused pid)",
            elsewhere=True,
        )
    return check
