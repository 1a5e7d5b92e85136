"""A run's life across kills and resumes, as the refresh builds it (core.picture.run_life):
one row for a launched-then-resumed run, its attempts and their sum, the cost of all of
them, and an ended launch whose elapsed time stops at its end."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.resumed_run import dead_pid, killed_and_resumed
from support.run_dir import iso

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.picture.cost import cost_once
from rgpu_tui.core.picture.watch import RunsWatcher


def _refresh(root: Path, now: float):
    collector = Collector(str(root), fake_gpus=0, one_shot=True)
    try:
        return collector.refresh(now)
    finally:
        collector.close()


@pytest.mark.parametrize("exits", [True, False], ids=["exit-records", "console-logs"])
def test_a_resumed_launch_is_one_run_with_two_attempts(tmp_path: Path, exits: bool) -> None:
    """The launch whose pid status.json no longer carries is the run's
    first attempt, not a "FAIL exp (launch)" row."""
    project = tmp_path / "runs"
    t0 = time.time() - 3600
    run = killed_and_resumed(project, t0, exits=exits)
    snap = _refresh(project, t0 + 3600)
    assert [(r.name, r.state) for r in snap.runs] == [("exp", "dead")]
    (info,) = snap.runs
    first, second = info.attempts
    assert (first.started_at, first.ended_at, first.epochs) == (t0, t0 + 53, 22)
    assert (second.started_at, second.ended_at, second.epochs) == (t0 + 58, t0 + 75, 3)
    how = "exit record" if exits else "console log"
    assert first.known_by == f"launch record, {how}"
    assert info.elapsed_seconds == pytest.approx(53 + 17)
    assert info.current_epoch == 23  # the history's epochs, once each
    shown = snapshot_to_json(snap)["runs"][0]
    assert shown["elapsed_seconds"] == pytest.approx(70.0)
    assert shown["epochs_trained"] == 25
    assert [
        (a["started_at"], a["ended_at"], a["epochs"], a["ended"]) for a in shown["attempts"]
    ] == [
        (iso(t0), iso(t0 + 53), 22, True),
        (iso(t0 + 58), iso(t0 + 75), 3, True),
    ]
    assert run.is_dir()


def test_the_cost_and_the_eta_count_every_attempt(tmp_path: Path) -> None:
    """Item 4: the run's cost is its attempts' time at the rate ($36/h: 70 s cost $0.70);
    the mean epoch time is every row's (2.4 s), not status.json's attempt alone."""
    project = tmp_path / "runs"
    t0 = time.time() - 3600
    killed_and_resumed(project, t0)
    snap = _refresh(project, t0 + 3600)
    (info,) = snap.runs
    assert info.mean_epoch_seconds == pytest.approx(2.4)
    view = cost_once(Settings(price_per_hour=36.0), t0 + 3600, snap.runs, info)
    assert view.run_spent == pytest.approx(0.70)


def test_an_ended_launch_stops_at_its_end_in_every_later_look(tmp_path: Path) -> None:
    """Item 3: a launch that died after 20 s (exit recorded, or only its console log)
    reads 20 s however late an app first looks at it."""
    project = tmp_path / "runs"
    console = project / ".rgpu" / "console"
    console.mkdir(parents=True)
    t0 = time.time() - 7200
    lines = []
    for rid, exited in (("a", True), ("b", False)):
        log = console / f"{rid}.log"
        log.write_text("Error: data.yaml not found\n")
        os.utime(log, (t0 + 20, t0 + 20))
        lines.append(
            {
                "kind": "launch", "id": rid, "time": t0, "pid": dead_pid(), "create_time": t0,
                "argv": ["libreyolo", "train", f"name=x{rid}"], "command": "libreyolo train",
                "cwd": str(project), "project": str(project), "name": f"x{rid}",
                "console_log": str(log),
            }
        )  # fmt: skip
        if exited:
            lines.append({"kind": "exit", "id": rid, "returncode": 1, "time": t0 + 20})
    (project / ".rgpu" / "launches.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    for later in (t0 + 30, t0 + 3000):
        runs = RunsWatcher(str(project)).refresh(later).runs
        assert {r.name: (r.state, r.elapsed_seconds) for r in runs} == {
            "xa (launch)": ("failed", 20.0),
            "xb (launch)": ("failed", 20.0),
        }


def test_the_header_the_text_and_the_events_say_the_sum(tmp_path: Path) -> None:
    """The text snapshot lists the attempts; run_dead says the time of all of them."""
    from rgpu_tui.core.away.events import EventEngine
    from rgpu_tui.core.render.snapshot_text import snapshot_to_text

    project = tmp_path / "runs"
    t0 = time.time() - 3600
    killed_and_resumed(project, t0)
    snap = _refresh(project, t0 + 3600)
    text = snapshot_to_text(snap)
    assert "          2 attempts: 53s (22 epochs), 17s (3 epochs)" in text.splitlines()
    engine = EventEngine(Settings(), None)
    (event,) = engine.observe(snap)
    assert event.event == "run_dead"
    assert event.message.endswith("(ran 1m10s over 2 attempts)")


def test_a_run_reads_the_same_from_its_project_and_from_itself(tmp_path: Path) -> None:
    """`rgpu-tui snapshot RUN` reads the project's launch records for the run's attempts
    (and shows no row of another launch of the project)."""
    project = tmp_path / "runs"
    t0 = time.time() - 3600
    run = killed_and_resumed(project, t0)
    from_project = _refresh(project, t0 + 3600).runs[0]
    (from_run,) = _refresh(run, t0 + 3600).runs
    assert from_run.attempts == from_project.attempts and len(from_run.attempts) == 2
    assert from_run.elapsed_seconds == from_project.elapsed_seconds


def _resume_line(project: Path, run: Path, pid: int, at: float, created: float) -> dict:
    log = project / ".rgpu" / "console" / "exp-r2.log"
    log.write_text("Traceback (most recent call last):\nValueError: Cannot resume from it\n")
    return {
        "kind": "launch", "id": "r2", "time": at, "pid": pid, "create_time": created,
        "argv": ["libreyolo", "train", f"model={run}/weights/last.pt", "resume=True"],
        "command": "libreyolo train", "cwd": str(project), "project": str(project),
        "name": "exp", "console_log": str(log),
    }  # fmt: skip


def test_a_resume_not_yet_in_status_json_shows_starting_then_why_it_died(
    tmp_path: Path, me
) -> None:
    """A resume whose process lives and has not rewritten status.json: the run reads NEW
    (starting), not DEAD, and no row of its own; once it died first: the run is as it
    was, with the console's error under it."""
    project = tmp_path / "runs"
    t0 = time.time() - 3600
    run = killed_and_resumed(project, t0)
    records = project / ".rgpu" / "launches.jsonl"
    before = records.read_text()
    now = time.time()
    line = _resume_line(project, run, me.pid, now - 5, me.create_time())
    records.write_text(before + json.dumps(line) + "\n")
    (info,) = _refresh(project, now).runs
    assert (info.state, info.name) == ("starting", "exp")
    assert info.problem == f"resumed (pid {me.pid}); waiting for it to write status.json"
    assert info.error is None  # the old attempt's "process ... is gone" is not the header's
    assert info.attempts[-1].known_by == "launch record (starting)" and len(info.attempts) == 3
    gone = {**line, "pid": dead_pid(), "create_time": now - 5}
    exit_line = {"kind": "exit", "id": "r2", "returncode": 1, "time": now - 2}
    records.write_text(before + json.dumps(gone) + "\n" + json.dumps(exit_line) + "\n")
    (info,) = _refresh(project, now).runs
    assert info.state == "dead"
    assert info.problem.endswith(
        "ended before writing status.json: ValueError: Cannot resume from it"
    )
    assert (info.attempts[-1].epochs, info.attempts[-1].seconds) == (0, 3.0)


