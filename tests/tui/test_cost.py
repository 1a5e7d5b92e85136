"""The cost strip, the cost view (`c`) and the idle banner, under Pilot."""

from __future__ import annotations

import shutil
import sys

import pytest

from rgpu_tui.core.base.config import Settings
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.cost import CostScreen
from rgpu_tui.tui.widgets.cost import CostStrip, IdleBanner, no_price_forms

from .helpers import make_app, rendered, wait_for

PUSH_THEN_STOP = "Push checkpoints, then stop or destroy."
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
        assert "$0.058/epoch" in text  # 60 s per epoch at $3.4828/h: 3 significant digits
        # 70 epochs x 60 s - 10 s since the last update = 4190 s
        assert "to finish $4.05" in text


async def test_no_price_says_how_to_set_one(runs_root):
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(160, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        text = rendered(app.query_one(CostStrip))
        assert text.startswith("No price set: pass --price-per-hour")
        assert "RGPU_PRICE_PER_HOUR" in text and "spent" not in text  # no invented money
        assert text.endswith("config.toml.")  # whole at 160 columns


@pytest.mark.parametrize("width", [120, 80, 60, 40, 24, 20])
async def test_the_no_price_hint_fits_whole_words(runs_root, width):
    """Narrower, the strip says it shorter (the cost view `c` has it whole); never cut
    mid-word ("...or put" at 80 columns before)."""
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        strip = app.query_one(CostStrip)
        text = rendered(strip)
        assert len(text) <= strip.size.width
        forms = no_price_forms(strip.config_file)
        if text not in forms:  # cut where a word of a form ends
            cut = text.removesuffix("…")
            assert text.endswith("…"), text
            assert any(f.startswith(cut) and f[len(cut)] == " " for f in forms), text
        assert text.startswith("No price")
        if width >= 80:  # a whole form of it: the flag and where the rest is said
            assert "--price-per-hour 3.48" in text and not text.endswith("…")


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
    start = runs_root.now
    end = start + 900.0
    now = [start]

    def clock() -> float:
        # each refresh 30 s later, until `end`; from then on every refresh sees `end`, so
        # what the screen shows stops moving and can be read exactly
        now[0] = min(now[0] + 30.0, end)
        return now[0]

    app = RgpuApp(
        root=str(runs_root.root),
        interval=0.02,
        clock=clock,
        fake_gpus=2,
        settings=Settings(price_per_hour=3.4828),  # idle_minutes: the default, 10
    )
    bells = []
    async with app.run_test(size=(80, 24)) as pilot:
        banner = app.query_one(IdleBanner)
        # when the bell rings (once, as the banner appears) and what the banner says then
        app.bell = lambda: bells.append((app.snapshot.generated_at - start, rendered(banner)))
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.generated_at == end)
        # idle from the first refresh (start + 30 s): ten minutes later, not one refresh sooner
        assert bells == [
            (
                630.0,
                "Idle 10 min (simulated GPUs) — $0.58 spent idle at $3.48/h. " + PUSH_THEN_STOP,
            ),
        ]
        # 870 s idle at `end` (14.5 min), and the bell did not ring again
        assert banner.has_class("-on")
        assert rendered(banner).startswith(
            "Idle 14 min (simulated GPUs) — $0.84 spent idle at $3.48/h."
        )


async def test_the_gpu_header_and_the_banner_read_one_idle_clock(runs_root):
    """A gap in sampling (the machine suspended, the app stalled) longer than the cap
    counts 2 minutes of idle time: in the banner, the idle money and the GPU header alike
    (the header used to count the whole gap)."""
    shutil.rmtree(runs_root.root / "live_exp")  # no running run: the simulated GPUs idle
    start = runs_root.now
    times = iter([start, start + 60.0, start + 60.0 + 3600.0])
    now = [start]

    def clock() -> float:
        now[0] = next(times, now[0])
        return now[0]

    app = RgpuApp(
        root=str(runs_root.root),
        interval=0.02,
        clock=clock,
        fake_gpus=2,
        settings=Settings(price_per_hour=3.6, idle_minutes=2),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        banner = app.query_one(IdleBanner)
        await wait_for(
            pilot, lambda: app.snapshot is not None and app.snapshot.generated_at == now[0] > start
        )
        await wait_for(pilot, lambda: app.snapshot.generated_at == start + 3660.0)
        await pilot.pause()
        # 60 s seen, then a 3600 s gap that counts 120 s: 3 minutes
        assert app.snapshot.cost.idle_now_seconds == 180.0
        assert app.snapshot.gpus.idle_seconds == 180.0
        assert "IDLE 3m00s" in app.view.gpu_pane._rows[0].plain
        assert rendered(banner).startswith(
            "Idle 3 min (simulated GPUs) — $0.18 spent idle at $3.60/h."
        )


async def test_the_price_from_price_command_drives_the_strip_and_c(runs_root, tmp_path):
    """A stand-in provider command (a real executable) gives the app its price: the strip and
    `c` say where it came from and how old it is."""
    cmd = tmp_path / "provider-price"
    cmd.write_text(f"#!{sys.executable}\nprint('1.90 25.00')\n")
    cmd.chmod(0o755)
    settings = Settings(price_per_hour=9.99, price_command=(str(cmd),))
    app = make_app(runs_root, interval=0.2, gpus=1, settings=settings)  # refreshes until it answers
    async with app.run_test(size=(120, 24)) as pilot:
        strip = app.query_one(CostStrip)
        await wait_for(pilot, lambda: rendered(strip).startswith("$1.90/h (price_command"))
        assert rendered(strip).startswith("$1.90/h (price_command, just now)  spent")
        await pilot.press("c")
        await pilot.pause()
        details = str(app.screen.query_one("#body").render())
        assert "$1.90/h  (price_command (provider-price), read just now)" in details
        # its balance, read at the app's (frozen) now: $25 at $1.90/h
        assert "$25.00 left, runs out in 13h09m" in details
