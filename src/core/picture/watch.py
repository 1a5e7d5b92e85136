"""RunsWatcher: turns a runs root on disk into Snapshots, incrementally.

One `refresh(now, selected)` call stats what changed, reads only new bytes and
returns a new immutable Snapshot. Readers keep their offsets between calls, so
a refresh costs what was appended, not the size of the files.

A refresh only reads. Launches recorded in `<root>/.rgpu/launches.jsonl` are matched
to the runs found on disk every time (core.picture.launch_rows); nothing is written back:
the commands that act write their own records.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import replace
from stat import S_ISDIR, S_ISREG

from ..base.config import Settings
from ..base.formatting import fmt_duration
from ..base.values import EPOCHS, checked
from ..base.values import num as _num
from ..model.snapshot import (
    SERIES_LEN,
    LogView,
    MetricColumn,
    MetricsView,
    PushInfo,
    PushTarget,
    RunInfo,
    SelectedRun,
    Snapshot,
)
from ..records.attempts import Rows, StatusSide, mean_epoch_seconds
from ..records.push_records import push_info, pushes_path, read_pushes
from ..records.stop_records import (
    STOPPED_OVER,
    StopRecord,
    read_stops,
    stop_of,
    stopped_state,
    stops_path,
)
from ..run.checkpoints import CheckpointLister, artifacts_target, default_checkpoint, metrics_inside
from ..run.discovery import RUN_MARKERS, RunFinder
from ..run.hub_target import ARTIFACTS_REQUEST
from ..run.metrics import CheckpointRows, MetricsReader
from ..run.status import PidWatch, StatusNumbers, StatusReader, derive_state, stall_limit
from ..run.tail import LogTail
from .launch_rows import LaunchRows
from .run_life import with_attempts

LOG_NAME = "train.log"
ACTIVITY_FILES = RUN_MARKERS + (LOG_NAME,)
LOG_TAILS_KEPT = 4
NO_NUMBERS = StatusNumbers()


def describe(exc: BaseException) -> str:
    """One line for an unexpected exception: its type and message, whitespace folded."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


def broken_run(run_dir: str, name: str, problem: str) -> RunInfo:
    """A run nothing could be read of: state unknown, every value unknown, and why."""
    try:
        activity = os.stat(run_dir).st_mtime
    except OSError:
        activity = 0.0
    return RunInfo(run_dir=run_dir, name=name, state="unknown", problem=problem, activity=activity)


