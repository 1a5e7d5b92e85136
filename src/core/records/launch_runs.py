"""Which run directory a launch became, and the state of a launch: reading only.

libreyolo puts run NAME under the project as NAME, or NAME2, NAME3... when NAME is taken,
so the name alone does not say where a launch went. Its run directory is the candidate
whose status.json carries the launched pid, or the pid of a live descendant of it
(libreyolo's multi-GPU runs write rank 0's pid), and that did not start before the launch
(a reused pid). A resume (core.launch.resume) names its run in its argv (`resume_of`): it is
an attempt of that run, never a run of its own, and once its pid is in status.json the
launch that made the run is still that run's (recorded so when the resume starts; without
that record, the latest launch of the run's family before its first resume that nothing
else took). `pick_run_dir` is that rule over runs already read; `match_launches`
applies it to every launch of a project at once, given the runs a refresh found, and
writes nothing: the refresh calls it every time (core.picture.watch). `find_run_dir` and
`launch_state` read the candidates' status.json themselves, for the commands that act.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import psutil

from ..base.safeio import open_regular, read_regular
from ..run.status import PID_REUSE_SLACK_S, parse_time
from .launch_records import CREATE_TIME_SLACK_S, RGPU_DIR, LaunchRecord

STATUS_MAX_BYTES = 4 * 1024 * 1024
TAIL_BYTES = 16 * 1024
TAIL_LINES = 20
TAIL_LINE_CHARS = 300


@dataclass(frozen=True)
class RunOnDisk:
    """What the matching needs of one run directory: its status.json's pid and start."""

    run_dir: str
    pid: int | None
    started_at: float | None


# -- the rule, over runs already read -------------------------------------------------


def _arg(argv: Sequence[str], key: str) -> str | None:
    for arg in argv:
        if arg.startswith(key + "="):
            return arg[len(key) + 1 :]
    return None


def resume_of(record: LaunchRecord) -> str | None:
    """The run directory a launch record resumes (`resume=True` in its argv): its recorded
    run directory, else `project=`/`name=` when given, else the run whose weights/ holds
    the `model=` checkpoint; None for a launch that is no resume."""
    if "resume=True" not in record.argv:
        return None
    if record.run_dir:
        return record.run_dir
    project, name = _arg(record.argv, "project"), _arg(record.argv, "name")
    if project and name:
        return os.path.join(os.path.abspath(project), name)
    model = _arg(record.argv, "model")
    if model:
        weights = os.path.dirname(os.path.abspath(model))
        if os.path.basename(weights) == "weights":
            return os.path.dirname(weights)
    return None


def candidates(runs: Iterable[RunOnDisk], project: str, name: str | None) -> list[RunOnDisk]:
    """The runs directly under `project` that libreyolo may have made for run NAME: NAME,
    NAME2, NAME3... in that order (every run directly under project, by path, when the
    name is not known)."""
    return _family(_under(runs, project), name)


def _under(runs: Iterable[RunOnDisk], project: str) -> list[RunOnDisk]:
    project = os.path.abspath(project)
    return [
        r
        for r in runs
        if os.path.dirname(r.run_dir) == project and os.path.basename(r.run_dir) != RGPU_DIR
    ]


@functools.lru_cache(maxsize=256)
def _pattern(name: str) -> re.Pattern:
    return re.compile(re.escape(name) + r"(\d*)")


def _rank(name: str | None, run: RunOnDisk) -> tuple | None:
    """Where run comes in NAME's family (NAME, NAME2, NAME3...); None: not of it."""
    if not name:
        return (0, run.run_dir)
    m = _pattern(name).fullmatch(os.path.basename(run.run_dir))
    if m and (not m.group(1) or int(m.group(1)) >= 2):
        return (int(m.group(1) or 1), run.run_dir)
    return None


def _family(here: list[RunOnDisk], name: str | None) -> list[RunOnDisk]:
    ranked = [(rank, run) for run in here if (rank := _rank(name, run)) is not None]
    return [run for _, run in sorted(ranked, key=lambda t: t[0])]


