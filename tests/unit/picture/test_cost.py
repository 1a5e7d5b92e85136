"""Cost: the formulas (the seed guide's 8x RTX 4090 example), idle money, the balance."""

from __future__ import annotations

from dataclasses import replace

import psutil
import pytest
from support.readme_example import COST_JSON_KEYS

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.formatting import iso
from rgpu_tui.core.model.snapshot import CostView, DiskInfo, GpuDevice, GpuView, RunInfo, SystemView
from rgpu_tui.core.model.snapshot_json import cost_to_json
from rgpu_tui.core.picture.cost import (
    HOURS_PER_MONTH,
    CostTracker,
    balance_left,
    balance_runs_out_at,
    billed_hours,
    break_even_hours,
    container_started_at,
    cost_once,
    cost_to_text,
    disk_gb_for,
    run_costs,
    stop_saving_percent,
    stopped_rate,
)

NOW = 1_800_000_000.0
SEED_RATE = 3.4828  # 8x RTX 4090, running, $/h


def seed_settings(**kw) -> Settings:
    base = dict(
        price_per_hour=SEED_RATE,
        disk_gb=250.0,
        storage_price_gb_month=0.20,
        rebuild_cost=1.00,
        billing_started_at=NOW - 2 * 3600,
    )
    base.update(kw)
    return Settings(**base)


def run(name="run1", state="running", elapsed=3600.0, mean_epoch=120.0, eta=1800.0) -> RunInfo:
    return RunInfo(
        run_dir=f"/runs/{name}",
        name=name,
        state=state,
        status_state=state,
        pid=None,
        pid_alive=None,
        current_epoch=30,
        total_epochs=45,
        progress=30 / 45,
        eta_seconds=eta,
        elapsed_seconds=elapsed,
        mean_epoch_seconds=mean_epoch,
        best_metric=None,
        best_metric_name=None,
        best_epoch=None,
        updated_at=None,
        error=None,
    )


def gpus(idle: bool, available: bool = True) -> GpuView:
    device = GpuDevice(index=0, name="RTX 4090", uuid=None, state="ok", util_percent=0.0)
    return GpuView(
        available=available,
        reason=None if available else "no NVML",
        source="fake",
        devices=(device,) if available else (),
        idle=idle,
    )


def system(total_bytes: int) -> SystemView:
    disk = DiskInfo("/runs", total_bytes, 0, total_bytes)
    return SystemView(None, None, None, None, None, None, None, disk)


# -- the seed's numbers -----------------------------------------------------------------


def test_stopped_rate_of_the_seed_example() -> None:
    rate = stopped_rate(250, 0.20)
    assert rate == pytest.approx(250 * 0.20 / HOURS_PER_MONTH)
    assert f"{rate:.4f}" == "0.0694"  # the seed's measured $0.0694/h


def test_saving_and_break_even_of_the_seed_example() -> None:
    stopped = stopped_rate(250, 0.20)
    assert round(stop_saving_percent(SEED_RATE, stopped), 1) == 98.0
    assert stop_saving_percent(SEED_RATE, stopped) == pytest.approx((1 - stopped / SEED_RATE) * 100)
    assert round(break_even_hours(1.00, stopped), 1) == 14.4
    assert break_even_hours(1.00, stopped) == pytest.approx(1.00 / stopped)


def test_the_calculator_text_for_the_seed_example() -> None:
    s = seed_settings()
    view = cost_once(s, NOW)
    text = cost_to_text(view, s, NOW, disk_gb=250.0)
    assert text.splitlines() == [
        "running       $3.48/h",
        f"spent so far  $6.97  (2.0 h since {iso(NOW - 7200)}, settings)",
        "stopped       $0.0694/h  (250 GB x $0.20/GB-month / 720 h)",
        "saving        98.0% while stopped",
        "break-even    14.4 h  (rebuild $1.00: back within 14.4 h, stop; longer, destroy)",
        "balance       ? (set balance: --balance, RGPU_BALANCE or balance in the config file)",
    ]


def test_spent_since_billing_started() -> None:
    assert billed_hours(NOW - 5400, NOW) == 1.5
    assert billed_hours(NOW + 60, NOW) == 0.0  # a start in the future is not negative money
    view = cost_once(seed_settings(), NOW)
    assert view.billed_hours == 2.0
    assert view.spent == pytest.approx(2 * SEED_RATE)
    assert (view.billing_started_at, view.billing_started_source) == (NOW - 7200, "settings")


