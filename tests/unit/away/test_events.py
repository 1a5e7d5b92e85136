"""core.away.events: each event once per occurrence, across restarts (the state round trip),
the first look's rules, machine conditions, push records read incrementally."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from rgpu_tui.core.away.events import (
    CLEAR_AFTER_S,
    FIRST_LOOK_S,
    RUN_FORGET_S,
    EventEngine,
    clean,
)
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.model.snapshot import CostView, DiskInfo, RunInfo, Snapshot, SystemView

NOW = 1_800_000_000.0
ROOT = "/runs"
GB = 10**9


def run(name: str = "exp1", state: str = "running", pid: int | None = 100, **kw) -> RunInfo:
    fields = dict(
        run_dir=f"{ROOT}/{name}",
        name=name,
        state=state,
        status_state="running" if state in ("dead", "stalled") else state,
        pid=pid,
        current_epoch=3,
        total_epochs=10,
        progress=0.3,
        activity=NOW - 10,
    )
    fields.update(kw)
    return RunInfo(**fields)


def snap(now: float, *runs: RunInfo, cost=None, system=None, root: str = ROOT) -> Snapshot:
    return Snapshot(
        generated_at=now,
        root=root,
        root_exists=True,
        runs=tuple(runs),
        selected=None,
        cost=cost,
        system=system,
    )


def names(events) -> list[str]:
    return [e.event for e in events]


def restarted(engine: EventEngine, **kwargs) -> EventEngine:
    """A new engine from what the old one would have saved (through JSON, as on disk)."""
    return EventEngine(engine.settings, json.loads(json.dumps(engine.state())), **kwargs)


def test_a_dead_run_is_reported_once_and_a_second_death_after_a_resume_again() -> None:
    engine = EventEngine(pushes=False)
    assert engine.observe(snap(NOW, run(state="running", pid=100))) == []
    died = engine.observe(snap(NOW + 1, run(state="dead", pid=100, error="process 100 is gone")))
    assert names(died) == ["run_dead"]
    assert died[0].run == f"{ROOT}/exp1"
    assert "exp1 is DEAD" in died[0].message and "process 100 is gone" in died[0].message
    for t in range(2, 6):
        assert engine.observe(snap(NOW + t, run(state="dead", pid=100))) == []
    # resumed (a new pid), died again: a second occurrence
    assert names(engine.observe(snap(NOW + 6, run(state="running", pid=200)))) == ["run_started"]
    assert names(engine.observe(snap(NOW + 7, run(state="dead", pid=200)))) == ["run_dead"]


def test_each_final_state_once() -> None:
    engine = EventEngine(pushes=False)
    runs = [run("a"), run("b"), run("c")]
    engine.observe(snap(NOW, *runs))
    later = [
        run("a", state="completed", best_metric=0.5, best_metric_name="metrics/mAP50-95"),
        run("b", state="failed", error="RuntimeError: CUDA out of memory"),
        run("c", state="stalled", error="no status update for 20m00s"),
    ]
    events = engine.observe(snap(NOW + 1, *later))
    assert sorted(names(events)) == ["run_done", "run_failed", "run_stalled"]
    by = {e.event: e.message for e in events}
    assert "mAP50-95 0.5" in by["run_done"]
    assert "CUDA out of memory" in by["run_failed"]
    assert engine.observe(snap(NOW + 2, *later)) == []


def test_a_restarted_engine_repeats_nothing_and_reports_what_happened_while_down() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, run("a"), run("b"), run("c", pid=300)))
    engine.observe(snap(NOW + 1, run("a", state="dead"), run("b"), run("c", pid=300)))
    again = restarted(engine)
    now = (run("a", state="dead"), run("b"), run("c", pid=300))
    assert again.observe(snap(NOW + 100, *now)) == []
    # while it was down: b completed; c was resumed and died again under a new pid
    down = (
        run("a", state="dead"),
        run("b", state="completed", activity=NOW + 150),
        run("c", state="dead", pid=301),
    )
    again = restarted(again)
    assert sorted(names(again.observe(snap(NOW + 200, *down)))) == ["run_dead", "run_done"]
    assert restarted(again).observe(snap(NOW + 300, *down)) == []


def test_first_look_reports_recent_bad_states_only() -> None:
    old = NOW - FIRST_LOOK_S - 60
    runs = (
        run("dead-now", state="dead", activity=NOW - 3600),
        run("dead-last-week", state="dead", activity=NOW - 7 * 86400),
        run("failed-today", state="failed", activity=NOW - 60),
        run("failed-old", state="failed", activity=old),
        run("stalled", state="stalled"),
        run("done-today", state="completed", activity=NOW - 60),
        run("running"),
    )
    events = EventEngine(pushes=False).observe(snap(NOW, *runs))
    assert sorted((e.event, e.run) for e in events) == [
        ("run_dead", f"{ROOT}/dead-now"),
        ("run_failed", f"{ROOT}/failed-today"),
        ("run_stalled", f"{ROOT}/stalled"),
    ]
    # the app's engine: what it finds at start is on the screen, not news
    assert EventEngine(pushes=False, first_look=False).observe(snap(NOW, *runs)) == []


def test_runs_appearing_later_are_news_when_new() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW))  # an empty root
    copied = run("copied", state="completed", activity=NOW - 86400)  # files older than the look
    fresh = run("fresh", state="completed", activity=NOW + 5)
    started = run("started", activity=NOW - 86400)
    events = engine.observe(snap(NOW + 10, copied, fresh, started))
    assert sorted((e.event, e.run) for e in events) == [
        ("run_done", f"{ROOT}/fresh"),
        ("run_started", f"{ROOT}/started"),
    ]


def test_a_flicker_to_unknown_is_not_news() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, run()))
    assert engine.observe(snap(NOW + 1, run(state="unknown", pid=None))) == []
    assert engine.observe(snap(NOW + 2, run())) == []


def test_a_stall_that_recovers_is_not_a_start_and_stalling_again_is_news() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, run()))
    assert names(engine.observe(snap(NOW + 1, run(state="stalled")))) == ["run_stalled"]
    assert engine.observe(snap(NOW + 2, run())) == []
    assert names(engine.observe(snap(NOW + 3, run(state="stalled")))) == ["run_stalled"]


def test_a_launch_that_dies_before_status_json_is_a_failure_and_starting_is_silent() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW))
    pseudo = dict(run_dir=f"{ROOT}/.rgpu/launch/abc", name="exp (launch)", pid=55)
    assert engine.observe(snap(NOW + 1, run(state="starting", **pseudo))) == []
    died = engine.observe(snap(NOW + 2, run(state="failed", error="exit 1: bad data", **pseudo)))
    assert names(died) == ["run_failed"] and "bad data" in died[0].message


def test_new_best_only_when_asked() -> None:
    def best(epoch: int, value: float) -> RunInfo:
        return run(best_epoch=epoch, best_metric=value, best_metric_name="metrics/mAP50")

    quiet = EventEngine(pushes=False)
    asked = EventEngine(Settings(notify_new_best=True), pushes=False)
    for engine in (quiet, asked):
        assert engine.observe(snap(NOW, best(3, 0.3))) == []  # a baseline
        assert engine.observe(snap(NOW + 1, best(3, 0.3))) == []
    assert quiet.observe(snap(NOW + 2, best(5, 0.4))) == []
    events = asked.observe(snap(NOW + 2, best(5, 0.4)))
    assert names(events) == ["new_best"] and "mAP50 0.4 at epoch 5" in events[0].message
    assert restarted(asked).observe(snap(NOW + 3, best(5, 0.4))) == []


# -- push records ----------------------------------------------------------------------


def push_line(outcome: str, error: str | None = None, file: str = "best.pt") -> str:
    return json.dumps({"file": file, "outcome": outcome, "error": error}) + "\n"


@pytest.fixture
def pushed_run(tmp_path: Path):
    run_dir = tmp_path / "runs" / "exp1"
    (run_dir / ".rgpu").mkdir(parents=True)
    records = run_dir / ".rgpu" / "pushes.jsonl"
    records.write_text(push_line("error", "old failure"))
    return run(run_dir=str(run_dir)), records


def test_push_failed_for_new_error_records_only(pushed_run) -> None:
    info, records = pushed_run
    engine = EventEngine()
    assert engine.observe(snap(NOW, info)) == []  # the old failure is not news
    with records.open("a") as f:
        f.write(push_line("ok"))
    assert engine.observe(snap(NOW + 1, info)) == []
    with records.open("a") as f:
        f.write(push_line("error", "the Hub failed with 500 (3 tries): try again later"))
        f.write('{"file": "last.pt", "outcome": "er')  # torn: waits for its newline
    events = engine.observe(snap(NOW + 2, info))
    assert names(events) == ["push_failed"]
    assert "push of best.pt failed: the Hub failed with 500" in events[0].message
    assert engine.observe(snap(NOW + 3, info)) == []
    with records.open("a") as f:
        f.write('ror", "error": "disk full"}\n')
    events = engine.observe(snap(NOW + 4, info))
    assert names(events) == ["push_failed"] and "last.pt failed: disk full" in events[0].message
    assert restarted(engine).observe(snap(NOW + 5, info)) == []


def test_push_records_replaced_by_a_new_file_are_read_from_its_start(pushed_run) -> None:
    info, records = pushed_run
    engine = EventEngine()
    engine.observe(snap(NOW, info))
    tmp = records.with_suffix(".new")
    tmp.write_text(push_line("error", "token rejected (401)"))
    os.replace(tmp, records)  # a new inode
    assert names(engine.observe(snap(NOW + 1, info))) == ["push_failed"]


def test_a_fifo_where_the_records_go_is_no_records_and_never_blocks(tmp_path: Path) -> None:
    run_dir = tmp_path / "exp1"
    (run_dir / ".rgpu").mkdir(parents=True)
    engine = EventEngine()
    info = run(run_dir=str(run_dir))
    engine.observe(snap(NOW, info))
    os.mkfifo(run_dir / ".rgpu" / "pushes.jsonl")
    assert engine.observe(snap(NOW + 1, info)) == []


# -- machine conditions -------------------------------------------------------------------


def idle_cost(idle_s: float | None, minutes: float = 10.0) -> CostView:
    return CostView(
        configured=True, price_per_hour=2.0, idle_now_seconds=idle_s, idle_minutes=minutes
    )


def test_idle_once_per_stretch() -> None:
    engine = EventEngine(pushes=False)
    assert engine.observe(snap(NOW, cost=idle_cost(0.0))) == []
    assert engine.observe(snap(NOW + 1, cost=idle_cost(599.0))) == []
    events = engine.observe(snap(NOW + 2, cost=idle_cost(600.0)))
    assert names(events) == ["idle"] and "$0.33 spent idle" in events[0].message
    assert engine.observe(snap(NOW + 3, cost=idle_cost(4000.0))) == []
    assert restarted(engine).observe(snap(NOW + 4, cost=idle_cost(0.0))) == []  # still idle
    assert engine.observe(snap(NOW + 5, cost=idle_cost(None))) == []  # busy: it ended
    assert engine.observe(snap(NOW + 6, cost=idle_cost(700.0))) != []  # a new stretch


def system(free: int, total: int = 100 * GB, largest: int | None = None, full_in=None):
    return SystemView(
        cpu_percent=None,
        cpu_max_percent=None,
        load_avg=None,
        mem_used_bytes=None,
        mem_total_bytes=None,
        swap_used_bytes=None,
        swap_total_bytes=None,
        disk=DiskInfo(path="/runs", total_bytes=total, used_bytes=total - free, free_bytes=free),
        largest_checkpoint_bytes=largest,
        disk_full_in_hours=full_in,
    )


@pytest.mark.parametrize(
    "low, said",
    [
        (system(5 * GB), "95% full"),
        (system(30 * GB, largest=20 * GB), "less than twice the largest checkpoint"),
        (system(30 * GB, full_in=3.0), "full in 3h00m at the current rate"),
    ],
)
def test_disk_low_each_rule(low: SystemView, said: str) -> None:
    engine = EventEngine(pushes=False)
    assert engine.observe(snap(NOW, system=system(50 * GB))) == []
    events = engine.observe(snap(NOW + 1, system=low))
    assert names(events) == ["disk_low"] and said in events[0].message


def test_disk_low_hovering_at_the_line_is_one_occurrence() -> None:
    engine = EventEngine(pushes=False)
    low, ok = system(9 * GB), system(11 * GB)
    assert names(engine.observe(snap(NOW, system=low))) == ["disk_low"]
    t = NOW
    for _ in range(5):  # in and out of the condition, each time for a minute
        t += 60
        assert engine.observe(snap(t, system=ok)) == []
        t += 60
        assert engine.observe(snap(t, system=low)) == []
    assert engine.observe(snap(t + 1, system=ok)) == []
    assert engine.observe(snap(t + 1 + CLEAR_AFTER_S, system=ok)) == []  # ended now
    assert names(engine.observe(snap(t + 2 + CLEAR_AFTER_S, system=low))) == ["disk_low"]


def balance(left: float, out_in: float | None) -> CostView:
    return CostView(
        configured=True,
        price_per_hour=2.0,
        balance_left=left,
        balance_runs_out_at=None if out_in is None else NOW + out_in,
    )


@pytest.mark.parametrize(
    "cost, runs, said",
    [
        (balance(-1.0, -1800), (), "has run out"),
        (balance(8.0, 4 * 3600), (run(eta_seconds=5 * 3600),), "before exp1 finishes"),
        (balance(3.0, 1.5 * 3600), (), "runs out in 1h30m"),
        (balance(50.0, 25 * 3600), (run(eta_seconds=5 * 3600),), None),
        (balance(8.0, 4 * 3600), (run(state="completed", eta_seconds=5 * 3600),), None),
        (CostView(configured=True), (), None),
    ],
)
def test_balance_low(cost: CostView, runs, said: str | None) -> None:
    events = EventEngine(pushes=False).observe(snap(NOW, *runs, cost=cost))
    got = [e for e in events if e.event == "balance_low"]
    if said is None:
        assert got == []
    else:
        assert len(got) == 1 and said in got[0].message


def test_a_held_condition_repeats_at_most_every_repeat_after() -> None:
    """What the autostop part uses for autostop_held (at most hourly)."""
    engine = EventEngine(pushes=False)
    said = []
    for minute in range(0, 150, 10):
        event = engine.condition(
            "autostop_held",
            True,
            NOW + 60 * minute,
            "exp1's best.pt is not on the Hub",
            repeat_after=3600,
        )
        if event is not None:
            said.append(minute)
    assert said == [0, 60, 120]


# -- what a message may hold ---------------------------------------------------------------


def test_messages_are_one_printable_line_without_tokens() -> None:
    engine = EventEngine(pushes=False, token="secret-token-not-hf-shaped")
    engine.observe(snap(NOW, run("evil\x1b]0;x\x07\nname")))
    error = (
        "ValueError: bad hf_abcdefghijklmnopqrstuvwxyz123 and secret-token-not-hf-shaped "
        "at http://user:pass@hub.example/x\x1b[2J"
    )
    [event] = engine.observe(
        snap(NOW + 1, run("evil\x1b]0;x\x07\nname", state="failed", error=error))
    )
    message = event.message
    assert "\x1b" not in message and "\n" not in message and "\x07" not in message
    assert "^[" in message  # shown, not acted on
    assert "hf_abcdefghijklmnopqrstuvwxyz123" not in message and "hf_***" in message
    assert "secret-token-not-hf-shaped" not in message
    assert "user:pass" not in message
    assert len(clean("x" * 10_000)) <= 400


def test_a_damaged_state_is_taken_entry_by_entry() -> None:
    state = {
        "version": 1,
        "seen_until": "yesterday",
        "runs": {
            f"{ROOT}/a": {"state": "dead", "pid": 100},
            f"{ROOT}/b": ["not", "a", "record"],
            f"{ROOT}/c": {"state": "exploded", "pid": True, "pushes": [-1, "x"]},
        },
        "conditions": {"disk_low": {"reported_at": 1e300}, "idle": "on"},
    }
    engine = EventEngine(state=state, pushes=False)
    runs = (run("a", state="dead"), run("b", state="dead"), run("c", state="dead"))
    events = engine.observe(snap(NOW, *runs))
    # seen_until unusable: a first look; a is known dead, b and c are reported once
    assert sorted(e.run for e in events) == [f"{ROOT}/b", f"{ROOT}/c"]
    assert EventEngine(state={"version": 99}, pushes=False).state()["runs"] == {}


def test_a_run_gone_for_a_week_is_forgotten_and_back_sooner_is_not_news() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, run(state="dead")))
    engine.observe(snap(NOW + 1))  # gone (an NFS hiccup)
    assert engine.observe(snap(NOW + 2, run(state="dead"))) == []
    engine.observe(snap(NOW + 3))
    engine.observe(snap(NOW + 4 + RUN_FORGET_S))
    assert engine.state()["runs"] == {}


def test_event_json_shape() -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, run()))
    [event] = engine.observe(snap(NOW + 1, replace(run(), state="dead")))
    assert event.to_json() == {
        "at": "2027-01-15T08:00:01+00:00",
        "event": "run_dead",
        "run": f"{ROOT}/exp1",
        "message": event.message,
    }
    assert event.to_text().startswith("2027-01-15T08:00:01+00:00 run_dead exp1 is DEAD")


def test_the_first_look_is_kept_even_when_it_found_nothing() -> None:
    """So a watcher restarted on an empty root does not take its first look again."""
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW))
    assert engine.dirty
    again = restarted(engine)
    assert again.seen_until == NOW
    # a run that died long ago, copied in later: not news (a first look would say it)
    assert again.observe(snap(NOW + 1, run(state="dead", activity=NOW - 3600))) == []


def test_a_launch_that_died_before_status_json_names_the_run_it_was_launched_for(
    tmp_path: Path,
) -> None:
    """notify's {run} for a launch that died before its status.json: the run directory it
    was launched for (project/name), never its stand-in under .rgpu/launch/."""
    import subprocess
    import sys
    import time

    from rgpu_tui.core.picture.watch import RunsWatcher
    from rgpu_tui.core.records.records import append_json_line

    project = tmp_path / "runs"
    (project / ".rgpu" / "console").mkdir(parents=True)
    died = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    died.wait()
    console = project / ".rgpu" / "console" / "l1.log"
    console.write_text("Error: data.yaml not found\n")
    argv = ["libreyolo", "train", "data=x.yaml", f"project={project}", "name=exp"]
    record = {
        "kind": "launch", "id": "l1", "time": time.time() - 5, "pid": died.pid,
        "create_time": time.time() - 5, "argv": argv, "command": " ".join(argv),
        "cwd": str(project), "project": str(project), "name": "exp",
        "console_log": str(console),
    }  # fmt: skip
    append_json_line(str(project / ".rgpu" / "launches.jsonl"), record)
    snapshot = RunsWatcher(str(project)).refresh(time.time())
    (launch,) = snapshot.runs
    assert launch.state == "failed" and "/.rgpu/launch/" in launch.run_dir
    (event,) = EventEngine(pushes=False).observe(snapshot)
    assert event.event == "run_failed" and event.run == str(project / "exp")
    assert event.to_json()["run"] == str(project / "exp")
