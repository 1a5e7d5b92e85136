"""Reading `<project>/.rgpu/launches.jsonl`: one LaunchRecord per launch.

The file is written by the commands that act (core.launch.launch: the launch itself, the exit
status the launcher reaped, the run directory once `rgpu-tui launch` found it, the error
of a launch that died); this module only reads it. A launch is a line of kind "launch";
later lines with the same id ("run_dir", "exit", "died") complete it. Torn or malformed
lines, and records with a bad pid or time, are skipped (core.records.records): every time
of a record (`time`, `create_time`, an exit's `time`) is a number of epoch seconds within
core.base.values.TIMES, or it is unknown; a launch whose own time is unknown (text, NaN,
-1e300, a 400-digit number) is no record, and counted (`read_launch_file`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from ..base.values import TIMES, checked, value_text
from ..run.run_process import CREATE_TIME_SLACK_S  # noqa: F401  (launch records' start times)
from .records import read_json_lines

RGPU_DIR = ".rgpu"
LAUNCHES_NAME = "launches.jsonl"
MAX_RECORDS_BYTES = 8 * 1024 * 1024
TEXT_MAX = 4096  # characters of a record's field that is not text where text belongs


@dataclass(frozen=True)
class LaunchRecord:
    id: str
    time: float
    pid: int
    create_time: float | None  # psutil's, of the launched process
    argv: tuple[str, ...]
    command: str
    cwd: str
    project: str
    name: str
    console_log: str
    hf_token_set: bool = False
    hf_home: str | None = None
    run_dir: str | None = None
    returncode: int | None = None  # when the launcher reaped it
    exited_at: float | None = None
    died_error: str | None = None  # once known to have died before status.json: final
    died_tail: tuple[str, ...] = ()

    def to_json(self) -> dict:
        data = asdict(self)
        data["argv"] = list(self.argv)
        data["died_tail"] = list(self.died_tail)
        return data


def rgpu_dir(project: str) -> str:
    return os.path.join(os.path.abspath(project), RGPU_DIR)


LAUNCH_PSEUDO_DIR = "launch"  # <root>/.rgpu/launch/<id>: a launch with no run directory yet


def launch_pseudo_dir(root: str, launch_id: str) -> str:
    """The run_dir a launch without its run directory is listed under (it does not exist:
    the runs list and the Snapshot need a key for it)."""
    return os.path.join(rgpu_dir(root), LAUNCH_PSEUDO_DIR, launch_id)


def is_launch_pseudo_dir(run_dir: str) -> bool:
    """Is `run_dir` a launch's stand-in (launch_pseudo_dir), not a run directory? Also for a
    fleet host's paths: only the shape is looked at."""
    parent = os.path.dirname(os.path.normpath(run_dir))
    return (
        os.path.basename(parent) == LAUNCH_PSEUDO_DIR
        and os.path.basename(os.path.dirname(parent)) == RGPU_DIR
    )


def launches_path(project: str) -> str:
    return os.path.join(rgpu_dir(project), LAUNCHES_NAME)


def read_launches(project: str) -> list[LaunchRecord]:
    """The launches recorded under `project`, oldest first; torn or bad lines are skipped."""
    return read_launch_file(project)[0]


def record_time(value) -> float | None:
    """A time in a record: epoch seconds within TIMES (1970..2200), else None (unknown)."""
    return checked(value, TIMES)[0]


def read_launch_file(project: str) -> tuple[list[LaunchRecord], int]:
    """read_launches, and how many launches were left out because their time is unknown
    (out of range or not a number)."""
    launches: dict[str, dict] = {}
    updates: list[dict] = []
    for obj in read_json_lines(launches_path(project), MAX_RECORDS_BYTES):
        if not isinstance(obj.get("id"), str):
            continue
        if obj.get("kind") == "launch":
            launches[obj["id"]] = obj
        else:
            updates.append(obj)
    for obj in updates:
        base = launches.get(obj["id"])
        if base is None:
            continue
        if obj.get("kind") == "run_dir" and isinstance(obj.get("run_dir"), str):
            base["run_dir"] = obj["run_dir"]
        elif obj.get("kind") == "exit":
            base["returncode"] = obj.get("returncode")
            base["exited_at"] = obj.get("time")
        elif obj.get("kind") == "died" and isinstance(obj.get("error"), str):
            base["died_error"] = obj["error"]
            base["died_tail"] = obj.get("tail")
    records = []
    odd_times = 0
    for obj in launches.values():
        record = _record_from(obj)
        if record is not None:
            records.append(record)
        elif "time" in obj and record_time(obj["time"]) is None:
            odd_times += 1
    records.sort(key=lambda r: r.time)
    return records, odd_times


def _record_from(obj: dict) -> LaunchRecord | None:
    try:
        pid = obj["pid"]
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            return None
        argv = obj.get("argv") or []
        time = record_time(obj.get("time"))
        if time is None:
            return None
        return LaunchRecord(
            id=obj["id"],
            time=time,
            pid=pid,
            create_time=record_time(obj.get("create_time")),
            argv=_strings(argv),
            command=_text(obj.get("command") or ""),
            cwd=_text(obj.get("cwd") or ""),
            project=_text(obj["project"]),
            name=_text(obj.get("name") or ""),
            console_log=_text(obj["console_log"]),
            hf_token_set=bool(obj.get("hf_token_set")),
            hf_home=obj.get("hf_home") if isinstance(obj.get("hf_home"), str) else None,
            run_dir=obj.get("run_dir") if isinstance(obj.get("run_dir"), str) else None,
            returncode=obj.get("returncode") if isinstance(obj.get("returncode"), int) else None,
            exited_at=record_time(obj.get("exited_at")),
            died_error=obj.get("died_error") if isinstance(obj.get("died_error"), str) else None,
            died_tail=_strings(obj.get("died_tail")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _text(value) -> str:
    """A record's text field: any other value as bounded text (core.base.values.value_text)."""
    return value if isinstance(value, str) else value_text(value, TEXT_MAX)


def _strings(value) -> tuple[str, ...]:
    return tuple(_text(v) for v in value) if isinstance(value, list) else ()


def launched_for(run_dir: str) -> str | None:
    """For a launch's stand-in (launch_pseudo_dir): the run directory it was launched for
    (its recorded run_dir, else project/name), read from its root's launches.jsonl; None
    for anything else, or a launch no record names."""
    if not is_launch_pseudo_dir(run_dir):
        return None
    pseudo = os.path.normpath(run_dir)
    root = os.path.dirname(os.path.dirname(os.path.dirname(pseudo)))
    launch_id = os.path.basename(pseudo)
    for record in reversed(read_launches(root)):
        if record.id == launch_id:
            return record.run_dir or os.path.join(record.project, record.name)
    return None