def test_the_selected_runs_costs() -> None:
    spent, per_epoch, to_finish, total = run_costs(run(), SEED_RATE)
    assert spent == pytest.approx(SEED_RATE)  # one hour
    assert per_epoch == pytest.approx(120 * SEED_RATE / 3600)
    assert to_finish == pytest.approx(SEED_RATE / 2)  # 30 min ETA
    assert total == pytest.approx(1.5 * SEED_RATE)
    view = cost_once(seed_settings(), NOW, (run(),), run())
    assert (view.run_spent, view.per_epoch, view.to_finish, view.projected_total) == (
        spent,
        per_epoch,
        to_finish,
        total,
    )


@pytest.mark.parametrize(
    ("state", "eta", "to_finish"),
    [("completed", None, 0.0), ("failed", 600.0, None), ("dead", 600.0, None)],
)
def test_runs_that_will_not_run_on(state: str, eta: float | None, to_finish) -> None:
    spent, _, got, total = run_costs(run(state=state, eta=eta), SEED_RATE)
    assert got == to_finish
    assert total == (spent if to_finish == 0.0 else None)


def test_a_running_run_without_eta_has_no_cost_to_finish() -> None:
    assert run_costs(run(eta=None), SEED_RATE)[2:] == (None, None)


# -- unknown in, unknown out ------------------------------------------------------------


def test_no_price_gives_no_money() -> None:
    s = seed_settings(price_per_hour=None, balance=10.0, balance_at=NOW)
    view = cost_once(s, NOW, (run(),), run())
    assert view.configured is False and view.price_per_hour is None
    money = (
        "spent run_spent per_epoch to_finish projected_total stop_saving_percent "
        "balance_left balance_runs_out_at idle_spent"
    ).split()
    assert {k: getattr(view, k) for k in money} == dict.fromkeys(money)
    # what does not need the price is still known
    assert view.billed_hours == 2.0
    assert view.stopped_per_hour == pytest.approx(250 * 0.2 / HOURS_PER_MONTH)
    assert view.break_even_hours == pytest.approx(14.4)


def test_missing_inputs_give_none() -> None:
    assert stopped_rate(None, 0.2) is None and stopped_rate(250, None) is None
    assert stop_saving_percent(None, 0.07) is None and stop_saving_percent(3.0, None) is None
    assert break_even_hours(None, 0.07) is None and break_even_hours(1.0, None) is None
    assert balance_left(None, NOW, 3.0, NOW) is None and balance_left(5.0, None, 3.0, NOW) is None
    assert run_costs(None, 3.0) == (None, None, None, None)
    assert run_costs(run(), None) == (None, None, None, None)
    assert billed_hours(None, NOW) is None


def test_free_things_do_not_divide_by_zero() -> None:
    assert break_even_hours(1.0, 0.0) is None  # stopping is free: always stop
    assert stop_saving_percent(0.0, 0.0) is None
    assert balance_runs_out_at(10.0, NOW, 0.0) is None


def test_disk_falls_back_to_the_filesystem_of_the_runs() -> None:
    s = seed_settings(disk_gb=None)
    assert disk_gb_for(s, system(500 * 10**9)) == 500.0
    assert disk_gb_for(s, None) is None
    assert disk_gb_for(seed_settings(), system(500 * 10**9)) == 250.0  # the setting wins
    view = cost_once(s, NOW, system=system(500 * 10**9))
    assert view.stopped_per_hour == pytest.approx(500 * 0.2 / HOURS_PER_MONTH)
    assert cost_once(s, NOW).stopped_per_hour is None


# -- when billing started ---------------------------------------------------------------


class FakeProcess:
    def __init__(self, pid: int) -> None:
        assert pid == 1

    def create_time(self) -> float:
        return 1000.0


class DeniedProcess:
    def __init__(self, pid: int) -> None:
        raise psutil.AccessDenied(pid)


def test_billing_starts_when_the_container_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psutil, "Process", FakeProcess)
    monkeypatch.setattr(psutil, "boot_time", lambda: 500.0)
    assert container_started_at() == (1000.0, "container start")
    view = CostTracker(Settings(price_per_hour=3.6)).sample(1000.0 + 3600)
    assert (view.billing_started_at, view.billing_started_source) == (1000.0, "container start")
    assert view.spent == pytest.approx(3.6)


def test_billing_falls_back_to_boot_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psutil, "Process", DeniedProcess)
    monkeypatch.setattr(psutil, "boot_time", lambda: 500.0)
    assert container_started_at() == (500.0, "boot time")
    view = CostTracker(Settings(price_per_hour=1.0)).sample(500.0 + 1800)
    assert view.billing_started_source == "boot time" and view.spent == pytest.approx(0.5)


