"""Which process `stop` may signal, and whether its whole process group.

status.json is written by the trainer and is untrusted: its `pid` may name any process on
the machine (a reused pid, a buggy writer, a hostile one). A process is signalled only
when all of these hold:

- it is not pid 1, not this program, not one of this program's ancestors (the shell,
  tmux), and not the leader of this program's process group or session;
- it started when the run did. When this machine's launcher started it, its start time
  must equal the one recorded in launches.jsonl (within CREATE_TIME_SLACK_S). Otherwise
  it must fall within the window around status.json's `started_at`: from
  START_BEFORE_S (10 min) before to START_AFTER_S (1 min) after. libreyolo's process
  starts, imports torch and reads the dataset, then writes started_at, so the process is
  a little older than started_at; a pid reused later is younger, a process that ran for
  hours before is older;
- it looks like a trainer: its process name or the file name of its argv[0] is
  `python`, `python3`, `python3.N` (any `python` followed by digits and dots),
  `libreyolo` or `torchrun`. (libreyolo and torchrun are Python console scripts:
  their argv[0] is the interpreter and their process name is the script's.)

The process group is signalled only when the process leads it (the launcher starts each
run in its own session) or when its leader is a libreyolo ancestor of it (multi-GPU: rank
0 under the launched process), and never when that group is this program's own or the
leader of this program's session; otherwise the pid alone is signalled.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

import psutil

from ..records.launch_records import (
    CREATE_TIME_SLACK_S,  # the start time recorded at launch vs. now
)

START_BEFORE_S = 600.0  # the process may start up to 10 min before status.json's started_at
START_AFTER_S = 60.0  # ... and up to 1 min after it (started_at has one-second precision)
GONE = "gone"  # verify(): the process has exited, nothing to stop

_TRAINER_NAME = re.compile(r"(python[0-9.]*|libreyolo|torchrun)")


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).astimezone().strftime("%H:%M:%S")


def _is_trainer(proc: psutil.Process) -> bool:
    try:
        names = [proc.name()]
        cmdline = proc.cmdline()
    except psutil.Error:
        return False
    if cmdline:
        names.append(os.path.basename(cmdline[0]))
    return any(_TRAINER_NAME.fullmatch(n) for n in names if n)


def _ours(pid: int) -> str | None:
    """Why signalling `pid` would hit this program or what it runs in; None when it would not."""
    if pid == 1:
        return "pid 1 is the machine's init"
    if pid == os.getpid():
        return f"pid {pid} is this program"
    try:
        if pid in (os.getpgrp(), os.getsid(0)):
            return f"pid {pid} leads this program's process group or session"
    except OSError:
        pass
    try:
        if any(p.pid == pid for p in psutil.Process().parents()):
            return f"pid {pid} is an ancestor of this program"
    except psutil.Error:
        pass
    return None


def verify(pid, started_at: float | None, create_time: float | None) -> psutil.Process | str:
    """The process when it may be signalled as the run (see the module doc); GONE when it
    has exited; else why it is not the run, in words."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return "no pid recorded for this run"
    ours = _ours(pid)
    if ours:
        return ours
    try:
        proc = psutil.Process(pid)
        created = proc.create_time()
        status = proc.status()
    except psutil.NoSuchProcess:
        return GONE
    except psutil.AccessDenied:
        return f"process {pid} belongs to another user"
    except psutil.Error as exc:
        return f"process {pid}: {exc}"
    if status == psutil.STATUS_ZOMBIE:
        return GONE
    if create_time is not None:
        if abs(created - create_time) > CREATE_TIME_SLACK_S:
            return f"pid {pid} now belongs to another process (started {_clock(created)})"
    elif started_at is not None:
        if created > started_at + START_AFTER_S:
            return (
                f"pid {pid} now belongs to another process (started {_clock(created)}, "
                f"after the run started at {_clock(started_at)})"
            )
        if created < started_at - START_BEFORE_S:
            return (
                f"pid {pid} belongs to a process started at {_clock(created)}, more than "
                f"{START_BEFORE_S / 60:g} min before the run started ({_clock(started_at)})"
            )
    else:
        return f"no start time recorded for process {pid}: cannot tell it is the run"
    if not _is_trainer(proc):
        try:
            what = proc.name()
        except psutil.Error:
            what = "?"
        return f"process {pid} ({what}) is not python, libreyolo or torchrun"
    return proc


@dataclass
class Target:
    proc: psutil.Process
    group: int | None  # the process group to signal, or None: the pid alone
    waits: list[psutil.Process] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.group is not None:
            return f"process group {self.group}"
        return f"process {self.proc.pid}"


def target(proc: psutil.Process) -> Target:
    """Signal the whole group when the group belongs to the run, else the pid alone."""
    try:
        pgid = os.getpgid(proc.pid)
    except OSError:
        return Target(proc, None, [proc])
    try:
        own = {os.getpgrp(), os.getsid(0), 0, 1}
    except OSError:
        own = {os.getpgrp(), 0, 1}
    if pgid in own:
        return Target(proc, None, [proc])  # never our own group or our session's
    if pgid == proc.pid:
        return Target(proc, pgid, [proc])
    try:
        leader = psutil.Process(pgid)
        is_ancestor = any(p.pid == pgid for p in proc.parents())
        is_trainer = any("libreyolo" in part for part in leader.cmdline())
    except psutil.Error:
        return Target(proc, None, [proc])
    if is_ancestor and is_trainer and _ours(pgid) is None:  # multi-GPU: rank 0 below it
        return Target(proc, pgid, [proc, leader])
    return Target(proc, None, [proc])
