"""Resuming a run that died or failed, in its own run directory.

A resume is `libreyolo train model=RUN/weights/last.pt resume=True data=DATA device=DEVICE`,
started and recorded exactly like a launch (core.launch.launch.start_recorded: its own session,
stdin /dev/null, a console log under `<project>/.rgpu/console/`, a line in
`<project>/.rgpu/launches.jsonl`), where `<project>` is the run directory's parent.

What libreyolo 1.6.0 needs, read from its CLI (cli/commands/train.py, cli/config.py) and
models/base/model.py, and tried on a SIGKILLed CPU run:
- `resume=True` continues the checkpoint given as `model=`; for a `<run>/weights/*.pt`
  checkpoint it keeps writing into `<run>` (project and name come from the path, with
  exist_ok), from the epoch after the checkpoint's.
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
for a completed run (nothing to resume), and when weights/last.pt is missing, not a
regular file (a FIFO never blocks: nothing is opened but status.json and
train_config.yaml, both through core.base.safeio) or resolves outside the run.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..base.safeio import read_regular
from ..base.values import EPOCHS, checked, parse_json, parse_time
from ..records.launch_records import LaunchRecord, read_launches
from ..records.launch_runs import launch_alive
from ..run.runpath import outside_run
from ..run.status import check_pid
from ..run.tail import describe_os_error
from . import launch as _launch
from . import launch_spec as _spec
from .launch_spec import display_command
from .stop_target import GONE, verify

CHECKPOINT = os.path.join("weights", "last.pt")
CONFIG_NAME = "train_config.yaml"
STATUS_MAX_BYTES = 4 * 1024 * 1024
CONFIG_MAX_BYTES = 1024 * 1024
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
    checkpoint: str  # RUN/weights/last.pt (as a path in the run, not resolved)
    data: str
    device: str | None  # None: not known; libreyolo picks (auto)
    argv: tuple[str, ...]
    state: str  # what the run reads now: "dead", "failed", "unknown" (no status.json)
    completed_epochs: int | None  # the last epoch done, as far as status/metrics say
    total_epochs: int | None
    notices: tuple[str, ...] = ()

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
        }


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
    """The top-level `keys` of train_config.yaml that are strings or integers, and why the
    file could not be read (None when it could)."""
    path = os.path.join(run_dir, CONFIG_NAME)
    problem = outside_run(run_dir, path)
    if problem is not None and os.path.lexists(path):
        return {}, f"{CONFIG_NAME} resolves to {problem}, outside the run directory"
    try:
        raw = read_regular(path, CONFIG_MAX_BYTES)
    except OSError as exc:
        return {}, f"{CONFIG_NAME} {describe_os_error(exc)}"
    if len(raw) > CONFIG_MAX_BYTES:
        return {}, f"{CONFIG_NAME} is larger than {CONFIG_MAX_BYTES // 1024} KiB"
    try:
        import yaml  # PyYAML (pyproject dependencies)

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        doc = yaml.load(raw, Loader=loader)  # noqa: S506 - a safe loader
    except Exception as exc:  # yaml.YAMLError, RecursionError on hostile nesting
        return {}, f"{CONFIG_NAME} is not readable YAML ({type(exc).__name__})"
    if not isinstance(doc, dict):
        return {}, f"{CONFIG_NAME} is not a mapping"
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
    if not check_pid(pid, started_at).alive:
        return None  # DEAD, as the app shows it
    create_time = None
    for record in reversed(records):
        if record.pid == pid and record.run_dir in (None, run_dir):
            create_time = record.create_time
            break
    found = verify(pid, started_at, create_time)
    if found == GONE:
        return None
    if isinstance(found, str):
        return (
            f"status.json says running and process {pid} is alive ({found}): "
            "not resumed while it may be the run"
        )
    return f"still running (pid {pid}): stop it first (s, or rgpu-tui stop RUN_DIR)"


def _resume_starting(checkpoint: str, records: list[LaunchRecord]) -> LaunchRecord | None:
    """An earlier resume of this run whose process is still alive (it may not have
    rewritten status.json yet)."""
    for record in reversed(records):
        if f"model={checkpoint}" in record.argv and "resume=True" in record.argv:
            if launch_alive(record):
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
) -> ResumePlan:
    """The checked command that resumes run_dir; raises ResumeError (one line) when the
    run cannot or must not be resumed. Reads, never writes."""
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
        total = checked(status.get("total_epochs"), EPOCHS, integer=True)[0]
        done = checked(status.get("completed_epochs"), EPOCHS, integer=True)[0]
    else:
        records = read_launches(os.path.dirname(run_dir))
        notices.append("no status.json: resuming from weights/last.pt alone")
    checkpoint = os.path.join(run_dir, CHECKPOINT)
    starting = _resume_starting(checkpoint, records)
    if starting is not None:
        raise ResumeError(
            f"{name} is already being resumed (pid {starting.pid}, console log "
            f"{starting.console_log})"
        )
    _check_checkpoint(run_dir, checkpoint)
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
    argv = [exe, "train", f"model={checkpoint}", "resume=True", f"data={data}"]
    if device is not None:
        argv.append(f"device={device}")
    token = (os.environ if environ is None else environ).get("HF_TOKEN") or ""
    if len(token) >= HF_TOKEN_MIN and any(token in item for item in argv):
        raise ResumeError("the HF token must not be on the command line (it is in a path)")
    return ResumePlan(
        run_dir=run_dir,
        checkpoint=checkpoint,
        data=data,
        device=device,
        argv=tuple(argv),
        state=state,
        completed_epochs=done,
        total_epochs=total,
        notices=tuple(notices),
    )


def _check_checkpoint(run_dir: str, checkpoint: str) -> None:
    """weights/last.pt must be a non-empty regular file inside the run (never opened here:
    libreyolo loads it)."""
    name = os.path.basename(run_dir)
    try:
        st = os.stat(checkpoint)
    except FileNotFoundError:
        raise ResumeError(
            f"{name}: no weights/last.pt: nothing to resume from "
            "(libreyolo writes it after each epoch; `rgpu-tui pull` brings a pushed one back)"
        ) from None
    except OSError as exc:
        raise ResumeError(f"{name}: weights/last.pt {describe_os_error(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ResumeError(f"{name}: weights/last.pt is not a regular file")
    where = outside_run(run_dir, checkpoint)
    if where is not None:
        raise ResumeError(f"{name}: weights/last.pt resolves to {where}, outside the run")
    if st.st_size == 0:
        raise ResumeError(f"{name}: weights/last.pt is empty")


# -- starting it -------------------------------------------------------------------------


def start_resume(
    run_dir: str,
    *,
    data: str | None = None,
    device: str | None = None,
    env: Mapping[str, str] | None = None,
    executable: str | None = None,
    now: Callable[[], float] = time.time,
) -> tuple[ResumePlan, LaunchRecord]:
    """Check the run again (plan_resume) and start the resume detached, recorded in
    `<project>/.rgpu/launches.jsonl`; returns at once. Raises ResumeError."""
    with _STARTING:
        plan = plan_resume(run_dir, data=data, device=device, executable=executable, environ=env)
        try:
            record = _launch.start_recorded(plan.argv, plan.project, plan.name, env=env, now=now)
        except _spec.LaunchError as exc:
            raise ResumeError(str(exc)) from None
    return plan, record