class RunWatcher:
    """Everything known about one run directory."""

    def __init__(self, run_dir: str, name: str):
        self.run_dir = run_dir
        self.name = name
        self.status = StatusReader(os.path.join(run_dir, "status.json"))
        self.metrics = MetricsReader(run_dir)
        self._metrics_view: tuple[int, MetricsView] | None = None
        self._pushes: tuple[tuple, PushInfo] | None = None
        self._stops: tuple[tuple | None, list[StopRecord]] = (None, [])
        self._pid = PidWatch(run_dir)
        self._checkpoints: CheckpointLister | None = None
        self._metrics_inside: tuple[int, bool] | None = None  # (metrics generation, inside)
        self.odd_files: list[str] = []  # set by activity()
        self.life: tuple[StatusSide, Rows] | None = None  # what its attempts are made of

    def close(self) -> None:
        """Release the pidfd of a running run (the watcher is dropped)."""
        self._pid.close()

    def activity(self) -> float:
        """The newest mtime of the run's files; on the way (the same stats), the files that
        are FIFOs, sockets or devices are noted in `odd_files` ("train.log is not a
        regular file"), so the run says so even while its log is not being read."""
        newest = 0.0
        odd = []
        for name in ACTIVITY_FILES:
            try:
                st = os.stat(os.path.join(self.run_dir, name))
            except OSError:
                continue
            newest = max(newest, st.st_mtime)
            if name != "status.json" and not S_ISREG(st.st_mode) and not S_ISDIR(st.st_mode):
                odd.append(f"{name} is not a regular file")
        self.odd_files = odd
        if not newest:
            try:
                newest = os.stat(self.run_dir).st_mtime
            except OSError:
                pass
        return newest

    def poll(self, now: float) -> RunInfo:
        self.status.poll()
        self.metrics.poll()
        return self.info(now)

    def info(self, now: float) -> RunInfo:
        st = self.status.data or {}
        nums = self.status.numbers or NO_NUMBERS  # range-checked: None when odd or absent
        status_state = st.get("state") if self.status.data is not None else None
        if not isinstance(status_state, str):
            status_state = None
        total = nums.total_epochs
        metrics_epoch = self.metrics.last_epoch
        last_row = self.metrics.last_row

        # epochs done: status.json drops completed_epochs on failure, so take
        # the metrics history too (it is appended just before status.json).
        completed = nums.completed_epochs
        done_candidates = [v for v in (completed, metrics_epoch) if v is not None]
        done = max(done_candidates) if done_candidates else None
        current = nums.current_epoch
        if current is None or (done is not None and done > current):
            current = done
        progress = None
        if total and done is not None:
            progress = min(max(done / total, 0.0), 1.0)
        elif status_state == "running" and total:
            progress = 0.0

        started_at = nums.started_at
        pid = nums.pid
        pid_check = None
        if status_state == "running":
            pid_check = self._pid.check(pid, started_at)
        else:
            self._pid.close()
        pid_alive = pid_check.alive if pid_check else None

        m = self.metrics
        rows = Rows(m.row_epochs, m.row_seconds, m.row_timed, m.row_repeats)
        mean_epoch = mean_epoch_seconds(rows)  # every attempt's epoch times
        if mean_epoch is None:
            mean_epoch = nums.mean_epoch_seconds
        status_elapsed = nums.elapsed_seconds
        if mean_epoch is None and status_elapsed and done is not None:
            start_epoch = nums.start_epoch or 1
            ran = done - start_epoch + 1
            if ran > 0:
                mean_epoch = status_elapsed / ran

        state = derive_state(status_state, pid_check, self.status.mtime, mean_epoch, now)
        life_state = state  # what the attempts count by (a stopped run ended as it did)
        if state in STOPPED_OVER:  # the user stopped this attempt: not a failure
            state = stopped_state(state, stop_of(self.stop_records(), pid, started_at))

        elapsed = status_elapsed
        eta = overdue = None
        if state == "running":
            if started_at is not None:
                elapsed = max(now - started_at, 0.0)
            if mean_epoch is not None and total is not None and done is not None:
                since_update = max(now - (self.status.mtime or now), 0.0)
                eta = mean_epoch * max(total - done, 0) - since_update
                if eta <= 0:  # later than the estimate: say so, never "ETA 0s" while running
                    eta, overdue = None, -eta
        elif life_state == "dead" and started_at is not None:
            updated = nums.updated_at
            if updated is not None:
                elapsed = max(updated - started_at, 0.0)

        best = nums.best_metric
        best_name = st.get("best_metric_name")
        best_epoch = nums.best_epoch
        if best is None:
            best = _num(last_row.get("best_metric"))
            best_epoch = checked(last_row.get("best_epoch"), EPOCHS, integer=True)[0]
        if not isinstance(best_name, str):
            best_name = last_row.get("best_metric_name")
            if not isinstance(best_name, str):
                best_name = None

        error = None
        if state == "failed":
            err = st.get("error")
            if isinstance(err, dict):
                etype = err.get("type") or "Error"
                error = f"{etype}: {err.get('message') or ''}".rstrip(": ")
            elif err:
                error = str(err)
            else:
                error = "failed (status.json gives no error)"
        elif state == "dead" and pid_check is not None:
            error = f"{pid_check.reason}; status.json still says running"
        elif state == "stalled" and self.status.mtime is not None:
            quiet = now - self.status.mtime
            error = (
                f"no status update for {fmt_duration(quiet)} "
                f"(limit {fmt_duration(stall_limit(mean_epoch))}); process {pid} still alive"
            )

        family = st.get("model_family")
        size = st.get("model_size")
        model = f"{family}-{size}" if isinstance(family, str) and isinstance(size, str) else None
        task = st.get("task") if isinstance(st.get("task"), str) else None
        activity = self.activity()
        problems = []
        problem = self.status.problem
        if problem == "no status.json" and self.metrics.row_count:
            problem = None  # a results.csv-only run (another tool): nothing is wrong
        if problem:
            problems.append(problem)
        if nums.odd:
            problems.append("status.json: " + ", ".join(nums.odd))
        problems.extend(self.odd_files)
        odd_metrics = self.metrics.value_problem()
        if odd_metrics:
            problems.append(f"{self.metrics.source}: {odd_metrics}")

        updated_at = st.get("updated_at") if nums.updated_at is not None else None
        self.life = (
            StatusSide(
                started_at=started_at,
                pid=pid,
                updated=nums.updated_at,
                state=life_state,
                status_state=status_state,
                start_epoch=nums.start_epoch,
                completed=completed,
                elapsed=status_elapsed,
            ),
            rows,
        )
        info = RunInfo(
            run_dir=self.run_dir,
            name=self.name,
            state=state,
            status_state=status_state,
            pid=pid,
            pid_alive=pid_alive,
            current_epoch=current,
            completed_epochs=done,
            total_epochs=total,
            progress=progress,
            eta_seconds=eta,
            eta_overdue_seconds=overdue,
            elapsed_seconds=elapsed,
            mean_epoch_seconds=mean_epoch,
            best_metric=best,
            best_metric_name=best_name,
            best_epoch=best_epoch,
            updated_at=updated_at,
            error=error,
            model=model,
            task=task,
            problem="; ".join(problems) or None,
            activity=activity,
            started_at=started_at,
            updated=nums.updated_at,
        )
        return self.with_records(info, [], now)

    def with_records(self, info: RunInfo, records: list, now: float, ends=None) -> RunInfo:
        """`info` with its attempts (core.picture.run_life), given the launch records that
        are this run's as (record, RecordSpan) pairs."""
        if self.life is None:
            return info
        return with_attempts(info, *self.life, records, now, ends)

    def artifacts_target(self, settings) -> PushTarget:
        if self._checkpoints is None:
            self._checkpoints = CheckpointLister(self.run_dir)
        return self._checkpoints.target(settings, ARTIFACTS_REQUEST)

    def checkpoints(self, settings, now: float | None = None) -> tuple:
        """(checkpoints, how many were not listed) of weights/, with the epoch and metric
        each holds by the rows this run's MetricsReader has read (none from a
        results.csv, or from a metrics.jsonl that resolves outside the run: what a push
        would read, core.run.checkpoints.checkpoint_rows)."""
        if self._checkpoints is None:
            self._checkpoints = CheckpointLister(self.run_dir)
        gen = self.metrics.generation  # a symlink swapped to another file bumps it too
        if self._metrics_inside is None or self._metrics_inside[0] != gen:
            self._metrics_inside = (gen, metrics_inside(self.run_dir))
        rows = self.metrics.checkpoint_rows
        usable = self.metrics.source == "metrics.jsonl" and self._metrics_inside[1]
        if not usable:
            rows = CheckpointRows()
        listed = self._checkpoints.checkpoints(rows, settings, rows_key=(gen, usable), now=now)
        return listed, self._checkpoints.not_listed

    def stop_records(self) -> list[StopRecord]:
        """The run's stop records (core.records.stop_records), re-read only when the file
        changed (one stat)."""
        try:
            st = os.stat(stops_path(self.run_dir))
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        if key != self._stops[0]:
            self._stops = (key, read_stops(self.run_dir) if key is not None else [])
        return self._stops[1]

    def push_info(self) -> PushInfo | None:
        """From pushes.jsonl (re-read only when it changed) and one stat of best.pt."""
        key = []
        for path in (pushes_path(self.run_dir), os.path.join(self.run_dir, "weights", "best.pt")):
            try:
                st = os.stat(path)
                key.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                key.append(None)
        key = tuple(key)
        if self._pushes is not None and self._pushes[0] == key:
            return self._pushes[1]
        info = None
        if key[0] is not None:
            best = key[1]
            info = push_info(
                read_pushes(self.run_dir),
                best[1] if best is not None else None,
                best[2] / 1e9 if best is not None else None,
            )
        self._pushes = (key, info)
        return info

    def metrics_view(self) -> MetricsView:
        """Cached until the history changes, so unchanged panes compare equal cheaply."""
        gen = self.metrics.generation
        if self._metrics_view is not None and self._metrics_view[0] == gen:
            return self._metrics_view[1]
        m = self.metrics
        stats = m.stats()
        series = tuple(
            MetricColumn(
                name=name,
                last=stats[name].last if name in stats else None,
                min=stats[name].min if name in stats else None,
                max=stats[name].max if name in stats else None,
                best=stats[name].best if name in stats else None,
                best_epoch=stats[name].best_epoch if name in stats else None,
                values=m.series(name, SERIES_LEN),
                last_epoch=stats[name].last_epoch if name in stats else None,
                min_epoch=stats[name].min_epoch if name in stats else None,
                max_epoch=stats[name].max_epoch if name in stats else None,
            )
            for name in m.numeric_columns()
        )
        view = MetricsView(
            source=m.source,
            columns=tuple(m.columns),
            last=m.last_row,
            series=series,
            rows=m.row_count,
            malformed_lines=m.malformed,
            problem=m.problem,
            non_finite_values=sum(m.non_finite.values()),
        )
        self._metrics_view = (gen, view)
        return view


