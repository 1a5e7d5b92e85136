"""Resuming a run that died or failed, in its own run directory.

A resume is `libreyolo train model=RUN/weights/CHECKPOINT resume=True data=DATA
device=DEVICE`, started and recorded exactly like a launch (core.launch.launch.start_recorded:
its own session, stdin /dev/null, a console log under `<project>/.rgpu/console/`, a line in
`<project>/.rgpu/launches.jsonl`), where `<project>` is the run directory's parent. The
record names the run it resumes (its `model=`, or `project=` and `name=`:
core.records.launch_runs.resume_of), so it is an attempt of that run, never a run of its own.

CHECKPOINT is the newest complete checkpoint of last.pt, epoch_N.pt and best.pt, or the one
asked for (`choice`: best | last | epoch_N | a path): core.launch.resume_from, which checks
each with core.run.torch_checkpoint and reads the epoch it holds. The plan says which file,
its epoch and how many epochs done will be trained again; when the resume starts, torn
candidates are renamed `<name>.torn-<time>` (kept, never deleted: libreyolo would
overwrite them), and the launches that became this run are recorded as such (a `run_dir`
line each), so the run keeps its launch history once status.json carries the new pid.

What libreyolo 1.6.0 needs, read from its CLI (cli/commands/train.py, cli/config.py) and
models/base/model.py, and tried on a SIGKILLed CPU run:
- `resume=True` continues the checkpoint given as `model=`; for a `<run>/weights/*.pt`
  checkpoint (last.pt, epoch_N.pt, best.pt alike) it keeps writing into `<run>` (project and
  name come from the path, with exist_ok), from the epoch after the checkpoint's; a
  checkpoint elsewhere gets `project=`, `name=` and `exist_ok=True` of the run, to the same
  effect;
- every saved training argument (epochs, batch, imgsz, workers, lr0, save_period, ...) is
  restored from the checkpoint, except `device` ("device follows the call": the CLI's
  default is `auto`), so the run's own device is passed again;
- `data=` is a required option of `libreyolo train` even on a resume, and the value given
  is used, so the run's own dataset is passed again.
Both come from the run's train_config.yaml (libreyolo writes it at train start), unless
given (`--data`, `--device`: a pulled run on a new machine has its dataset elsewhere).

A resume is refused, with one line saying why, while the run's process is alive
(status.json says running and core.run.status.check_pid finds its process, unless
core.launch.stop_target.verify finds it gone), while an earlier resume of it is still starting,
for a completed run (nothing to resume), and when no candidate is a complete checkpoint
inside the run (a FIFO never blocks: files are opened through core.base.safeio).
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..base.invocation import command
from ..base.safeio import read_regular
from ..base.values import EPOCHS, checked, parse_json, parse_time
from ..records.launch_records import LaunchRecord, read_launches
from ..records.launch_runs import launch_alive, match_launches, resume_of, runs_on_disk
from ..records.stop_records import read_stops, stop_of, stopped_state
from ..run.status import check_pid
from ..run.tail import describe_os_error
from ..run.train_config import NAME as CONFIG_NAME
from ..run.train_config import load_config
from . import launch as _launch
from . import launch_spec as _spec
from .launch_spec import display_command
from .resume_from import (
    ResumeCandidate,
    ResumeFromError,
    in_weights,
    list_candidates,
    pick,
    set_aside_name,
)
from .stop_target import GONE, verify

STATUS_MAX_BYTES = 4 * 1024 * 1024
HF_TOKEN_MIN = 8  # shorter values are not taken for a token (as core.launch.launch_spec.check_spec)
_DEVICE = re.compile(r"[A-Za-z0-9:,._-]{1,64}")  # cpu, auto, mps, 0, 0,1,2,3, cuda:0
# one check-and-start at a time in this process: two quick confirms in the app cannot both
# pass the "already being resumed" check before either is recorded
_STARTING = threading.Lock()


class ResumeError(ValueError):
    """A resume that is refused or cannot start; str(error) is one line for the user."""


@dataclass(frozen=True)
class ResumePlan:
    run_dir: str
    checkpoint: str  # RUN/weights/epoch_20.pt, the one model= names (not resolved)
    data: str
    device: str | None  # None: not known; libreyolo picks (auto)
    argv: tuple[str, ...]
    state: str  # what the run reads now: "dead", "failed", "stopped", "unknown" (no status.json)
    completed_epochs: int | None  # the last epoch done, as far as status/metrics say
    total_epochs: int | None
    notices: tuple[str, ...] = ()
    from_name: str | None = None  # the checkpoint's file name
    from_epoch: int | None = None  # the epoch it holds (training goes on with the next)
    from_epoch_source: str | None = None  # "checkpoint" | "file name" | None (unknown)
    redo_epochs: int | None = None  # epochs done after it, trained again (0: none)
    candidates: tuple[ResumeCandidate, ...] = ()  # newest valid first (resume_from)
    set_aside: tuple[str, ...] = ()  # torn files renamed when it starts
    set_aside_as: tuple[str, ...] = ()  # their new names, once it started

    @property
    def command(self) -> str:
        return display_command(self.argv)

    @property
    def project(self) -> str:
        return os.path.dirname(self.run_dir)

    @property
    def name(self) -> str:
        return os.path.basename(self.run_dir)

    def to_json(self) -> dict:
        return {
            "run_dir": self.run_dir,
            "checkpoint": self.checkpoint,
            "data": self.data,
            "device": self.device,
            "argv": list(self.argv),
            "command": self.command,
            "state": self.state,
            "completed_epochs": self.completed_epochs,
            "total_epochs": self.total_epochs,
            "notices": list(self.notices),
            "from_name": self.from_name,
            "from_epoch": self.from_epoch,
            "from_epoch_source": self.from_epoch_source,
            "redo_epochs": self.redo_epochs,
            "candidates": [dataclasses.asdict(c) for c in self.candidates],
            "set_aside": list(self.set_aside),
            "set_aside_as": list(self.set_aside_as),
        }

    def from_text(self) -> str:
        """ "from weights/epoch_20.pt (epoch 20): epochs 21-22 are trained again"."""
        where = os.path.relpath(self.checkpoint, self.run_dir)
        if where.startswith(".."):
            where = self.checkpoint
        epoch = f" (epoch {self.from_epoch})" if self.from_epoch is not None else ""
        redo = self.redo_epochs
        if redo is None or self.from_epoch is None:
            again = ""
        elif redo <= 0:
            again = ": no epoch is trained again"
        elif redo == 1:
            again = f": epoch {self.from_epoch + 1} is trained again"
        else:
            again = f": epochs {self.from_epoch + 1}-{self.from_epoch + redo} are trained again"
        return f"from {where}{epoch}{again}"


# -- reading the run ---------------------------------------------------------------------


def _read_status(run_dir: str) -> dict | None:
    """status.json as a dict; None when there is none. Raises ResumeError when it is there
    but cannot be read as one (a FIFO, too large, not JSON): then nobody can tell whether
    the run still runs."""
    path = os.path.join(run_dir, "status.json")
    try:
        raw = read_regular(path, STATUS_MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ResumeError(
            f"status.json {describe_os_error(exc)}: cannot tell whether the run still runs"
        ) from None
    if len(raw) > STATUS_MAX_BYTES:
        raise ResumeError("status.json is too large: cannot tell whether the run still runs")
    try:
        value = parse_json(raw)
    except ValueError:
        raise ResumeError(
            "status.json is not readable JSON (being written? try again): "
            "cannot tell whether the run still runs"
        ) from None
    if not isinstance(value, dict):
        raise ResumeError("status.json is not a JSON object: cannot tell whether the run runs")
    return value


def _last_metrics_epoch(run_dir: str) -> int | None:
    """The epoch of metrics.jsonl's last complete row (libreyolo's status.json counts a
    resumed run's epochs from the resume point; the history has the true one)."""
    from ..run.metrics import MetricsReader

    reader = MetricsReader(run_dir)
    try:
        reader.poll()
    except Exception:  # a reader bug must not block a resume
        return None
    return reader.last_epoch


