"""Which process `stop` may signal, and whether its whole process group.

status.json is written by the trainer and is untrusted: its `pid` may name any process on
the machine. A process is signalled only when all of these hold:

- it is the run's live process by the one rule status uses too (core.run.run_process:
  never pid 1 or an rgpu-tui process, a watcher, agent, fleet or app of the user; it
  started when the run did: the start time launches.jsonl recorded, else within the window
  around status.json's `started_at`; it works in the run's directory: its cwd, command
  line or open files name it), and that start time was known (`verified`);
- it is not this program, not one of this program's ancestors (the shell, tmux), and not
  the leader of this program's process group or session;
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

import psutil

from ..run.run_process import START_AFTER_S, START_BEFORE_S, run_process

__all__ = ["GONE", "START_AFTER_S", "START_BEFORE_S", "Target", "target", "verify"]
GONE = "gone"  # verify(): the process has exited, nothing to stop

_TRAINER_NAME = re.compile(r"(python[0-9.]*|libreyolo|torchrun)")


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


def verify(
    pid, started_at: float | None, create_time: float | None, run_dir: str | None = None
) -> psutil.Process | str:
    """The process when it may be signalled as the run (see the module doc); GONE when it
    has exited; else why it is not the run, in words. `run_dir`: the process must work in
    it (core.run.run_process); None only for a launch with no run directory yet (its
    launch record's exact start time names it)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return "no pid recorded for this run"
    ours = _ours(pid)
    if ours:
        return ours
    check = run_process(pid, started_at, create_time, run_dir)
    if check.gone:
        return GONE
    if not check.alive:
        return check.reason or f"process {pid} is not the run's"
    if check.proc is None:  # alive, but its owner hides it from us
        return f"process {pid} belongs to another user"
    if not check.verified:
        return f"no start time recorded for process {pid}: cannot tell it is the run"
    proc = check.proc
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