class RunsWatcher:
    """Watches a runs root (or a single run directory) and builds Snapshots."""

    def __init__(self, root: str, log_keep: int = 1000, settings: Settings | None = None):
        """settings: hub_repo and hub_path, for where the selected run's checkpoints
        would be pushed (core.run.hub_target)."""
        self.root = os.path.abspath(root)
        self.settings = settings or Settings()
        self.finder = RunFinder(self.root)
        self.log_keep = log_keep
        self._runs: dict[str, RunWatcher] = {}
        self._logs: OrderedDict[str, tuple[LogTail, int, LogView]] = OrderedDict()
        self.launches = LaunchRows(self.root)  # the launch records: attempts, own rows

    def _name(self, run_dir: str) -> str:
        rel = os.path.relpath(run_dir, self.root)
        if rel == ".":
            return os.path.basename(self.root) or self.root
        return rel

    def watcher(self, run_dir: str) -> RunWatcher | None:
        return self._runs.get(run_dir)

    def adopt(self, watcher: RunWatcher) -> None:
        """Keep `watcher` with the others (closed with them)."""
        self._runs[watcher.run_dir] = watcher

    def close(self) -> None:
        """Release every run's pidfd (the watcher is dropped)."""
        for watcher in self._runs.values():
            watcher.close()

    def refresh(self, now: float, selected: str | None = None) -> Snapshot:
        if not os.path.isdir(self.root):
            for watcher in self._runs.values():
                watcher.close()
            self._runs.clear()
            self._logs.clear()
            exists = os.path.exists(self.root)
            what = "is a file, not a directory" if exists else "does not exist yet"
            return Snapshot(
                generated_at=now,
                root=self.root,
                root_exists=exists,
                runs=(),
                selected=None,
                problem=f"{self.root} {what}: runs appear here when "
                f"`libreyolo train ... project={self.root}` starts one.",
            )
        found = self.finder.scan()
        unlistable = self.finder.unlistable
        for gone in set(self._runs) - set(found):
            self._runs.pop(gone).close()
            self._logs.pop(gone, None)
        infos = []
        for run_dir in found:
            watcher = self._runs.get(run_dir)
            if watcher is None:
                watcher = self._runs[run_dir] = RunWatcher(run_dir, self._name(run_dir))
            try:
                info = watcher.poll(now)
            except Exception as exc:  # a reader bug: this run's problem, not a failed refresh
                info = broken_run(run_dir, watcher.name, f"could not be read: {describe(exc)}")
            if run_dir in unlistable:
                problem = "; ".join(filter(None, (unlistable[run_dir], info.problem)))
                info = replace(info, problem=problem)
            infos.append(info)
        try:
            infos.extend(self.launches.refresh(now, infos))
            infos = [self._with_records(info, now) for info in infos]
        except Exception as exc:  # a bad launches.jsonl must not hide the runs
            launches_problem = f"launches.jsonl could not be read: {describe(exc)}"
        else:
            launches_problem = self.launches.notice  # records left out for their times
        infos.sort(key=lambda r: (-r.activity, r.name))
        runs = tuple(infos)

        chosen = None
        if selected is not None:
            selected = os.path.abspath(selected)
            if selected in self._runs or selected in self.launches.log_paths:
                chosen = selected
        if chosen is None and runs:
            chosen = runs[0].run_dir
        sel = None
        if chosen is not None:
            sel = self._selected(chosen, now)
        problem = launches_problem
        if not runs and problem is None:
            problem = (
                f"No runs under {self.root} yet: a run appears here when "
                f"`libreyolo train ... project={self.root}` writes its status.json."
            )
        return Snapshot(
            generated_at=now,
            root=self.root,
            root_exists=True,
            runs=runs,
            selected=sel,
            problem=problem,
            deep_dirs_skipped=self.finder.deep_skipped,
        )

    def _selected(self, chosen: str, now: float) -> SelectedRun:
        """The selected run's metrics, log and pushes; a reader bug in one of them is
        that pane's problem, not a failed refresh."""
        watcher = self._runs.get(chosen)
        metrics = MetricsView(None, ())
        pushes = None
        checkpoints, not_listed = (), 0
        target = None
        if watcher is not None:
            try:
                metrics = watcher.metrics_view()
            except Exception as exc:
                metrics = MetricsView(None, (), problem=f"could not be read: {describe(exc)}")
            try:
                pushes = watcher.push_info()
            except Exception:  # pushes.jsonl is ours; a bad one shows as no pushes
                pushes = None
            try:
                checkpoints, not_listed = watcher.checkpoints(self.settings, now)
            except Exception:  # a reader bug: no checkpoints listed (a push says why)
                checkpoints, not_listed = (), 0
            target = watcher.artifacts_target(self.settings)
        try:
            log = self._log_view(chosen)
        except Exception as exc:
            self._logs.pop(chosen, None)
            log = LogView(path=chosen, lines=(), problem=f"could not be read: {describe(exc)}")
        return SelectedRun(
            run_dir=chosen,
            metrics=metrics,
            log=log,
            pushes=pushes,
            checkpoints=checkpoints,
            checkpoints_not_listed=not_listed,
            push_default=default_checkpoint(checkpoints),
            artifacts_target=target or artifacts_target(self.settings, chosen),
        )

    def _with_records(self, info: RunInfo, now: float) -> RunInfo:
        """A run with the launch records that are its own: its attempts (run_life)."""
        try:
            return self.launches.with_records(info, self._runs.get(info.run_dir), now)
        except Exception as exc:  # a bug here must not hide the run
            return replace(info, problem=f"attempts could not be told: {describe(exc)}")

    def _log_view(self, run_dir: str) -> LogView:
        entry = self._logs.pop(run_dir, None)
        if entry is None:
            path = self.launches.log_paths.get(run_dir) or os.path.join(run_dir, LOG_NAME)
            tail = LogTail(path, keep=self.log_keep)
            entry = (tail, -1, None)
        tail, gen, view = entry
        tail.poll()
        if tail.generation != gen or view is None:
            problem = tail.problem
            if problem == "missing":
                problem = f"no {LOG_NAME} yet (libreyolo starts it at epoch 1)"
            elif problem:
                problem = f"{LOG_NAME} {problem}"
            view = LogView(path=tail.path, lines=tail.lines(self.log_keep), problem=problem)
        self._logs[run_dir] = (tail, tail.generation, view)
        while len(self._logs) > LOG_TAILS_KEPT:
            self._logs.popitem(last=False)
        return view
