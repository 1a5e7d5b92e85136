"""More runs than the watcher's state keeps: past 10,000 runs the oldest
entries were dropped, live runs among them, and each refresh told some of them as
`run_started` again, forever. No run is news twice, whatever the count; a restarted watcher
(its state saved and loaded) repeats nothing either."""

from __future__ import annotations

from rgpu_tui.core.away.events import MAX_RUNS_KEPT, RUN_FORGET_S, EventEngine
from rgpu_tui.core.model.snapshot import RunInfo, Snapshot
from rgpu_tui.core.records.event_state import load_state, save_state

NOW = 1_800_000_000.0
COUNT = MAX_RUNS_KEPT + 250


def runs(n: int, prefix: str = "/runs/exp") -> tuple[RunInfo, ...]:
    return tuple(
        RunInfo(run_dir=f"{prefix}{i}", name=f"exp{i}", state="running", pid=1000 + i,
                current_epoch=1, total_epochs=10, activity=NOW)
        for i in range(n)
    )  # fmt: skip


def snap(t: float, items: tuple[RunInfo, ...]) -> Snapshot:
    return Snapshot(generated_at=t, root="/runs", root_exists=True, runs=items, selected=None)


def test_more_runs_than_kept_are_each_news_once(tmp_path) -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, ()))  # the first look: an empty root
    live = runs(COUNT)
    started = engine.observe(snap(NOW + 1, live))
    assert len(started) == COUNT and {e.event for e in started} == {"run_started"}
    for t in range(2, 6):  # was: a few hundred run_started at each refresh, forever
        assert engine.observe(snap(NOW + t, live)) == []
    path = tmp_path / "watch.json"
    save_state(str(path), engine.state())
    state, problem = load_state(str(path))
    assert problem is None
    restarted = EventEngine(state=state, pushes=False)
    assert restarted.observe(snap(NOW + 10, live)) == []


def test_runs_gone_from_disk_are_forgotten_first_and_live_ones_never(tmp_path) -> None:
    engine = EventEngine(pushes=False)
    engine.observe(snap(NOW, ()))
    old = runs(300, prefix="/runs/old")
    engine.observe(snap(NOW + 1, old))
    engine.observe(snap(NOW + 2, ()))  # the old ones are gone from disk
    live = runs(COUNT)
    assert len(engine.observe(snap(NOW + 3, live))) == COUNT
    kept = engine.state()["runs"]
    assert len(kept) == MAX_RUNS_KEPT + 250  # every live run; the gone ones made room
    assert all(run.run_dir in kept for run in live)
    assert engine.observe(snap(NOW + 4, live)) == []
    assert engine.observe(snap(NOW + RUN_FORGET_S + 10, live)) == []
