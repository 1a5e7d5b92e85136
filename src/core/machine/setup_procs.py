"""Setup is never idle: trainings that have not written their status.json yet.

A training started by hand spends its first minutes (or hours) downloading and caching its
dataset before libreyolo writes status.json; no run is "running" then, and the GPUs are
under 5%, so the machine would read idle and autostop could stop it. A process here is a
training setting up when it is

- a libreyolo training by its command line: `libreyolo train ...` (the console script, or a
  python running it), `python -m libreyolo ... train`, or `python -m libreyolo.training...`;
- libreyolo's DDP coordinator (`python .../libreyolo/training/_ddp_coordinator.py JOB`,
  core.machine.gpu_procs.is_coordinator), which ddp_spawn starts and which spawns the ranks;
- or a process that holds `/dev/nvidia-uvm` open: a CUDA context (a training of any kind,
  a notebook that put a model on the GPU). Processes that only read NVML (this program,
  nvidia-smi, nvitop, exporters) hold /dev/nvidiactl and /dev/nvidiaN but never nvidia-uvm,
  so they do not keep the machine busy.

Such a process makes the machine busy (core.picture.idle: the idle clock does not count,
autostop waits) and is shown "setting up" with its command and age. A process that is a
run's own pid is not listed (its run says what it does), and while any run is running or
starting nothing is looked for: the machine is busy anyway.

This reads /proc (command lines, and the fd tables of processes this user may read), at most
every SETUP_RESCAN_S seconds; between two looks the last answer stands. It never writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import psutil

from ..base.formatting import fmt_duration
from ..base.text import printable
from ..model.snapshot import RunInfo, SetupProcess
from .gpu_procs import _python_args, is_coordinator, nvidia_nodes
from .gpu_waste import any_busy

SETUP_RESCAN_S = 5.0
COMMAND_CHARS = 200
CUDA_NODE = "nvidia-uvm"  # opened by every CUDA context, never by an NVML reader
MAX_SHOWN = 16  # processes kept in a Snapshot (a fork bomb of trainings is still busy)


def is_libreyolo_training(cmdline: Iterable[str]) -> bool:
    """`libreyolo train ...`, `python [opts] .../libreyolo train ...`, `python -m libreyolo
    [...] train ...` or `python -m libreyolo.training...`: by the command line alone."""
    cmd = tuple(cmdline)
    if not cmd:
        return False
    if os.path.basename(cmd[0]) == "libreyolo":
        return _subcommand(cmd[1:]) == "train"
    if not os.path.basename(cmd[0]).startswith("python"):
        return False
    args = _python_args(cmd)
    if not args:
        return False
    if os.path.basename(args[0]) == "libreyolo":
        return _subcommand(args[1:]) == "train"
    if args[0] == "-m" and len(args) >= 2:
        module = args[1]
        if module.startswith("libreyolo.training"):
            return True
        if module == "libreyolo" or module.startswith("libreyolo."):
            return _subcommand(cmd[cmd.index(module) + 1 :]) == "train"
    return False


def _subcommand(args: Iterable[str]) -> str | None:
    """The first argument that is not an option."""
    for arg in args:
        if not arg.startswith("-"):
            return arg
    return None


def processes() -> Iterable[psutil.Process]:
    """Every process here, each with `.info` holding the fields the scan reads. The one
    place the scan asks for them: the test suite narrows it to its own processes (other
    people's trainings on a shared test machine are not the test's)."""
    return psutil.process_iter(["pid", "cmdline", "create_time"])


class SetupWatcher:
    """`sample(now, runs)` once a refresh: the processes setting up (module doc).

    `dev` and `proc_root`: where the device nodes and /proc are (tests point `dev` at a
    folder of their own); `clock`: monotonic seconds, for the rescan interval."""

    def __init__(
        self,
        *,
        dev: str = "/dev",
        proc_root: str = "/proc",
        rescan_s: float = SETUP_RESCAN_S,
        clock=time.monotonic,
    ) -> None:
        self.dev = dev
        self.proc_root = proc_root
        self.rescan_s = rescan_s
        self.clock = clock
        self._own = os.getpid()
        self._at: float | None = None
        self._last: tuple[SetupProcess, ...] = ()

    def sample(self, now: float, runs: Iterable[RunInfo] = ()) -> tuple[SetupProcess, ...]:
        runs = tuple(runs)
        if any_busy(runs):
            self._at, self._last = None, ()
            return ()
        t = self.clock()
        if self._at is not None and t - self._at < self.rescan_s:
            return self._last
        self._at = t
        try:
            self._last = self._scan({r.pid for r in runs if isinstance(r.pid, int)})
        except Exception:  # a reader bug must not take the refresh down: nothing seen
            self._last = ()
        return self._last

    def _scan(self, run_pids: set[int]) -> tuple[SetupProcess, ...]:
        found: list[SetupProcess] = []
        for proc in processes():
            info = proc.info
            pid = info.get("pid")
            if not isinstance(pid, int) or pid == self._own or pid in run_pids:
                continue
            cmd = tuple(info.get("cmdline") or ())
            why = None
            if is_coordinator(cmd):
                why = "libreyolo DDP coordinator"
            elif is_libreyolo_training(cmd):
                why = "libreyolo training"
            else:
                nodes = nvidia_nodes(pid, self.proc_root, self.dev)
                if nodes and CUDA_NODE in nodes:
                    why = f"holds {self.dev.rstrip('/')}/{CUDA_NODE}"
            if why is None:
                continue
            started = info.get("create_time")
            started = float(started) if isinstance(started, (int, float)) else None
            found.append(SetupProcess(pid, _command(cmd, proc), started, why))
        found.sort(key=lambda p: (p.started_at or 0.0, p.pid))
        return tuple(found[:MAX_SHOWN])


def _command(cmd: tuple[str, ...], proc: psutil.Process) -> str:
    """The command line as a person would type it: no folders before the program, and
    no interpreter before a script (`libreyolo train data=coco8.yaml`)."""
    if cmd and os.path.basename(cmd[0]).startswith("python"):
        args = _python_args(cmd)
        if args and not args[0].startswith("-"):  # a script: python .../bin/libreyolo train
            cmd = cmd[cmd.index(args[0]) :]
    if cmd:
        cmd = (os.path.basename(cmd[0]) or cmd[0], *cmd[1:])
    text = " ".join(cmd)
    if not text:
        try:
            text = f"[{proc.name()}]"
        except Exception:
            text = "?"
    text = " ".join(printable(text).split())
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 1] + "…"


def setup_text(setup: Iterable[SetupProcess], now: float) -> list[str]:
    """One line each: 'setting up: pid 812 libreyolo train ... (3m12s, libreyolo training;
    no status.json yet)'."""
    out = []
    for p in setup:
        age = fmt_duration(now - p.started_at) if p.started_at is not None else "?"
        out.append(f"setting up: pid {p.pid} {p.command} ({age}, {p.why}; no status.json yet)")
    return out
