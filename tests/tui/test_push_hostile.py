"""The app's push with a hostile run: an artifact symlinked out of the run is skipped and
the notice says so; a FIFO best.pt is refused at `p`, before any confirm or push."""

from __future__ import annotations

import os

from e2e.test_hub_push import make_run

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.text import shorten_middle
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.app_rules import notice_width
from rgpu_tui.tui.screens.dialogs import ConfirmScreen

from .helpers import notices, wait_for


async def test_an_artifact_outside_the_run_is_skipped_and_the_notice_says_so(tmp_path, hub):
    run = make_run(tmp_path / "runs")
    secret = tmp_path / "secret.yaml"
    secret.write_text("password: hunter2\n")
    (run / "train_config.yaml").unlink()
    (run / "train_config.yaml").symlink_to(secret)
    app = RgpuApp(
        root=str(run.parent), interval=0.2, fake_gpus=1, settings=Settings(hub_repo="alice/ckpts")
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Pushed best.pt" in n for n in notices(app)), 60)
        # the path as a notice shows it: shortened in its middle when wider than the notice
        shown = shorten_middle(f"{secret},", notice_width(100))  # the word, its comma too
        expected = f"train_config.yaml resolves to {shown} outside the run directory (skipped)"
        assert expected in notices(app)
    [commit] = hub.commits("alice/ckpts")
    assert "exp1/train_config.yaml" not in commit.files and "exp1/best.pt" in commit.files


async def test_a_fifo_best_pt_is_refused_at_p(tmp_path, hub):
    run = make_run(tmp_path / "runs")
    (run / "weights" / "best.pt").unlink()
    os.mkfifo(run / "weights" / "best.pt")
    app = RgpuApp(
        root=str(run.parent), interval=0.2, fake_gpus=1, settings=Settings(hub_repo="alice/ckpts")
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: "best.pt is not a regular file" in notices(app))
        assert not isinstance(app.screen, ConfirmScreen)
    assert hub.requests == []
