"""The launches a refresh shows: matched to their runs, or rows of their own.

Launches recorded in `<root>/.rgpu/launches.jsonl` are matched to the runs found on disk
every refresh (core.records.launch_runs.match_launches); nothing is written back. A launch
matched to a run is one of that run's attempts (core.picture.run_life); one with no run
directory yet is a row of its own: "starting" (its console log as its log) or, when its
process died first, "failed" with the console's error, for DIED_LAUNCH_SHOWN_S.

When the root is itself a run directory (`rgpu-tui snapshot RUN`, the app on one run), the
launches of its project (the parent's `.rgpu/launches.jsonl`) are matched too, only to
give the run its attempts: the same run reads the same from its project and from itself.
"""

from __future__ import annotations

import os

from ..model.snapshot import RunInfo
from ..records.attempts import RECORD_PAST_S, in_window, record_window
from ..records.launch_records import (
    LaunchRecord,
    launch_pseudo_dir,
    launches_path,
    read_launch_file,
)
from ..records.launch_runs import RunOnDisk, launch_alive, match_launches, state_without_run
from .run_life import RecordEnds

DIED_LAUNCH_SHOWN_S = 6 * 3600.0  # a launch that died before status.json, shown this long


class _Records:
    """One project's launches.jsonl: read again only when it changed; its matching kept
    while its inputs are the same and no launch is left running unmatched."""

    def __init__(self, project: str) -> None:
        self.project = project
        self.key: tuple | None = None
        self.records: list[LaunchRecord] = []
        self.odd_times = 0  # launches left out: their time is no time
        self._matched: tuple | None = None

    def read(self) -> None:
        try:
            st = os.stat(launches_path(self.project))
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        if key != self.key:
            self.key = key
            self.records, self.odd_times = read_launch_file(self.project) if key else ([], 0)

    def match(self, on_disk: tuple[RunOnDisk, ...], alive, ended: set[str]) -> dict[str, str]:
        if self._matched is not None and self._matched[0] == (self.key, on_disk):
            return self._matched[1]
        matched = match_launches(self.records, on_disk, self.project, alive=alive)
        settled = all(
            r.id in matched or r.died_error or r.returncode is not None or r.id in ended
            for r in self.records
        )
        self._matched = ((self.key, on_disk), matched) if settled else None
        return matched


class LaunchRows:
    """The launches of one root, each refresh (see the module doc)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._own = _Records(root)
        self._parent = _Records(os.path.dirname(root))
        self._final: dict[str, RunInfo] = {}  # died launches (final)
        self._ended: set[str] = set()  # launches whose process has ended
        self._ends = RecordEnds()  # their ends, read once each ended
        self.log_paths: dict[str, str] = {}  # pseudo run -> its console log
        self.by_run: dict[str, list[LaunchRecord]] = {}  # run -> its launch records
        self.notice: str | None = None  # launches left out for their times, said once

    def refresh(self, now: float, found: list[RunInfo]) -> list[RunInfo]:
        """The rows of the launches with no run among `found` (reads only)."""
        self.log_paths, self.by_run, self.notice = {}, {}, None
        on_disk = tuple(RunOnDisk(i.run_dir, i.pid, i.started_at) for i in found)
        sources = [self._own]
        if any(i.run_dir == self.root for i in found):  # the root is a run
            sources.append(self._parent)
        for source in sources:
            source.read()
            if source.records:
                matched = source.match(on_disk, self.alive, self._ended)
                for record in source.records:
                    if record.id in matched:
                        self.by_run.setdefault(matched[record.id], []).append(record)
        self._ends.keep_only({r.id for s in sources for r in s.records})
        if not self._own.records:
            self._say(self._own.odd_times, 0)
            return []
        return self._rows(now, {r.id for runs in self.by_run.values() for r in runs})

    def _rows(self, now: float, matched: set[str]) -> list[RunInfo]:
        out = []
        window = record_window(None, now)
        outside = 0
        for record in self._own.records:
            if record.id in matched:
                continue  # its run directory is watched like any other
            if not in_window(record.time, record.exited_at, window):
                outside += 1  # a launch months old still "starting", or one in the future
                continue
            pseudo = launch_pseudo_dir(self.root, record.id)
            info = self._final.get(pseudo)
            if info is None:
                state = state_without_run(record, now)
                if state.state == "started":
                    continue  # found on disk after this refresh's scan: the next one shows it
                info = _launch_info(record, pseudo, state)
                if state.state == "died":
                    self._final[pseudo] = info
            if info.state == "failed" and now - record.time > DIED_LAUNCH_SHOWN_S:
                continue
            self.log_paths[pseudo] = record.console_log
            out.append(info)
        self._say(self._own.odd_times, outside)
        return out

    def _say(self, odd_times: int, outside: int) -> None:
        parts = []
        if odd_times:
            parts.append(f"{odd_times} with a time that is no time (out of range or not a number)")
        if outside:
            days = RECORD_PAST_S / 86_400
            parts.append(f"{outside} dated more than {days:.0f} days ago or in the future")
        self.notice = f"launch records ignored: {', '.join(parts)}" if parts else None

    def with_records(self, info: RunInfo, watcher, now: float) -> RunInfo:
        """A run (its RunWatcher) with the launch records that are its own: its attempts."""
        records = self.by_run.get(info.run_dir)
        if not records or watcher is None:
            return info
        pairs = [(r, self._ends.span(r, self.alive(r))) for r in records]
        return watcher.with_records(info, pairs, now, self._ends)

    def alive(self, record: LaunchRecord) -> bool:
        """launch_alive, remembering the launches that have ended (they never run again)."""
        if record.id in self._ended:
            return False
        if launch_alive(record):
            return True
        self._ended.add(record.id)
        return False


def _launch_info(record: LaunchRecord, pseudo: str, state) -> RunInfo:
    return RunInfo(
        run_dir=pseudo,
        name=f"{record.name} (launch)",
        state="starting" if state.state == "starting" else "failed",
        pid=record.pid,
        pid_alive=state.state == "starting",
        elapsed_seconds=state.elapsed,
        error=state.error,
        problem="launched; waiting for status.json (console log below)"
        if state.state == "starting"
        else None,
        activity=record.time,
    )
