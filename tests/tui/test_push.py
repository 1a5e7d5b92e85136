"""The app's push flow end to end: `p`, the confirm dialog, the real huggingface_hub client
against the local Hub server, the push bar, the notice, the header's last push."""

from __future__ import annotations

import builtins
import hashlib
import os
import re
import shutil
import threading

import pytest
from e2e.test_hub_push import HF, TOKENS, make_run, token_nowhere
from support.checkpoints import checkpoint_bytes
from textual.widgets import OptionList

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.formatting import fmt_bytes, fmt_number
from rgpu_tui.core.records.push_records import read_pushes
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.dialogs import ConfirmScreen, PickScreen

from .helpers import notices, rendered, wait_for


async def test_p_pushes_best_pt_and_the_header_says_so(tmp_path, hub):
    run = make_run(tmp_path / "runs")
    shutil.copy(run / "weights" / "best.pt", run / "weights" / "last.pt")
    app = RgpuApp(
        root=str(run.parent), interval=0.2, fake_gpus=1, settings=Settings(hub_repo="alice/ckpts")
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        assert str(run / "weights" / "best.pt") in body
        assert "200.2 kB, epoch 37, mAP50-95 0.4123" in body
        assert "alice/ckpts: exp1/best.pt" in body
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Pushed best.pt" in n for n in notices(app)), 60)
        data = (run / "weights" / "best.pt").read_bytes()
        assert hub.file_bytes("alice/ckpts", "exp1/best.pt") == data
        assert len(hub.commits("alice/ckpts")) == 1
        await wait_for(pilot, lambda: "pushed best.pt ep37" in rendered(app.view.run_header), 10)
        assert not app.view.push_bar.has_class("-on")

        # the same file again: no new commit
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("no new commit" in n for n in notices(app)), 60)
        assert len(hub.commits("alice/ckpts")) == 1

        # best.pt rewritten on disk: the header warns until it is pushed again
        (run / "weights" / "best.pt").write_bytes(checkpoint_bytes(150_000, seed=7))
        await wait_for(
            pilot, lambda: "best.pt changed since pushed" in rendered(app.view.run_header)
        )

        # P: pick last.pt
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        await pilot.press("down", "enter")  # best.pt, last.pt, artifacts
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "exp1/last.pt" in str(app.screen.query_one("#body").render())
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Pushed last.pt" in n for n in notices(app)), 60)
        last = hashlib.sha256((run / "weights" / "last.pt").read_bytes()).digest()
        assert hashlib.sha256(hub.file_bytes("alice/ckpts", "exp1/last.pt")).digest() == last
    token_nowhere(run, *notices(app))
    assert all(t not in rendered(app.view.run_header) for t in TOKENS)


