"""The one refresh driver (core.picture.refresh) and its failure rule, which the app, `watch`,
the agent and the exporter share: a refresh that raises is one line, told once per different
line, cleared by a success (the same bug coming back is told again); a step run on the
Snapshot that raises is a failed refresh too. A real Collector over an empty root; its
refresh made to raise by a root whose listing fails."""

from __future__ import annotations

from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.picture.refresh import RefreshDriver


class Flaky:
    """A real Collector whose refresh raises while `bug` is set (a reader bug)."""

    def __init__(self, root) -> None:
        self.collector = Collector(str(root), one_shot=True)
        self.bug: str | None = None

    def refresh(self, now, **more):
        if self.bug is not None:
            raise RuntimeError(self.bug)
        return self.collector.refresh(now, **more)


def test_a_failure_is_one_line_told_once_and_cleared_by_a_success(tmp_path) -> None:
    flaky = Flaky(tmp_path)
    told: list[str] = []
    driver = RefreshDriver(flaky, clock=lambda: 1000.0, on_failure=told.append)
    assert driver.refresh().generated_at == 1000.0 and driver.failure is None
    flaky.bug = "disk\non   fire"
    assert driver.refresh() is None and driver.refresh() is None
    assert told == ["RuntimeError: disk on fire"] and driver.failure == told[0]
    flaky.bug = "another"
    assert driver.refresh() is None
    assert told[1:] == ["RuntimeError: another"]
    flaky.bug = None
    assert driver.refresh() is not None and driver.failure is None
    flaky.bug = "another"  # back after a success: told again
    driver.refresh()
    assert told[2:] == ["RuntimeError: another"]


def test_a_step_that_raises_is_a_failed_refresh(tmp_path) -> None:
    told: list[str] = []
    driver = RefreshDriver(Flaky(tmp_path), on_failure=told.append)
    assert driver.refresh(then=lambda snap: len(snap.runs)) == 0

    def bad(snap):
        raise KeyError("x")

    assert driver.refresh(then=bad) is None
    assert told == ["KeyError: 'x'"]
