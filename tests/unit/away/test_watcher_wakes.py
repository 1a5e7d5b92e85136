"""`watch`'s loop (core.away.watcher) looks again soon while autostop's notification goes out:
with `--interval 3600` the command would otherwise run, and be looked at, an hour after the
`autostop` event. FAKE collector, stop and autostop (the loop's three collaborators, each a
few lines that record what the loop asked); the real EventEngine."""

from __future__ import annotations

from rgpu_tui.core.away.events import EventEngine
from rgpu_tui.core.away.watcher import Watcher
from rgpu_tui.core.model.snapshot import Snapshot


class FakeCollector:
    def refresh(self, now):
        return Snapshot(generated_at=now, root="/r", root_exists=True, runs=(), selected=None)


class FakeStop:
    """Records each wait; stops the loop after `looks` of them."""

    def __init__(self, looks: int) -> None:
        self.waits: list[float] = []
        self.looks = looks

    @property
    def requested(self) -> bool:
        return len(self.waits) >= self.looks

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)


class FakeAutostop:
    """Notifying for its first two looks, then nothing to say."""

    def __init__(self) -> None:
        self.steps = 0

    def step(self, snap) -> None:
        self.steps += 1

    def wake_in(self) -> float | None:
        return 0.5 if self.steps <= 2 else None


def test_the_loop_looks_again_within_half_a_second_while_notifying(tmp_path) -> None:
    stop = FakeStop(looks=3)
    autostop = FakeAutostop()
    watcher = Watcher(FakeCollector(), EventEngine(pushes=False), lambda e: None,
                      str(tmp_path / "state.json"), 3600.0, say=print, autostop=autostop,
                      save_state=lambda path, state: None)  # fmt: skip
    watcher.run(stop)
    assert autostop.steps == 3
    assert all(w <= 0.5 for w in stop.waits[:2]), stop.waits
    assert stop.waits[2] > 3000  # then its own interval again