async def test_a_failed_push_is_one_clear_notice(tmp_path, hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", HF + "NotAValidTokenAtAll0123456789")
    run = make_run(tmp_path / "runs")
    app = RgpuApp(
        root=str(run.parent), interval=0.2, fake_gpus=1, settings=Settings(hub_repo="alice/ckpts")
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("401" in n for n in notices(app)), 60)
        [message] = [n for n in notices(app) if "401" in n]
        assert "hf auth login" in message and "\n" not in message
        assert HF + "NotAValidToken" not in message
        await wait_for(pilot, lambda: "last push failed" in rendered(app.view.run_header))


async def test_no_repo_set_says_how_to_set_one(tmp_path):
    run = make_run(tmp_path / "runs")
    app = RgpuApp(root=str(run.parent), interval=3600, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("--hub-repo" in n and "RGPU_HUB_REPO" in n for n in notices(app))


def shown_target(app) -> str:
    """The target the open confirm dialog names ("alice/ckpts: PATH")."""
    body = str(app.screen.query_one("#body").render())
    [target] = re.findall(r"^to alice/ckpts: (.+)$", body, flags=re.M)
    return target


@pytest.mark.parametrize("hub_path", ["models/{run}/ckpt/{file}", "./models//{run}/./{file}"])
async def test_the_dialog_shows_the_path_that_is_pushed(tmp_path, hub, hub_path):
    """A custom hub_path: the path in the confirm dialog is the path of the commit and of
    the record, for a checkpoint and for the artifacts."""
    run = make_run(tmp_path / "runs")
    settings = Settings(hub_repo="alice/ckpts", hub_path=hub_path)
    app = RgpuApp(root=str(run.parent), interval=3600, fake_gpus=1, settings=settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        shown = shown_target(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Pushed best.pt" in n for n in notices(app)), 60)
        [commit] = hub.commits("alice/ckpts")
        assert shown in commit.changed
        assert read_pushes(str(run))[-1]["path"] == shown
        assert hub.file_bytes("alice/ckpts", shown) == (run / "weights" / "best.pt").read_bytes()

        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        await pilot.press("down", "enter")  # best.pt, artifacts
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        folder = shown_target(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(read_pushes(str(run))) == 2, 60)
        record = read_pushes(str(run))[-1]
        assert record["outcome"] in ("ok", "skipped") and record["file"] == "artifacts"
        assert folder == record["path"] + "/" == shown.rpartition("/")[0] + "/"
        assert f"{record['path']}/status.json" in hub.commits("alice/ckpts")[-1].files


async def test_a_hub_path_outside_the_repo_is_refused_before_the_dialog(tmp_path):
    run = make_run(tmp_path / "runs")
    settings = Settings(hub_repo="alice/ckpts", hub_path="../{file}")
    app = RgpuApp(root=str(run.parent), interval=3600, fake_gpus=1, settings=settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("p")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        why = "hub_path '../{file}' gives '../best.pt', not a path inside the repo"
        assert why in notices(app)


async def test_the_push_dialogs_show_the_snapshot_and_read_no_file(tmp_path, monkeypatch):
    """`p` and `P` list, size and describe the checkpoints from the Snapshot the refresh
    built; the UI thread opens, stats and lists nothing of the run (a slow disk would
    freeze the screen)."""
    run = make_run(tmp_path / "runs")
    weights = run / "weights"
    shutil.copy(weights / "best.pt", weights / "last.pt")
    (weights / "epoch_5.pt").write_bytes(checkpoint_bytes(1000, 3))
    app = RgpuApp(
        root=str(run.parent), interval=3600, fake_gpus=1, settings=Settings(hub_repo="a/b")
    )
    ui_io: list[tuple[str, str]] = []
    ui = threading.main_thread()

    def watched(name: str, real):
        def call(path, *args, **kwargs):
            if threading.current_thread() is ui and str(path).startswith(str(run)):
                ui_io.append((name, str(path)))
            return real(path, *args, **kwargs)

        return call

    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        sel = app.snapshot.selected
        assert [c.name for c in sel.checkpoints] == ["best.pt", "last.pt", "epoch_5.pt"]
        (weights / "epoch_5.pt").unlink()  # gone since: the dialogs show the Snapshot
        for name in ("stat", "lstat", "listdir", "scandir", "open"):
            monkeypatch.setattr(os, name, watched(name, getattr(os, name)))
        monkeypatch.setattr(builtins, "open", watched("builtins.open", builtins.open))

        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert [label.split()[0] for label in labels[:3]] == ["best.pt", "last.pt", "epoch_5.pt"]
        assert len(labels) == 4 and labels[0].startswith("best.pt     200.2 kB, epoch 37")
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        epoch5 = sel.checkpoint("epoch_5.pt")
        assert f"{fmt_bytes(epoch5.size)}, epoch 5, mAP50-95 {fmt_number(epoch5.metric)}" in body
        assert "a/b: exp1/epoch_5.pt" in body
        await pilot.press("escape")
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "200.2 kB, epoch 37, mAP50-95 0.4123" in str(app.screen.query_one("#body").render())
        await pilot.press("escape")
        await pilot.pause()
    assert ui_io == []


async def test_the_push_dialogs_mark_a_torn_file_and_never_offer_it_first(tmp_path):
    """A SIGKILL tore best.pt (cut short) and last.pt (0 bytes): `P` lists every file with
    its size, epoch and validity, the torn ones marked, the newest valid epoch_N.pt
    highlighted; `p` offers that file; picking a torn one is refused with the reason."""
    run = make_run(tmp_path / "runs")
    weights = run / "weights"
    whole = (weights / "best.pt").read_bytes()
    (weights / "best.pt").write_bytes(whole[: len(whole) // 2])
    (weights / "last.pt").write_bytes(b"")
    (weights / "epoch_5.pt").write_bytes(checkpoint_bytes(1000, seed=5))
    (weights / "epoch_37.pt").write_bytes(checkpoint_bytes(1000, seed=37))
    old = os.stat(run).st_mtime - 600
    for path in weights.iterdir():
        os.utime(path, (old, old))
    app = RgpuApp(
        root=str(run.parent), interval=0.2, fake_gpus=1, settings=Settings(hub_repo="alice/ckpts")
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(
            pilot,
            lambda: (
                app.snapshot is not None
                and app.snapshot.selected is not None
                and len(app.snapshot.selected.checkpoints) == 4
                and all(
                    getattr(c, "valid", 0) is not None for c in app.snapshot.selected.checkpoints
                )
            ),
        )
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert labels[1] == "last.pt      0 B, INVALID (torn or not a checkpoint)"
        assert labels[0].startswith("best.pt      ") and labels[0].endswith(
            "INVALID (torn or not a checkpoint)"
        )
        assert labels[3].startswith("epoch_37.pt ") and "epoch 37, mAP50-95 0.4123" in labels[3]
        assert "INVALID" not in labels[2] + labels[3]
        assert options.get_option_at_index(options.highlighted).id == "epoch_37.pt"
        await pilot.press("up", "up", "enter")  # last.pt
        await wait_for(
            pilot, lambda: any("not pushed: last.pt is empty" in n for n in notices(app))
        )
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        size = fmt_bytes(os.path.getsize(weights / "epoch_37.pt"))
        assert f"{weights / 'epoch_37.pt'}\n{size}, epoch 37" in body
        await pilot.press("escape")