def descends_from(pid: int, ancestor: int) -> bool:
    """Is `pid` a live descendant of `ancestor`? (Reads /proc; never raises.)"""
    try:
        return any(p.pid == ancestor for p in psutil.Process(pid).parents())
    except psutil.Error:
        return False


def pick_run_dir(
    pid: int,
    name: str | None,
    project: str,
    runs: Iterable[RunOnDisk],
    *,
    started_after: float | None = None,
    descends: Callable[[int, int], bool] = descends_from,
) -> str | None:
    """The candidate run (see `candidates`) whose status.json pid is `pid`, else the first
    whose pid is a live descendant of `pid`. started_after (the launch time) skips runs
    that started before it (PID_REUSE_SLACK_S of slack): an older run with a reused pid."""
    return _pick(pid, _family(_under(runs, project), name), started_after, descends)


def _pick(
    pid: int,
    family: list[RunOnDisk],
    started_after: float | None,
    descends: Callable[[int, int], bool] | None = None,
) -> str | None:
    """pick_run_dir over the family; descends None: by pid only."""
    found = []
    for run in family:
        if started_after is not None and run.started_at is not None:
            if run.started_at < started_after - PID_REUSE_SLACK_S:
                continue
        if run.pid is None:
            continue
        if run.pid == pid:
            return run.run_dir
        found.append(run)
    for run in found if descends is not None else ():
        if descends(run.pid, pid):
            return run.run_dir
    return None


def match_launches(
    records: Sequence[LaunchRecord],
    runs: Iterable[RunOnDisk],
    project: str,
    *,
    descends: Callable[[int, int], bool] = descends_from,
    alive: Callable[[LaunchRecord], bool] | None = None,
) -> dict[str, str]:
    """Launch id -> its run directory, for the launches (oldest first) of `project` whose
    run is recorded or among `runs` (the runs found under project). Writes nothing.

    A recorded run directory wins; then `pick_run_dir`. A launch whose process has ended
    before either matched (a multi-GPU run: rank 0, whose pid status.json carries, has
    ended too, so it no longer descends from anything) takes the first candidate no other
    launch took that started after it (the slack as above), before the next launch of
    the same name, and, when the launcher recorded the exit, before that exit.
    `alive(record)` says whether the launched process still runs (default: by pid and
    recorded start time); it is asked at most once a call, only of launches no recorded
    run directory or pid matched and whose exit is not recorded, and descendants are
    looked for only under a running one."""
    here = _under(runs, project)
    families: dict[str, list[RunOnDisk]] = {}

    def family(name: str) -> list[RunOnDisk]:
        if name not in families:
            families[name] = _family(here, name)
        return families[name]

    alive = alive or launch_alive
    known: dict[str, bool] = {}

    def running(record: LaunchRecord) -> bool:
        if record.returncode is not None or record.died_error:
            return False
        if record.id not in known:
            known[record.id] = alive(record)
        return known[record.id]

    by_pid: dict[int, list[RunOnDisk]] = {}
    for run in here:
        if run.pid is not None:
            by_pid.setdefault(run.pid, []).append(run)
    out: dict[str, str] = {}
    here_dirs = {run.run_dir for run in here}
    resumes: dict[str, float] = {}  # run -> the time of its first resume
    for record in records:
        resumed = resume_of(record)
        if resumed is not None and (record.run_dir or resumed in here_dirs):
            out[record.id] = resumed  # an attempt of that run, whatever its pid
            resumes[resumed] = min(resumes.get(resumed, math.inf), record.time)
        elif record.run_dir:
            out[record.id] = record.run_dir
    for record in records:
        if record.id in out or resume_of(record) is not None:
            continue
        # _pick's first pass, by pid: the common case, without scanning the family
        exact = _pick(record.pid, _family(by_pid.get(record.pid, []), record.name), record.time)
        if exact is not None:
            out[record.id] = exact
        elif running(record):  # only a running process has live descendants
            got = _pick(record.pid, family(record.name), record.time, descends)
            if got is not None:
                out[record.id] = got
    resume_ids = resumed_ids(records)
    taken = {run for rid, run in out.items() if rid not in resume_ids}
    ordered = sorted((r for r in records if resume_of(r) is None), key=lambda r: r.time)
    for i, record in enumerate(ordered):
        if record.id in out or record.died_error or running(record):
            continue
        later = [r.time for r in ordered[i + 1 :] if r.name == record.name]
        until = min(later, default=math.inf) - PID_REUSE_SLACK_S
        if record.exited_at is not None:
            until = min(until, record.exited_at + PID_REUSE_SLACK_S)
        pool = [
            run
            for run in family(record.name)
            if run.run_dir not in taken
            and run.started_at is not None
            and record.time - PID_REUSE_SLACK_S <= run.started_at < until
        ]
        if pool:
            first = min(pool, key=lambda r: r.started_at)
            out[record.id] = first.run_dir
            taken.add(first.run_dir)
    # a resumed run whose status.json now carries the resume's pid and start: the launch
    # that made it is the latest one of its family, before its first resume, that nothing
    # else took and that has ended
    for run_dir, first_resume in resumes.items():
        if run_dir in taken:
            continue
        made = [
            r
            for r in ordered
            if r.id not in out
            and not r.died_error
            and r.time < first_resume
            and os.path.dirname(run_dir) == os.path.abspath(r.project)
            and _rank(r.name, RunOnDisk(run_dir, None, None)) is not None
            and not running(r)
        ]
        if made:
            out[max(made, key=lambda r: r.time).id] = run_dir
            taken.add(run_dir)
    return out


