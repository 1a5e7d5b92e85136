"""The cost strip, the cost view (`c`) and the idle banner, under Pilot."""

from __future__ import annotations

import shutil

from rgpu_tui.core.config import Settings
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.cost import CostScreen
from rgpu_tui.tui.widgets.cost import CostStrip, IdleBanner

from .helpers import make_app, rendered, wait_for

SEED = Settings(price_per_hour=3.4828, disk_gb=250, storage_price_gb_month=0.20, rebuild_cost=1.00)


async def test_strip_shows_rate_spent_run_epoch_and_finish(runs_root):
    # billing starts when the container (PID 1) started = the fixture's t0; the clock is t0 + 1 h
    app = make_app(runs_root, gpus=2, settings=SEED)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        text = rendered(app.query_one(CostStrip))
        assert text.startswith("$3.48/h")
        assert "spent $3.48" in text  # one billed hour
        assert "run $3.48" in text  # live_exp started at t0: 1 h elapsed
        assert "$0.06/epoch" in text  # 60 s per epoch
        # 70 epochs x 60 s - 10 s since the last update = 4190 s
        assert "to finish $4.05" in text


async def test_no_price_says_how_to_set_one(runs_root):
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        text = rendered(app.query_one(CostStrip))
        assert text.startswith("No price set: pass --price-per-hour")
        assert "RGPU_PRICE_PER_HOUR" in text and "spent" not in text  # no invented money


async def test_c_opens_the_full_view_with_stop_or_destroy(runs_root):
    app = make_app(runs_root, gpus=2, settings=SEED)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CostScreen)
        details = str(app.screen.query_one("#body").render())
        # the same text as `rgpu-tui cost`, for the selected run too
        assert "$0.0694/h" in details and "98.0% while stopped" in details
        assert "back within 14.4 h, stop; longer, destroy" in details
        assert "run live_exp" in details and "in all" in details
        assert "idle seen" in details
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CostScreen)


async def test_idle_banner_appears_after_idle_minutes_and_rings_once(runs_root):
    # no running run: the live one is gone; the simulated GPUs then idle
    shutil.rmtree(runs_root.root / "live_exp")
    now = [runs_root.now]

    def clock() -> float:
        now[0] += 30.0  # each refresh is 30 s later
        return now[0]

    app = RgpuApp(
        root=str(runs_root.root),
        interval=0.02,
        clock=clock,
        fake_gpus=2,
        settings=Settings(price_per_hour=3.4828, idle_minutes=2),
    )
    bells = []
    async with app.run_test(size=(80, 24)) as pilot:
        banner = app.query_one(IdleBanner)
        # what the banner says when it appears (the bell rings then); refreshes come every
        # 20 ms, so reading it later could see a newer one
        app.bell = lambda: bells.append(rendered(banner))
        await wait_for(pilot, lambda: banner.has_class("-on"))
        await wait_for(pilot, lambda: bells)
        text = bells[0]
        assert text.startswith("Idle 2 min — $0.12 spent idle at $3.48/h.")
        assert text.endswith("Push checkpoints, then stop or destroy.")
        first = now[0]
        await wait_for(pilot, lambda: now[0] > first + 120)  # more refreshes, still idle
        assert len(bells) == 1
        assert "Idle 4 min" in rendered(banner) or "Idle 5 min" in rendered(banner)
