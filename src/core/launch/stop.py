"""Stopping a run: SIGINT, then SIGTERM, then SIGKILL, to the run's process group.

SIGINT first (libreyolo then records `failed`/KeyboardInterrupt and keeps its last
checkpoint), SIGTERM after settings.stop_term_after s, SIGKILL after
settings.stop_kill_after s, and only ever to a process that started with the run and
looks like a trainer (core.launch.stop_target decides). Before the first signal a line in
`<run>/.rgpu/stops.jsonl` says who stopped which attempt (core.records.stop_records), so
the run reads STOPPED afterwards, not FAIL or DEAD. `stop_run` stops the run of a run
directory (a launch still starting, without a status.json, is not stopped: the app says
so). It blocks until the process has ended (or cannot be stopped) and reports progress as
it goes. A run that is not running is not stopped: `ok` is False and `error` says what it
reads.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import psutil

from ..records.launch_records import read_launches
from ..records.launch_runs import read_status
from ..records.records import append_json_line
from ..records.stop_records import StopRecord, read_stops, stop_of, stopped_state, stops_path
from ..run.status import check_pid, derive_state, parse_time
from .stop_target import GONE, Target, verify
from .stop_target import target as stop_target

KILL_WAIT_S = 10.0  # after SIGKILL, how long to wait for the process to vanish
STOP_POLL_S = 0.2


@dataclass(frozen=True)
class StopResult:
    ok: bool  # the process has ended (or was not running)
    final_state: str | None  # failed / dead / completed ... as the run reads now
    signals_sent: tuple[str, ...] = ()  # "SIGINT", "SIGTERM", "SIGKILL"
    error: str | None = None
    target: str | None = None  # "process group 123" / "process 123"
    seconds: float = 0.0

    def to_json(self) -> dict:
        data = asdict(self)
        data["signals_sent"] = list(self.signals_sent)
        return data


ProgressFn = Callable[[str, "float | None"], None]


def _ended(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _send(target: Target, sig: int) -> tuple[bool, str | None]:
    """Send sig: (sent, why it could not be). A process that has ended is not signalled."""
    if _ended(target.proc):
        return False, None
    try:
        if target.group is not None:
            os.killpg(target.group, sig)
        else:
            target.proc.send_signal(sig)  # psutil re-checks the pid is the same process
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False, None
    except (PermissionError, psutil.AccessDenied):
        return False, f"not allowed to signal {target.label}"
    return True, None


def _escalate(
    target: Target,
    settings,
    on_progress: ProgressFn | None,
    sleep: Callable[[float], None],
    now: Callable[[], float],
) -> tuple[bool, tuple[str, ...], str | None, float]:
    term_after = float(getattr(settings, "stop_term_after", 30.0))
    kill_after = max(float(getattr(settings, "stop_kill_after", 60.0)), term_after)
    plan = [
        ("SIGINT", signal.SIGINT, 0.0),
        ("SIGTERM", signal.SIGTERM, term_after),
        ("SIGKILL", signal.SIGKILL, kill_after),
    ]
    sent: list[str] = []
    t0 = now()
    last_report = None

    def report(phase: str, left: float | None) -> None:
        nonlocal last_report
        key = (phase, None if left is None else math.ceil(left))
        if on_progress is not None and key != last_report:
            last_report = key
            try:
                on_progress(phase, left)
            except Exception:
                pass

    step = 0
    while True:
        if all(_ended(p) for p in target.waits):
            report("ended", None)
            return True, tuple(sent), None, now() - t0
        elapsed = now() - t0
        while step < len(plan) and elapsed >= plan[step][2]:
            label, sig, _ = plan[step]
            ok, problem = _send(target, sig)
            if problem:
                return False, tuple(sent), problem, now() - t0
            if ok:
                sent.append(label)
            step += 1
        if step < len(plan):
            report(plan[step - 1][0].lower(), max(plan[step][2] - elapsed, 0.0))
        else:
            if elapsed >= kill_after + KILL_WAIT_S:
                return (
                    False,
                    tuple(sent),
                    f"{target.label} is still alive {KILL_WAIT_S:.0f} s after SIGKILL "
                    "(stuck in the kernel, e.g. on a dead GPU or NFS)",
                    now() - t0,
                )
            report("sigkill", max(kill_after + KILL_WAIT_S - elapsed, 0.0))
        sleep(STOP_POLL_S)


def stop_run(
    run_dir: str,
    settings,
    on_progress: ProgressFn | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
    by: str = "rgpu-tui stop",
) -> StopResult:
    """Stop the run in run_dir: SIGINT, SIGTERM after settings.stop_term_after s,
    SIGKILL after settings.stop_kill_after s. Blocks until the process has ended.

    on_progress(phase, seconds_left): phase "sigint" / "sigterm" (seconds until the
    next signal), "sigkill" (seconds left to wait), "ended" (None). Only a process
    that core.launch.stop_target.verify accepts as the run is ever signalled. `by`: who
    asked ("app", "rgpu-tui stop", "fleet"), for the stop record.
    """
    st = read_status(run_dir)
    if st is None:
        return StopResult(False, None, error=f"{run_dir}: no readable status.json; nothing sent")
    state = st.get("state")
    pid = st.get("pid")
    started_at = parse_time(st.get("started_at"))
    proc = None
    if state == "running":
        proc = verify(pid, started_at, _launched_create_time(run_dir, pid), run_dir)
    if state != "running" or proc == GONE:  # completed, failed, stopped; or died unsaid
        reads = _final_state(run_dir, now()) or (str(state) if state else None)
        name = os.path.basename(os.path.normpath(run_dir))
        return StopResult(
            False, reads, error=f"{name} is not running (it reads {reads or '?'}): nothing sent"
        )
    if isinstance(proc, str):
        final = _final_state(run_dir, now())
        return StopResult(False, final, error=f"not stopped: {proc}; nothing was signalled")
    target = stop_target(proc)
    record = StopRecord(now(), pid, started_at, by)
    try:
        append_json_line(stops_path(run_dir), record.to_json())
    except OSError:  # a read-only run: stop it all the same (it will read FAIL or DEAD)
        pass
    ok, sent, error, seconds = _escalate(target, settings, on_progress, sleep, now)
    return StopResult(ok, _final_state(run_dir, now()), sent, error, target.label, seconds)


def _launched_create_time(run_dir: str, pid) -> float | None:
    """The exact start time recorded when we launched this pid, if we did."""
    project = os.path.dirname(os.path.abspath(run_dir))
    for record in reversed(read_launches(project)):
        if record.pid == pid and record.create_time is not None:
            if record.run_dir in (None, os.path.abspath(run_dir)):
                return record.create_time
    return None


def _final_state(run_dir: str, now: float) -> str | None:
    """What the run reads now, as a refresh reads it (a stop of this attempt: stopped)."""
    st = read_status(run_dir)
    if st is None:
        return None
    state = st.get("state") if isinstance(st.get("state"), str) else None
    pid = st.get("pid")
    started_at = parse_time(st.get("started_at"))
    pid_check = check_pid(pid, started_at, run_dir) if state == "running" else None
    derived = derive_state(state, pid_check, None, None, now)
    pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
    return stopped_state(derived, stop_of(read_stops(run_dir), pid, started_at))
