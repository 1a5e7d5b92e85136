"""The launch form (n), the stop dialog (s) and the GPU check (g), under Pilot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest
from support.run_dir import iso
from textual.widgets import Input, Static

from rgpu_tui.core.base.config import Settings
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.dialogs import ConfirmScreen, ReportScreen
from rgpu_tui.tui.screens.launch import LaunchScreen

from .helpers import make_app, wait_for


def _text(screen, selector: str) -> str:
    return str(screen.query_one(selector).render())


async def _set(pilot, screen, key: str, value: str) -> None:
    field = screen.query_one(f"#f-{key}", Input)
    field.value = value
    await pilot.pause()


async def test_launch_form_shows_the_command_and_validates(runs_root, tmp_path):
    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        form = app.screen
        # simulated GPUs cannot train: the device proposed is the CPU
        assert form.query_one("#f-device", Input).value == "cpu"
        assert form.query_one("#f-project", Input).value == str(runs_root.root)
        assert "data" in _text(form, "#status")  # no data.yaml yet: said, not launched

        data = tmp_path / "data.yaml"
        data.write_text("path: .\ntrain: images/train\nval: images/val\nnames: [a]\n")
        await _set(pilot, form, "data", str(data))
        await _set(pilot, form, "epochs", "3")
        await _set(pilot, form, "extra", "lr0=0.01 'note=two words;x'")
        command = _text(form, "#command")
        assert "libreyolo train" in command and f"data={data}" in command
        assert "epochs=3" in command and "device=cpu" in command
        assert "'note=two words;x'" in command  # one literal argument, quoted for display
        assert "HF_TOKEN" in _text(form, "#hf")

        await _set(pilot, form, "epochs", "many")
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert "epochs" in _text(form, "#status")
        assert isinstance(app.screen, LaunchScreen)  # not launched
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LaunchScreen)


@pytest.mark.training
async def test_doctor_errors_block_a_launch(runs_root, tmp_path, trained_dataset):
    broken = tmp_path / "broken"
    shutil.copytree(trained_dataset.parent, broken)
    shutil.rmtree(broken / "images")
    data = broken / trained_dataset.name
    data.write_text(data.read_text().replace(str(trained_dataset.parent), str(broken)))
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        form = app.screen
        await _set(pilot, form, "data", str(data))
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: "dataset errors" in _text(form, "#status"), timeout=120)
        assert isinstance(app.screen, LaunchScreen)
        assert not os.path.exists(runs_root.root / ".rgpu" / "launches.jsonl")


@pytest.mark.training
async def test_a_run_launched_from_the_form_appears_and_is_selected(tmp_path, trained_dataset):
    root = tmp_path / "runs"
    root.mkdir()
    app = RgpuApp(root=str(root), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        form = app.screen
        for key, value in {
            "model": "yolo9-t",
            "data": str(trained_dataset),
            "epochs": "1",
            "batch": "4",
            "imgsz": "128",
            "name": "fromform",
            "extra": "pretrained=False workers=0 amp=False",
        }.items():
            await _set(pilot, form, key, value)
        form.query_one("#doctor").value = False
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen), timeout=30)
        # first a NEW entry with the console log, then the real run, selected
        await wait_for(
            pilot,
            lambda: app.view.selected is not None and app.view.selected.endswith("fromform"),
            timeout=120,
        )
        await wait_for(pilot, lambda: app.snapshot.selected_run.state == "completed", timeout=180)
        assert app.snapshot.selected_run.current_epoch == 1


@pytest.fixture
def stoppable_run(tmp_path):
    """A run directory whose status.json names a real process (it ignores SIGINT)."""
    run = tmp_path / "runs" / "victim"
    run.mkdir(parents=True)  # the trainer works in it (its cwd: core.run.run_process)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=run,
    )
    # it says so once SIGINT is ignored: a stop pressed sooner would end it by SIGINT
    assert child.stdout.readline() == b"ready\n"
    created = psutil.Process(child.pid).create_time()
    (run / "status.json").write_text(
        json.dumps(
            {
                "state": "running",
                "pid": child.pid,
                "started_at": iso(created),
                "updated_at": iso(time.time()),
                "total_epochs": 10,
                "completed_epochs": 2,
            }
        )
    )
    yield run, child
    if child.poll() is None:
        child.kill()
        child.wait()
    child.stdout.close()


async def test_stop_dialog_escalates_and_the_run_ends(stoppable_run):
    run, child = stoppable_run
    settings = Settings(stop_term_after=1.0, stop_kill_after=3.0)
    app = RgpuApp(root=str(run.parent), interval=0.2, fake_gpus=1, settings=settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert app.snapshot.selected_run.state == "running"
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        assert "SIGINT now" in body and "SIGTERM after 1 s" in body
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        await wait_for(pilot, lambda: child.poll() is not None, timeout=15)
        # SIGINT was ignored, so SIGTERM ended it
        assert child.returncode == -15
        await wait_for(pilot, lambda: "stopped" in str(app.screen.query_one("#body").render()))
        assert "SIGINT, SIGTERM" in str(app.screen.query_one("#body").render())
        # status.json still says running, the process is gone: the user's stop, not DEAD
        await wait_for(pilot, lambda: app.snapshot.selected_run.state == "stopped")


async def test_stop_refuses_a_run_that_is_not_running(runs_root):
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("j", "enter")  # the failed run
        await wait_for(pilot, lambda: app.view.selected.endswith("failed_oom"))
        await wait_for(pilot, lambda: app.snapshot.selected.run_dir == app.view.selected)
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)


# A stand-in torch for the GPU check's subprocess. Its import waits until the test has seen
# the report dialog mounted (the file named by $FAKE_TORCH_GO appears), as a real torch import
# takes seconds. A probe that answers before the dialog is mounted is tested below.
WAIT_FOR_GO = """
import os, time
_deadline = time.monotonic() + 60
while not os.path.exists(os.environ["FAKE_TORCH_GO"]) and time.monotonic() < _deadline:
    time.sleep(0.01)
