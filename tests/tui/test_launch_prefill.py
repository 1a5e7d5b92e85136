"""The launch form (`n`) starts from something that works: a clone of
the selected run, what was typed there earlier this session, a visible focus; after a
doctor warning, ctrl+l again launches without running the doctor again."""

from __future__ import annotations

import os
import signal

import pytest
from textual.widgets import Input

from rgpu_tui.core.launch.synthetic_dataset import make_dataset
from rgpu_tui.core.records.launch_records import read_launches
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens import launch as launch_screen
from rgpu_tui.tui.screens.launch import LaunchScreen

from .helpers import make_app, wait_for


def _field(form, key: str) -> str:
    return form.query_one(f"#f-{key}", Input).value


def _title(form) -> str:
    return str(form.query_one("VerticalScroll").border_title)


async def _open(pilot, app) -> LaunchScreen:
    await pilot.press("n")
    await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen) and app.screen.is_mounted)
    return app.screen


async def _close(pilot, app) -> None:
    await pilot.press("escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen))


async def test_the_form_clones_the_selected_run_and_keeps_what_was_typed(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert app.snapshot.selected_run.name == "live_exp"
        form = await _open(pilot, app)
        assert _title(form) == "launch a training run: clone of live_exp"
        # no launch record, no train_config.yaml: what status.json says (yolo9-t)
        assert _field(form, "model") == "yolo9-t"
        # its name is a run already: the next free one (libreyolo would write it anyway)
        await wait_for(pilot, lambda: _field(form, "name") == "live_exp2")
        assert _field(form, "project") == str(runs_root.root)
        form.query_one("#f-epochs", Input).value = "5"
        await pilot.pause()
        await _close(pilot, app)
        form = await _open(pilot, app)  # the same run: as left
        assert _title(form) == "launch a training run: as you left it"
        assert (_field(form, "epochs"), _field(form, "model")) == ("5", "yolo9-t")
        await _close(pilot, app)
        # another run: its own clone, from its train_config.yaml
        app.view.selected = str(runs_root.root / "sample_done")
        app.request_refresh()
        await wait_for(pilot, lambda: app.snapshot.selected_run.name == "sample_done")
        form = await _open(pilot, app)
        assert _title(form) == "launch a training run: clone of sample_done"
        got = {k: _field(form, k) for k in ("data", "epochs", "batch", "imgsz", "device")}
        assert got == {"data": "/root/data/other.yaml", "epochs": "3", "batch": "4",
                       "imgsz": "128", "device": "cpu"}  # fmt: skip


async def test_the_focused_field_is_lit(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        form = await _open(pilot, app)
        data, epochs = form.query_one("#f-data", Input), form.query_one("#f-epochs", Input)
        assert data.has_focus
        lit = data.parent.styles.background
        assert lit != epochs.parent.styles.background  # the row, not just the cursor
        assert lit.a > 0
        epochs.focus()
        await pilot.pause()
        assert epochs.parent.styles.background == lit
        assert epochs.parent.query_one("Label").styles.text_style.bold


@pytest.mark.training  # the real `libreyolo doctor` and a real (CPU) launch
async def test_ctrl_l_again_after_doctor_warnings_launches_without_the_doctor(
    tmp_path, monkeypatch
):
    # 16 images, 1 to 3 random boxes: "fewer than 10 training instances" (a warning)
    data = make_dataset(tmp_path / "ds", n_train=16, n_val=8, imgsz=64, seed=0)
    root = tmp_path / "runs"
    root.mkdir()
    calls = []
    real = launch_screen.run_doctor

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(launch_screen, "run_doctor", counted)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    try:
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None)
            form = await _open(pilot, app)
            typed = {"model": "yolo9-t", "data": str(data), "epochs": "1", "imgsz": "64",
                     "batch": "4", "extra": "pretrained=False workers=0 amp=False"}  # fmt: skip
            for key, value in typed.items():
                form.query_one(f"#f-{key}", Input).value = value
            await pilot.pause()
            await pilot.press("ctrl+l")
            status = lambda: str(form.query_one("#status").render())  # noqa: E731
            await wait_for(pilot, lambda: "ctrl+l again" in status(), timeout=120)
            assert "fewer than 10 training instances" in status() and len(calls) == 1
            await pilot.press("ctrl+l")  # launches at once: the form may be gone already
            await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen), timeout=60)
            assert len(calls) == 1  # the doctor ran once
            assert len(read_launches(str(root))) == 1
    finally:
        for record in read_launches(str(root)):
            try:
                os.killpg(record.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _status(form) -> str:
    return str(form.query_one("#status").render())


async def test_a_name_taken_by_a_run_is_said_and_the_next_free_one_offered(runs_root, tmp_path):
    """Cloning live_exp would train into live_exp2 (libreyolo's NAME2, NAME3, ...): the
    form offers the next free name and says why; a name typed over an existing run says
    where libreyolo will write instead; exist_ok=True keeps the name."""
    (runs_root.root / "live_exp2").mkdir()  # taken too: the next free is live_exp3
    data = tmp_path / "data.yaml"
    data.write_text("path: .\ntrain: images\nval: images\nnames: [a]\n")
    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        form = await _open(pilot, app)
        await wait_for(pilot, lambda: _field(form, "name") == "live_exp3")
        form.query_one("#f-data", Input).value = str(data)
        said = "name: live_exp exists in the project; live_exp3 is the next free name"
        await wait_for(pilot, lambda: _status(form) == said)
        form.query_one("#f-name", Input).value = "sample_done"
        said = "name: sample_done exists in the project: libreyolo will write sample_done2"
        await wait_for(pilot, lambda: _status(form) == said)
        assert str(form.query_one("#command").render()).endswith(" name=sample_done")  # as typed
        form.query_one("#f-extra", Input).value = "exist_ok=True"
        await wait_for(pilot, lambda: _status(form) == "")
