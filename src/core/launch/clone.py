"""What the launch form starts from: a clone of the selected run, else the last launch.

A run launched by rgpu-tui has its exact command in `<project>/.rgpu/launches.jsonl`
(core.records.launch_records; which launch became which run: core.records.launch_runs):
every field and extra argument comes back from that argv. Any other run (started by hand,
pulled from the Hub) gives what libreyolo wrote in its train_config.yaml (data, epochs,
batch, imgsz, device, name; read as core.launch.resume reads it: safeio, in the run, a
safe YAML loader) and the model status.json named (RunInfo.model, e.g. yolo9-t). With no
run selected, the newest launch of the root is the start. A resume's record
(`resume=True`, model=RUN/weights/last.pt) is not a launch to repeat and is skipped.

Reads only, files of untrusted runs included: a value is a field's text, never run; the
form checks it like anything typed (core.launch.launch_spec.make_spec).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from ..model.snapshot import RunInfo
from ..records.launch_records import LaunchRecord, is_launch_pseudo_dir, read_launches
from ..records.launch_runs import RunOnDisk, match_launches
from .launch_spec import FIELD_KEYS, arg_key
from .resume import config_scalars

CONFIG_KEYS = ("data", "epochs", "batch", "imgsz", "device", "name")
VALUE_MAX = 4096  # a field longer than this is not a value anybody typed


@dataclass(frozen=True)
class Prefill:
    values: dict[str, str]  # form field -> text (only those known)
    source: str  # what the values came from, for the form's title


def values_from_argv(argv: Sequence[str]) -> dict[str, str]:
    """The fields and the extra arguments of a `libreyolo train key=value ...` argv."""
    values: dict[str, str] = {}
    extra: list[str] = []
    for item in list(argv)[2:]:
        if not isinstance(item, str) or len(item) > VALUE_MAX:
            continue
        key = arg_key(item)
        if key in FIELD_KEYS and "=" in item:
            values[key] = item.split("=", 1)[1]
        else:
            extra.append(item)
    if extra:
        values["extra"] = shlex.join(extra)
    return values


def _is_resume(record: LaunchRecord) -> bool:
    return any(item.replace(" ", "").lower() == "resume=true" for item in record.argv[2:])


def launch_of(run: RunInfo, runs: Sequence[RunInfo]) -> LaunchRecord | None:
    """The launch (not a resume) that became `run`, if rgpu-tui recorded one."""
    if is_launch_pseudo_dir(run.run_dir):  # a launch with no run directory: its own record
        project = os.path.dirname(os.path.dirname(os.path.dirname(run.run_dir)))
        wanted = os.path.basename(run.run_dir)
        return next((r for r in read_launches(project) if r.id == wanted), None)
    project = os.path.dirname(run.run_dir)
    records = [r for r in read_launches(project) if not _is_resume(r)]
    if not records:
        return None
    on_disk = [RunOnDisk(r.run_dir, r.pid, r.started_at) for r in runs]
    if run.run_dir not in {r.run_dir for r in on_disk}:
        on_disk.append(RunOnDisk(run.run_dir, run.pid, run.started_at))
    matched = match_launches(records, on_disk, project)
    ids = {launch_id for launch_id, run_dir in matched.items() if run_dir == run.run_dir}
    return next((r for r in reversed(records) if r.id in ids), None)


def clone_run(run: RunInfo, runs: Sequence[RunInfo] = ()) -> Prefill:
    """The form's values for a run like `run`: its launch's argv, else its train_config.yaml
    and status.json; the project is the run's own parent."""
    record = launch_of(run, runs)
    if record is not None:
        values = values_from_argv(record.argv)
        values.setdefault("project", record.project)
        return Prefill(values, f"clone of {run.name}")
    config, _problem = config_scalars(run.run_dir, CONFIG_KEYS)
    values = {k: v for k, v in config.items() if len(v) <= VALUE_MAX}
    if run.model:
        values["model"] = run.model
    values["project"] = os.path.dirname(run.run_dir)
    values.setdefault("name", os.path.basename(run.run_dir))
    return Prefill(values, f"clone of {run.name}")


def last_launch(root: str) -> Prefill | None:
    """The newest launch (not a resume) recorded under `root`, as form values."""
    records = [r for r in read_launches(root) if not _is_resume(r)]
    if not records:
        return None
    record = records[-1]
    values = values_from_argv(record.argv)
    values.setdefault("project", record.project)
    return Prefill(values, f"as the last launch, {record.name}")


def prefill(root: str, selected: RunInfo | None, runs: Sequence[RunInfo] = ()) -> Prefill | None:
    """A clone of the selected run, else the last launch under root, else None."""
    if selected is not None:
        return clone_run(selected, runs)
    return last_launch(root)