def config_scalars(run_dir: str, keys: tuple[str, ...]) -> tuple[dict, str | None]:
    """The top-level `keys` of train_config.yaml (core.run.train_config.load_config) that are
    strings or integers, and why the file could not be read (None when it could)."""
    doc, problem = load_config(run_dir)
    if doc is None:
        return {}, problem
    out = {}
    for key in keys:
        value = doc.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            value = str(value)
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()
    return out, None


def _alive_reason(run_dir: str, status: dict, records: list[LaunchRecord]) -> str | None:
    """Why the run counts as still running (its process), or None."""
    if status.get("state") != "running":
        return None
    pid = status.get("pid")
    started_at = parse_time(status.get("started_at"))
    if not check_pid(pid, started_at, run_dir).alive:
        return None  # DEAD, as the app shows it
    create_time = None
    for record in reversed(records):
        if record.pid == pid and record.run_dir in (None, run_dir):
            create_time = record.create_time
            break
    found = verify(pid, started_at, create_time, run_dir)
    if found == GONE:
        return None
    if isinstance(found, str):
        return (
            f"status.json says running and process {pid} is alive ({found}): "
            "not resumed while it may be the run"
        )
    return f"still running (pid {pid}): stop it first (s, or {command()} stop RUN_DIR)"


def _resume_starting(run_dir: str, records: list[LaunchRecord]) -> LaunchRecord | None:
    """An earlier resume of this run whose process is still alive (it may not have
    rewritten status.json yet)."""
    for record in reversed(records):
        if resume_of(record) == run_dir and launch_alive(record):
            return record
    return None