def resumed_ids(records: Sequence[LaunchRecord]) -> set[str]:
    """The ids of the records that are resumes (core.launch.resume)."""
    return {r.id for r in records if resume_of(r) is not None}


# -- reading the candidates from disk (the commands that act) ------------------------------


def read_status(run_dir: str) -> dict | None:
    """status.json as a dict; None when missing, not a regular file (a FIFO never blocks),
    over 4 MiB, or not a JSON object."""
    try:
        data = read_regular(os.path.join(run_dir, "status.json"), STATUS_MAX_BYTES)
        if len(data) > STATUS_MAX_BYTES:
            return None
        value = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def runs_on_disk(project: str) -> list[RunOnDisk]:
    """Every directory directly under project with a readable status.json (its pid, when
    an integer, and its started_at)."""
    try:
        entries = [
            e for e in os.scandir(os.path.abspath(project)) if e.is_dir() and e.name != RGPU_DIR
        ]
    except OSError:
        return []
    out = []
    for entry in entries:
        st = read_status(entry.path)
        if st is None:
            continue
        pid = st.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            pid = None
        out.append(RunOnDisk(entry.path, pid, parse_time(st.get("started_at"))))
    return out


def find_run_dir(
    project: str, pid: int, name: str | None = None, *, started_after: float | None = None
) -> str | None:
    """The run directory under project whose status.json was written by `pid` (or a live
    descendant of it), read from disk now: `pick_run_dir` over `runs_on_disk`."""
    return pick_run_dir(pid, name, project, runs_on_disk(project), started_after=started_after)


# -- the state of a launch ------------------------------------------------------------


@dataclass(frozen=True)
class LaunchState:
    state: str  # "starting" | "started" | "died"
    run_dir: str | None
    error: str | None
    console_log: str
    tail: tuple[str, ...] = ()  # the console log's last lines (starting / died)
    pid: int | None = None
    returncode: int | None = None
    elapsed: float | None = None  # since the launch


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_LOGURU = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?\s*\|\s*\w+\s*\|\s*")
_ERRORISH = re.compile(
    r"(Error|Exception|error:|No such option|Missing option|Invalid value|Killed|Traceback)"
)


