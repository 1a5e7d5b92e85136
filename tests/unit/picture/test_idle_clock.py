"""The one idle clock (core.picture.idle): the GPU header, the idle banner, the idle money and
`snapshot --json` read the same count."""

from __future__ import annotations

from pathlib import Path

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.formatting import iso
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.picture.idle import GAP_CAP_S, IdleClock

T0 = 1_800_000_000.0


def test_gaps_count_at_most_the_cap_and_busy_ends_the_stretch() -> None:
    clock = IdleClock()
    assert clock.sample(T0, True).stretch_seconds == 0.0  # the stretch begins
    assert clock.sample(T0 + 30, True).stretch_seconds == 30.0
    reading = clock.sample(T0 + 30 + 3600, True)  # suspended for an hour
    assert reading.stretch_seconds == 30.0 + GAP_CAP_S and reading.total_seconds == 150.0
    busy = clock.sample(T0 + 3700, False)
    assert busy.stretch_seconds is None and busy.total_seconds == 150.0
    assert clock.sample(T0 + 3710, True).stretch_seconds == 0.0  # a new stretch
    back = clock.sample(T0 + 3000, True)  # the clock went back: nothing counted
    assert back.stretch_seconds == 0.0 and back.total_seconds == 150.0


def test_the_collector_gives_the_gpus_the_cost_trackers_idle_time(tmp_path: Path) -> None:
    collector = Collector(str(tmp_path), fake_gpus=2, settings=Settings(price_per_hour=3.6))
    try:
        for now in (T0, T0 + 60, T0 + 60 + 3600):
            snap = collector.refresh(now)
    finally:
        collector.close()
    assert snap.gpus.idle and snap.gpus.idle_seconds == 180.0
    assert snap.cost.idle_now_seconds == 180.0 and snap.cost.idle_now_spent == 0.18
    data = snapshot_to_json(snap)
    assert data["gpus"]["idle_seconds"] == 180.0
    assert data["gpus"]["idle_since"] == iso(T0 + 3660 - 180)
    assert data["cost"]["idle_now_seconds"] == 180.0


def test_one_look_cannot_see_idle_time(tmp_path: Path) -> None:
    collector = Collector(str(tmp_path), fake_gpus=2, one_shot=True)
    try:
        snap = collector.refresh(T0)
    finally:
        collector.close()
    assert snap.gpus.idle and snap.gpus.idle_seconds is None
    assert snap.cost.idle_now_seconds is None and not snap.cost.idle_alert
    assert snapshot_to_json(snap)["gpus"]["idle_since"] is None