# -- the plan ----------------------------------------------------------------------------


def plan_resume(
    run_dir: str,
    *,
    data: str | None = None,
    device: str | None = None,
    executable: str | None = None,
    environ: Mapping[str, str] | None = None,
    choice: str | None = None,
) -> ResumePlan:
    """The checked command that resumes run_dir from its newest complete checkpoint, or
    from `choice` (best | last | epoch_N | a path: core.launch.resume_from.pick); raises
    ResumeError (one line) when the run cannot or must not be resumed. Reads, never
    writes."""
    run_dir = os.path.abspath(os.path.expanduser(run_dir))
    name = os.path.basename(run_dir) or run_dir
    if not os.path.isdir(run_dir):
        raise ResumeError(f"{run_dir} is not a run directory")
    notices: list[str] = []
    status = _read_status(run_dir)
    state = "unknown"
    total = done = None
    if status is not None:
        raw_state = status.get("state")
        if raw_state == "completed":
            raise ResumeError(f"{name} completed: nothing to resume")
        records = read_launches(os.path.dirname(run_dir))
        alive = _alive_reason(run_dir, status, records)
        if alive:
            raise ResumeError(f"{name}: {alive}")
        state = {"running": "dead", "failed": "failed"}.get(raw_state, "unknown")
        pid = status.get("pid") if type(status.get("pid")) is int else None
        stop = stop_of(read_stops(run_dir), pid, parse_time(status.get("started_at")))
        state = stopped_state(state, stop)  # the user stopped it: STOPPED, not FAILED
        total = checked(status.get("total_epochs"), EPOCHS, integer=True)[0]
        done = checked(status.get("completed_epochs"), EPOCHS, integer=True)[0]
    else:
        records = read_launches(os.path.dirname(run_dir))
        notices.append("no status.json: resuming from the checkpoint alone")
    starting = _resume_starting(run_dir, records)
    if starting is not None:
        raise ResumeError(
            f"{name} is already being resumed (pid {starting.pid}, console log "
            f"{starting.console_log})"
        )
    candidates = list_candidates(run_dir, total)
    try:
        chosen = pick(run_dir, candidates, choice)
    except ResumeFromError as exc:
        raise ResumeError(str(exc)) from None
    metrics_epoch = _last_metrics_epoch(run_dir)
    if metrics_epoch is not None and (done is None or metrics_epoch > done):
        done = metrics_epoch

    config, problem = config_scalars(run_dir, ("data", "device"))
    if data is None:
        data = config.get("data")
        if data is None:
            why = problem or f"{CONFIG_NAME} names no dataset"
            raise ResumeError(f"{name}: {why}: give the dataset with --data PATH/data.yaml")
        if not os.path.isfile(data):
            raise ResumeError(
                f"{name}: the dataset {data} (from {CONFIG_NAME}) does not exist here: "
                "give it with --data PATH/data.yaml"
            )
    else:
        data = os.path.abspath(os.path.expanduser(data.strip()))
        if not os.path.isfile(data):
            raise ResumeError(f"data: {data} does not exist")
    if device is None:
        device = config.get("device")
        if device is None:
            notices.append(
                f"{problem or CONFIG_NAME + ' names no device'}: libreyolo picks the device "
                "(auto); give it with --device"
            )
        elif not _DEVICE.fullmatch(device):
            raise ResumeError(f"{name}: {CONFIG_NAME} names an odd device; give --device")
    else:
        device = device.strip()
        if not _DEVICE.fullmatch(device):
            raise ResumeError(f"device: {device!r} is not a device (0, 0,1, cpu, auto...)")

    exe = executable or _spec.libreyolo_executable()
    if exe is None:
        raise ResumeError(_spec.libreyolo_missing())
    plan = ResumePlan(
        run_dir=run_dir,
        checkpoint="",
        data=data,
        device=device,
        argv=(exe,),
        state=state,
        completed_epochs=done,
        total_epochs=total,
        notices=tuple(notices),
        candidates=candidates,
    )
    plan = with_checkpoint(plan, chosen)
    token = (os.environ if environ is None else environ).get("HF_TOKEN") or ""
    if len(token) >= HF_TOKEN_MIN and any(token in item for item in plan.argv):
        raise ResumeError("the HF token must not be on the command line (it is in a path)")
    return plan