def console_tail(path: str, lines: int = TAIL_LINES) -> tuple[str, ...]:
    """The last lines of a console log, cleaned of colours and progress-bar redraws."""
    try:
        fd = open_regular(path)  # a FIFO in its place never blocks
    except OSError:
        return ()
    try:
        size = os.fstat(fd).st_size
        raw = os.pread(fd, TAIL_BYTES, max(size - TAIL_BYTES, 0))
    except OSError:
        return ()
    finally:
        os.close(fd)
    text = raw.decode("utf-8", errors="replace")
    out = []
    for line in text.split("\n"):
        line = _ANSI.sub("", line.split("\r")[-1] if line.strip("\r") else line).rstrip()
        if len(line) > TAIL_LINE_CHARS:
            line = line[: TAIL_LINE_CHARS - 1] + "…"
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return tuple(out[-lines:])


def error_from_tail(tail: Sequence[str]) -> str | None:
    """The line of a console tail that says what went wrong (else the last line)."""
    cleaned = [_LOGURU.sub("", line.strip(" │╭╰╮╯─|")).strip() for line in tail]
    cleaned = [line for line in cleaned if line]
    for line in reversed(cleaned):
        if _ERRORISH.search(line):
            return line
    return cleaned[-1] if cleaned else None


def launch_end(record: LaunchRecord) -> tuple[float | None, str | None]:
    """When a launch whose process has ended ended, and how that is known: the exit its
    launcher recorded, else its console log's last write (the process's last output);
    (None, None) when neither can be read."""
    if record.exited_at is not None:
        return max(record.exited_at, record.time), "exit record"
    try:
        mtime = os.stat(record.console_log).st_mtime
    except (OSError, ValueError):
        return None, None
    return max(mtime, record.time), "console log"


def _base(record: LaunchRecord, now: float, ended: bool = False) -> dict:
    """elapsed: since the launch while it runs; from the launch to its end once ended (the
    same in every app, however late it looks), 0 when its end cannot be told."""
    end = launch_end(record)[0] if ended else now
    return dict(
        console_log=record.console_log,
        pid=record.pid,
        returncode=record.returncode,
        elapsed=max((end if end is not None else record.time) - record.time, 0.0),
    )


def launch_state(record: LaunchRecord, now: float) -> LaunchState:
    """starting (no status.json yet, process alive), started (run dir found) or died,
    reading the candidates' status.json now."""
    if record.run_dir:
        return LaunchState("started", record.run_dir, None, **_base(record, now))
    if not record.died_error:
        run_dir = find_run_dir(record.project, record.pid, record.name, started_after=record.time)
        if run_dir:
            return LaunchState("started", run_dir, None, **_base(record, now))
    return state_without_run(record, now)


def state_without_run(record: LaunchRecord, now: float) -> LaunchState:
    """The state of a launch no run directory was found for: died when recorded so,
    starting while the launched process lives, else (after one more look on disk, in
    case status.json appeared just before it exited) died, with the console's error."""
    if record.died_error:
        base = _base(record, now, ended=True)
        return LaunchState("died", None, record.died_error, tail=record.died_tail, **base)
    if record.returncode is None and launch_alive(record):
        base = _base(record, now)
        return LaunchState("starting", None, None, tail=console_tail(record.console_log), **base)
    run_dir = find_run_dir(record.project, record.pid, record.name, started_after=record.time)
    if run_dir:
        return LaunchState("started", run_dir, None, **_base(record, now))
    base = _base(record, now, ended=True)
    tail = console_tail(record.console_log)
    how = f"exited with status {record.returncode}" if record.returncode is not None else "exited"
    detail = error_from_tail(tail)
    error = f"{how} before writing status.json" + (f": {detail}" if detail else " (no output)")
    return LaunchState("died", None, error, tail=tail, **base)


def same_process(pid: int, create_time: float | None) -> bool:
    """Is `pid` running, not a zombie, and (when create_time is known) the process that
    started then?"""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        created = proc.create_time()
    except psutil.Error:
        return False
    return create_time is None or abs(created - create_time) <= CREATE_TIME_SLACK_S


def launch_alive(record: LaunchRecord) -> bool:
    """Is the launched process (that very one, by start time) still running?"""
    return same_process(record.pid, record.create_time)
