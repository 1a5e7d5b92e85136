"""The demo's runs on disk: how much they hold, and clearing them (`rgpu-tui demo --clear`).

Each `rgpu-tui demo` trains a new run (demo, demo2, ...) under `<work dir>/runs`, and each
keeps its checkpoints (best.pt, last.pt, an epoch_N.pt every 5 epochs): a few hundred MB a
run in the user's cache. The demo says what they hold (measured: the blocks the files use,
as `du` counts them) and how to clear them.

A demo run is one a demo launch record of this work directory became: recorded under
`<work dir>/runs` with the demo's name and this work directory's dataset, its directory
directly under the runs folder, named demo or demoN, a real folder (not a symlink). Nothing
else is ever removed, whatever `--dir` points at. While a demo launch still runs, nothing is
removed (it says which one, and how to stop it).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass

from ..records.launch_records import LaunchRecord, launches_path, read_launches, rgpu_dir
from ..records.launch_runs import launch_alive, launch_state

MAX_ENTRIES = 200_000  # files and folders counted per measure; beyond it the size is a floor


@dataclass(frozen=True)
class DemoRuns:
    runs_root: str
    run_dirs: tuple[str, ...]  # the demo runs on disk, oldest first
    bytes: int  # what they use on disk (their folders and console logs)
    training: tuple[tuple[int, str], ...] = ()  # (pid, run dir or console log) still running
    only_demo: bool = True  # every launch record under runs_root is a demo's


def disk_bytes(path: str, max_entries: int = MAX_ENTRIES) -> int:
    """What the files under `path` use on disk (st_blocks, as `du`), symlinks not followed;
    at most max_entries entries are counted (a floor beyond that)."""
    total, seen = 0, 0
    stack = [path]
    while stack and seen < max_entries:
        here = stack.pop()
        try:
            st = os.lstat(here)
        except OSError:
            continue
        seen += 1
        total += st.st_blocks * 512
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(here) as it:
                    stack.extend(entry.path for entry in it)
            except OSError:
                continue
    return total


def _is_demo_record(record: LaunchRecord, runs_root: str, data_yaml: str, name: str) -> bool:
    return (
        record.name == name
        and os.path.abspath(record.project) == runs_root
        and f"data={data_yaml}" in record.argv
    )


def _run_dir_of(record: LaunchRecord, runs_root: str, name: str) -> str | None:
    """The demo run this launch became, when it is one that may be removed."""
    run_dir = launch_state(record, time.time()).run_dir
    if not run_dir:
        return None
    run_dir = os.path.abspath(run_dir)
    if os.path.dirname(run_dir) != runs_root:
        return None
    if not re.fullmatch(re.escape(name) + r"\d*", os.path.basename(run_dir)):
        return None
    try:
        st = os.lstat(run_dir)
    except OSError:
        return None
    return run_dir if stat.S_ISDIR(st.st_mode) else None


def demo_runs(work_dir: str, data_yaml: str, name: str) -> DemoRuns:
    """The demo runs under `<work_dir>/runs` (see the module doc), measured."""
    runs_root = os.path.join(os.path.abspath(work_dir), "runs")
    records = read_launches(runs_root) if os.path.isdir(runs_root) else []
    mine = [r for r in records if _is_demo_record(r, runs_root, data_yaml, name)]
    run_dirs: list[str] = []
    training: list[tuple[int, str]] = []
    used = 0
    for record in mine:
        run_dir = _run_dir_of(record, runs_root, name)
        if launch_alive(record):
            training.append((record.pid, run_dir or record.console_log))
        if run_dir and run_dir not in run_dirs:
            run_dirs.append(run_dir)
            used += disk_bytes(run_dir)
        if record.console_log and os.path.isfile(record.console_log):
            used += disk_bytes(record.console_log)
    return DemoRuns(runs_root, tuple(run_dirs), used, tuple(training), len(mine) == len(records))


def clear_demo_runs(runs: DemoRuns) -> int:
    """Remove the demo runs `runs` names, and the records and console logs beside them when
    every record there is a demo's; the bytes freed. Refused (ValueError) while one trains."""
    if runs.training:
        raise ValueError("a demo run is still training")
    gone = list(runs.run_dirs)
    if runs.only_demo and os.path.isfile(launches_path(runs.runs_root)):
        gone.append(rgpu_dir(runs.runs_root))
    freed = 0
    for path in gone:
        before = disk_bytes(path)
        shutil.rmtree(path, ignore_errors=True)  # what could not go is measured again
        freed += before - (disk_bytes(path) if os.path.lexists(path) else 0)
    try:
        os.rmdir(runs.runs_root)  # only when nothing else is in it
    except OSError:
        pass
    return freed