def with_checkpoint(plan: ResumePlan, chosen: ResumeCandidate) -> ResumePlan:
    """The plan resuming from `chosen` (one of its candidates, or a path pick() checked):
    the command, the epoch it holds, the epochs trained again, the torn files set aside."""
    run_dir = plan.run_dir
    argv = [plan.argv[0], "train", f"model={chosen.path}", "resume=True", f"data={plan.data}"]
    if plan.device is not None:
        argv.append(f"device={plan.device}")
    if not in_weights(run_dir, chosen.path):  # elsewhere: name the run, or a new one starts
        argv += [f"project={plan.project}", f"name={plan.name}", "exist_ok=True"]
    redo = None
    if chosen.epoch is not None and plan.completed_epochs is not None:
        redo = max(plan.completed_epochs - chosen.epoch, 0)
    aside = tuple(c.path for c in plan.candidates if c.torn and c.path != chosen.path)
    return dataclasses.replace(
        plan,
        checkpoint=chosen.path,
        argv=tuple(argv),
        from_name=chosen.name,
        from_epoch=chosen.epoch,
        from_epoch_source=chosen.epoch_from,
        redo_epochs=redo,
        set_aside=aside,
    )


def choose(plan: ResumePlan, name: str) -> ResumePlan:
    """`plan` resuming from its candidate `name` instead (the app's dialog); ResumeError
    when it is not one, or cannot be resumed from."""
    for c in plan.candidates:
        if c.name == name:
            if c.problem is not None:
                raise ResumeError(f"{plan.name}: not resumed from {name}: {c.problem}")
            return with_checkpoint(plan, c)
    raise ResumeError(f"{plan.name}: {name} is not one of its checkpoints")


# -- starting it -------------------------------------------------------------------------


def start_resume(
    run_dir: str,
    *,
    data: str | None = None,
    device: str | None = None,
    env: Mapping[str, str] | None = None,
    executable: str | None = None,
    now: Callable[[], float] = time.time,
    choice: str | None = None,
) -> tuple[ResumePlan, LaunchRecord]:
    """Check the run again (plan_resume, from `choice`), set its torn checkpoints aside,
    record the launches that became it, and start the resume detached, recorded in
    `<project>/.rgpu/launches.jsonl`; returns at once. Raises ResumeError."""
    with _STARTING:
        plan = plan_resume(
            run_dir, data=data, device=device, executable=executable, environ=env, choice=choice
        )
        plan = dataclasses.replace(plan, set_aside_as=_set_aside(plan, now()))
        _record_earlier_launches(plan.run_dir)
        try:
            record = _launch.start_recorded(plan.argv, plan.project, plan.name, env=env, now=now)
        except _spec.LaunchError as exc:
            raise ResumeError(str(exc)) from None
    return plan, record


def _set_aside(plan: ResumePlan, now: float) -> tuple[str, ...]:
    """Rename each torn checkpoint `<name>.torn-<time>` (libreyolo would overwrite it);
    the new names."""
    out = []
    for path in plan.set_aside:
        new = set_aside_name(path, now)
        try:
            os.rename(path, new)
            out.append(new)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ResumeError(
                f"{plan.name}: cannot set the torn {os.path.basename(path)} aside: "
                f"{describe_os_error(exc)}"
            ) from None
    return tuple(out)


def _record_earlier_launches(run_dir: str) -> None:
    """Record, for each launch that became `run_dir` by its pid or start time (before the
    resume rewrites status.json with its own), that it did: once the pid is the resume's,
    nothing on disk would tell any more, and the launch would read as one that died before
    writing status.json. A record that cannot be written is no reason not to resume."""
    project = os.path.dirname(run_dir)
    records = [r for r in read_launches(project) if not r.run_dir]
    if not records:
        return
    matched = match_launches(records, runs_on_disk(project), project)
    for record in records:
        if matched.get(record.id) == run_dir:
            try:
                _launch.record_run_dir(project, record.id, run_dir)
            except OSError:
                pass