def test_billing_start_unknown_when_psutil_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> float:
        raise OSError("no /proc")

    monkeypatch.setattr(psutil, "Process", DeniedProcess)
    monkeypatch.setattr(psutil, "boot_time", fail)
    assert container_started_at() is None
    view = CostTracker(Settings(price_per_hour=1.0)).sample(NOW)
    assert (view.billing_started_at, view.billed_hours, view.spent) == (None, None, None)


def test_the_setting_wins_over_the_container(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(psutil, "Process", FakeProcess)
    view = CostTracker(Settings(price_per_hour=1.0, billing_started_at=2000.0)).sample(5600.0)
    assert (view.billing_started_at, view.billing_started_source) == (2000.0, "settings")


# -- idle -------------------------------------------------------------------------------


def test_idle_time_busy_idle_busy_with_a_frozen_clock() -> None:
    t = CostTracker(Settings(price_per_hour=3.6, billing_started_at=0.0, idle_minutes=5))
    busy, idle = gpus(idle=False), gpus(idle=True)
    view = t.sample(100.0, (), None, busy)
    assert (view.idle_seconds, view.idle_now_seconds, view.idle_minutes) == (0.0, None, 5.0)
    assert t.sample(110.0, (), None, idle).idle_now_seconds == 0.0  # the stretch begins
    assert t.sample(140.0, (), None, idle).idle_now_seconds == 30.0
    view = t.sample(200.0, (), None, idle)
    assert (view.idle_seconds, view.idle_now_seconds) == (90.0, 90.0)
    assert view.idle_spent == pytest.approx(90 * 3.6 / 3600)
    view = t.sample(210.0, (), None, busy)  # busy again: the stretch ends, the total stays
    assert (view.idle_seconds, view.idle_now_seconds) == (90.0, None)
    t.sample(220.0, (), None, idle)
    view = t.sample(250.0, (), None, idle)  # a new stretch adds to the total
    assert (view.idle_seconds, view.idle_now_seconds) == (120.0, 30.0)


def test_the_banner_and_its_money_are_decided_in_core() -> None:
    """The idle banner shows when CostView.idle_alert says, with idle_now_spent: the widget
    only formats them."""
    t = CostTracker(Settings(price_per_hour=3.6, idle_minutes=2))
    t.sample(0.0, (), None, gpus(idle=True))
    view = t.sample(119.0, (), None, gpus(idle=True))
    assert (view.idle_alert, view.idle_now_spent) == (False, pytest.approx(0.119))
    view = t.sample(120.0, (), None, gpus(idle=True))
    assert (view.idle_alert, view.idle_now_spent) == (True, pytest.approx(0.12))
    view = t.sample(121.0, (), None, gpus(idle=False))
    assert (view.idle_alert, view.idle_now_spent) == (False, None)
    unpriced = CostTracker(Settings(idle_minutes=2))
    unpriced.sample(0.0, (), None, gpus(idle=True))
    view = unpriced.sample(130.0, (), None, gpus(idle=True))
    assert view.idle_alert and view.idle_now_spent is None  # no price: no invented money


def test_the_view_carries_the_disk_the_stopped_rate_is_for() -> None:
    view = CostTracker(Settings(price_per_hour=1.0)).sample(NOW, system=system(500 * 10**9))
    assert view.disk_gb == 500.0
    assert CostTracker(seed_settings()).sample(NOW, system=system(500 * 10**9)).disk_gb == 250.0


def test_one_gap_counts_at_most_the_cap() -> None:
    t = CostTracker(Settings(price_per_hour=1.0), gap_cap=30.0)
    t.sample(0.0, (), None, gpus(idle=True))
    view = t.sample(10_000.0, (), None, gpus(idle=True))  # the laptop slept
    assert (view.idle_seconds, view.idle_now_seconds) == (30.0, 30.0)


def test_the_app_tracker_counts_two_minutes_of_a_long_gap() -> None:
    t = CostTracker(Settings(price_per_hour=1.0))  # as the app's Collector builds it
    t.sample(0.0, (), None, gpus(idle=True))
    assert t.sample(119.0, (), None, gpus(idle=True)).idle_seconds == 119.0  # a slow refresh
    view = t.sample(10_119.0, (), None, gpus(idle=True))  # the laptop slept
    assert (view.idle_seconds, view.idle_now_seconds) == (239.0, 239.0)


def test_a_clock_going_back_counts_nothing() -> None:
    t = CostTracker(Settings(price_per_hour=1.0))
    t.sample(100.0, (), None, gpus(idle=True))
    assert t.sample(50.0, (), None, gpus(idle=True)).idle_seconds == 0.0
    assert t.sample(110.0, (), None, gpus(idle=True)).idle_seconds == 10.0


def test_without_gpus_idle_means_no_running_run() -> None:
    for view_of_gpus in (None, gpus(idle=False, available=False)):
        t = CostTracker(Settings(price_per_hour=1.0))
        t.sample(0.0, (run(),), None, view_of_gpus)
        assert t.sample(30.0, (run(),), None, view_of_gpus).idle_seconds == 0.0
        t.sample(40.0, (run(state="completed"),), None, view_of_gpus)
        view = t.sample(70.0, (run(state="completed"),), None, view_of_gpus)
        assert view.idle_seconds == 30.0


def test_with_gpus_their_verdict_decides() -> None:
    # no run running but a GPU busy (someone else's job): not idle
    t = CostTracker(Settings(price_per_hour=1.0))
    t.sample(0.0, (), None, gpus(idle=False))
    assert t.sample(30.0, (), None, gpus(idle=False)).idle_seconds == 0.0


def test_cost_once_does_not_claim_to_have_seen_idle_time() -> None:
    view = cost_once(Settings(price_per_hour=1.0), NOW, (), None, gpus(idle=True))
    assert (view.idle_seconds, view.idle_spent, view.idle_now_seconds) == (None, None, None)


# -- balance ----------------------------------------------------------------------------


def test_balance_left_and_when_it_runs_out() -> None:
    assert balance_left(10.0, NOW, 3.6, NOW + 3600) == pytest.approx(6.4)
    assert balance_runs_out_at(10.0, NOW, 3.6) == pytest.approx(NOW + 10_000)
    s = Settings(price_per_hour=3.6, balance=10.0, balance_at=NOW, billing_started_at=NOW)
    view = cost_once(s, NOW + 3600)
    assert view.balance_left == pytest.approx(6.4)
    assert view.balance_runs_out_at == pytest.approx(NOW + 10_000)
    assert view.warnings == ()


def test_balance_running_out_before_the_run_finishes_warns() -> None:
    # $7.80 at $3.60/h lasts 2h10m; the run needs 3h05m more
    s = Settings(price_per_hour=3.6, balance=7.8, balance_at=NOW, billing_started_at=NOW)
    r = run(name="yolo9-coco", eta=3 * 3600 + 5 * 60)
    view = cost_once(s, NOW, (r,), r)
    assert view.warnings == (
        "Balance runs out in 2h10m, before run yolo9-coco finishes (ETA 3h05m): "
        "the run would be lost — push checkpoints now.",
    )


def test_balance_lasting_past_the_eta_does_not_warn() -> None:
    s = Settings(price_per_hour=3.6, balance=12.0, balance_at=NOW, billing_started_at=NOW)
    r = run(eta=3 * 3600 + 5 * 60)  # the balance lasts 3h20m
    assert cost_once(s, NOW, (r,), r).warnings == ()


def test_a_running_run_that_is_not_selected_is_watched_too() -> None:
    s = Settings(price_per_hour=3.6, balance=7.8, balance_at=NOW, billing_started_at=NOW)
    running = run(name="long", eta=4 * 3600)
    done = run(name="old", state="completed", eta=None)
    [warning] = cost_once(s, NOW, (done, running), done).warnings
    assert "before run long finishes (ETA 4h00m)" in warning


def test_balance_used_up_or_nearly_warns() -> None:
    s = Settings(price_per_hour=3.6, balance=1.8, balance_at=NOW, billing_started_at=NOW)
    [low] = cost_once(s, NOW).warnings  # 30 minutes left, no run
    assert low == "Balance runs out in 30m00s: top up or push checkpoints."
    view = cost_once(s, NOW + 3600)
    assert view.balance_left == pytest.approx(-1.8)
    [gone] = view.warnings
    assert gone.startswith("Balance ran out 30m00s ago")


# -- robustness, JSON ------------------------------------------------------------------------


def test_sample_never_raises() -> None:
    broken = replace(run(), state=None)  # type: ignore[arg-type]
    t = CostTracker(Settings(price_per_hour=1.0, balance=1.0, balance_at=NOW))
    view = t.sample(NOW, (object(),), broken)  # type: ignore[arg-type]
    assert isinstance(view, CostView)
    assert view.configured is True
    assert view.warnings and view.warnings[0].startswith("cost unavailable: AttributeError")


def test_json_has_the_documented_keys() -> None:
    s = seed_settings(balance=10.0, balance_at=NOW)
    data = cost_to_json(cost_once(s, NOW, (run(),), run()))
    keys = COST_JSON_KEYS
    assert set(keys) <= set(data)
    assert data["billing_started_at"] == iso(NOW - 7200)
    assert data["warnings"] == []
    assert round(data["break_even_hours"], 1) == 14.4
