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

With neither start time known it cannot be told: the run reads as alive (the state says
what status.json says) and `stop` refuses (`verified` is False).
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

RGPU_TUI_NAMES = ("rgpu-tui",)
RGPU_TUI_MODULE = "rgpu_tui"


@dataclass(frozen=True)
class ProcessCheck:
    alive: bool  # the run's process is alive (or cannot be told apart: see `verified`)
    reason: str | None = None  # why it is not the run's live process
    gone: bool = False  # no process has that pid any more (or it is a zombie)
    verified: bool = False  # alive and its start time matched the run's
    proc: psutil.Process | None = None


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


def run_process(pid, started_at: float | None, create_time: float | None = None) -> ProcessCheck:
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
        return ProcessCheck(True, None, proc=proc)
    return ProcessCheck(True, None, verified=True, proc=proc)