"""
CPU_ONLY_TORCH = """
__version__ = "2.5.1+cpu"
class version:
    cuda = None
class cuda:
    @staticmethod
    def is_available():
        return False
"""
NO_TORCH = "raise ModuleNotFoundError(\"No module named 'torch'\")\n"
PY = sys.executable


@pytest.mark.parametrize(
    ("torch_init", "report"),
    [
        (
            CPU_ONLY_TORCH,
            [
                "CUDA is not available: torch 2.5.1+cpu is a CPU-only build; install a CUDA "
                "build of torch for this machine's driver",
                f"  python: {PY}",
                "  torch: 2.5.1+cpu, CPU only",
                "  CUDA available: no",
            ],
        ),
        (
            NO_TORCH,
            [
                f"torch is not installed for {PY}: install it with "
                f"`{PY} -m pip install 'rgpu-tui[train]'`",
                f"  python: {PY}",
            ],
        ),
    ],
    ids=["cpu-only-torch", "no-torch"],
)
async def test_gpu_check_reports_plainly_without_a_gpu(
    runs_root, tmp_path, monkeypatch, torch_init, report
):
    # the check runs this Python in a subprocess: a stand-in torch first on its path makes
    # the answer the same on every machine (this venv's torch, a GPU or none, do not matter)
    fake = tmp_path / "fake-torch"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(WAIT_FOR_GO + torch_init)
    go = tmp_path / "go"
    monkeypatch.setenv("PYTHONPATH", str(fake))
    monkeypatch.setenv("FAKE_TORCH_GO", str(go))
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("g")
        await wait_for(
            pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen.is_mounted
        )
        body = lambda: str(app.screen.query_one("#body").render())  # noqa: E731
        assert body() == "running torch in a subprocess…"
        go.touch()
        await wait_for(pilot, lambda: "subprocess" not in body(), timeout=120)
        assert body().splitlines() == report


class _AnswersWhileMounting(ReportScreen):
    """A report whose answer comes while its children are mounted and the screen itself is
    not yet (is_mounted False): where a quick GPU check (no torch) can answer."""

    def compose(self):
        yield from super().compose()
        yield _Answer()


class _Answer(Static):
    def on_mount(self) -> None:
        self.screen.mounted_then = self.screen.is_mounted
        self.screen.show("the answer")


async def test_a_report_answered_before_its_dialog_is_mounted_shows_the_answer(runs_root):
    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        early = ReportScreen("GPU check", "running torch in a subprocess…")
        app.push_screen(early)
        early.show("an early answer")  # not even composed yet
        await wait_for(pilot, lambda: early.is_mounted)
        assert str(early.query_one("#body").render()) == "an early answer"
        early.dismiss()
        screen = _AnswersWhileMounting("GPU check", "running torch in a subprocess…")
        await app.push_screen(screen)
        await wait_for(pilot, lambda: screen.is_mounted)
        assert screen.mounted_then is False  # the case this test is about
        assert str(screen.query_one("#body").render()) == "the answer"