def test_time_and_cost_after_a_resume_count_both_attempts(tmp_path: Path) -> None:
    """Item 4, with no launch record at all (trained and resumed with libreyolo itself):
    22 epochs of 2.4 s before the kill, a resume from epoch 20 that completed in 26 s. The
    run's time is both attempts' (52.8 + 26 s), its cost too, not the last one's 26 s."""
    run = tmp_path / "runs" / "exp"
    run.mkdir(parents=True)
    rows = [{"epoch": e, "time": 2.4} for e in range(1, 23)]
    rows += [{"epoch": e, "time": 2.6} for e in range(21, 31)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    t0 = time.time() - 600
    status = {
        "state": "completed", "pid": dead_pid(), "total_epochs": 30, "start_epoch": 21,
        "completed_epochs": 10, "started_at": iso(t0), "updated_at": iso(t0 + 26),
        "elapsed_seconds": 26.0, "mean_epoch_seconds": 2.6,
    }  # fmt: skip
    (run / "status.json").write_text(json.dumps(status))
    snap = _refresh(run.parent, time.time())
    (info,) = snap.runs
    assert info.elapsed_seconds == pytest.approx(52.8 + 26.0)
    view = cost_once(Settings(price_per_hour=36.0), time.time(), snap.runs, info)
    assert view.run_spent == pytest.approx((52.8 + 26.0) / 100)
    assert info.mean_epoch_seconds == pytest.approx((22 * 2.4 + 10 * 2.6) / 32)


def test_rows_without_a_time_are_left_out_of_the_mean_epoch_time(tmp_path: Path) -> None:
    """Rows with no `time` (an older libreyolo; a row whose time is out of
    range) are not 0-second epochs: 5 rows of 3 s among 10 make a mean of 3 s (1.5 s when
    they counted), read through the real metrics reader."""
    run = tmp_path / "runs" / "exp"
    run.mkdir(parents=True)
    rows = [{"epoch": e, **({"time": 3.0} if e % 2 else {})} for e in range(1, 10)]
    rows.append({"epoch": 10, "time": -4.0})  # out of range: unknown, not a time
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    t0 = time.time() - 600
    status = {
        "state": "completed", "pid": dead_pid(), "total_epochs": 10, "start_epoch": 1,
        "completed_epochs": 10, "started_at": iso(t0), "updated_at": iso(t0 + 40),
        "elapsed_seconds": 40.0,
    }  # fmt: skip
    (run / "status.json").write_text(json.dumps(status))
    (info,) = _refresh(run.parent, time.time()).runs
    assert info.mean_epoch_seconds == pytest.approx(3.0)
