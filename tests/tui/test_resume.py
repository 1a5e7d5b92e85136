"""`r`: resume a DEAD, FAILED or STOPPED run, under Pilot. A stand-in `libreyolo` records the argv
it was started with and continues the run in its own directory, as libreyolo does."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.checkpoints import epoch_checkpoint
from support.run_dir import iso
from textual.widgets import OptionList

import rgpu_tui.core.launch.launch_spec as launch_spec_mod
from rgpu_tui.core.records.launch_records import read_launches
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.dialogs import ConfirmScreen, PickScreen

from .helpers import notices, wait_for

PY = sys.executable

FAKE_LIBREYOLO = """\
#!{python}
import json, os, sys
from datetime import datetime, timezone
args = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
run = os.path.dirname(os.path.dirname(args["model"]))
with open(os.path.join(run, "fake_argv.json"), "w") as f:
    json.dump(sys.argv, f)
st = dict(state="completed", pid=os.getpid(), total_epochs=4, completed_epochs=2,
          started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
with open(os.path.join(run, ".st"), "w") as f:
    json.dump(st, f)
os.replace(os.path.join(run, ".st"), os.path.join(run, "status.json"))
"""


def _dead_pid() -> int:
    proc = subprocess.Popen(["sleep", "0"])
    proc.wait()
    return proc.pid


@pytest.fixture
def project(tmp_path: Path, monkeypatch):
    """A runs root with `dead` (status running, its process gone, last.pt of epoch 2 of
    4) and `done` (completed); the stand-in libreyolo is the one core.launch.launch_spec finds."""
    root = tmp_path / "runs"
    data = tmp_path / "data" / "data.yaml"
    data.parent.mkdir()
    data.write_text("nc: 1\n")
    for name, state in (("dead", "running"), ("done", "completed")):
        run = root / name
        (run / "weights").mkdir(parents=True)
        epochs = 2 if state == "running" else 4
        status = dict(state=state, pid=_dead_pid(), total_epochs=4, completed_epochs=epochs)
        status["started_at"] = iso(time.time() - 600)
        (run / "status.json").write_text(json.dumps(status))
        rows = [json.dumps({"epoch": e, "train/loss": 1.0 / e}) for e in range(1, epochs + 1)]
        (run / "metrics.jsonl").write_text("\n".join(rows) + "\n")
        (run / "train_config.yaml").write_text(f"data: {data}\ndevice: cpu\nepochs: 4\n")
        (run / "weights" / "last.pt").write_bytes(epoch_checkpoint(epochs, 4))
        mtime = time.time() - (100 if name == "dead" else 200)  # dead first in the list
        for path in run.iterdir():
            os.utime(path, (mtime, mtime))
    fake = tmp_path / "bin" / "libreyolo"
    fake.parent.mkdir()
    fake.write_text(FAKE_LIBREYOLO.format(python=PY))
    fake.chmod(0o755)
    monkeypatch.setattr(launch_spec_mod, "libreyolo_executable", lambda: str(fake))
    yield root
    for record in read_launches(str(root)):
        try:
            os.killpg(record.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


async def _select(pilot, app, name: str) -> None:
    await wait_for(pilot, lambda: app.snapshot is not None and len(app.snapshot.runs) == 2)
    names = [r.name for r in app.snapshot.runs]
    for _ in range(names.index(name)):
        await pilot.press("j")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.snapshot.selected_run.name == name)


async def test_r_confirms_with_the_command_and_resumes_in_place(project: Path) -> None:
    run = project / "dead"
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await _select(pilot, app, "dead")
        assert app.snapshot.selected_run.state == "dead"
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        body = str(app.screen.query_one("#body").render())
        assert "Resume dead (DEAD after epoch 2/4) in its own directory?" in body
        assert "From weights/last.pt (epoch 2): no epoch is trained again." in body
        command = body.splitlines()[1]
        assert shlex.split(command)[1:] == [
            "train",
            f"model={run}/weights/last.pt",
            "resume=True",
            f"data={project.parent / 'data' / 'data.yaml'}",
            "device=cpu",
        ]
        assert not (run / "fake_argv.json").exists()  # nothing started before enter
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(n.startswith("Resumed dead (pid") for n in notices(app)))
        await wait_for(pilot, lambda: (run / "fake_argv.json").exists())
        assert json.loads((run / "fake_argv.json").read_text()) == shlex.split(command)
        (record,) = read_launches(str(project))
        assert record.console_log.startswith(str(project / ".rgpu" / "console" / "dead-"))
        # continued in place: the run it reads is the same directory, now completed
        await wait_for(
            pilot,
            lambda: (
                app.snapshot.selected_run.run_dir == str(run)
                and app.snapshot.selected_run.state == "completed"
            ),
        )
        assert app.snapshot.selected_run.current_epoch == 2  # the history's last epoch
        assert sorted(p.name for p in project.iterdir()) == [".rgpu", "dead", "done"]


async def test_r_escape_starts_nothing(project: Path) -> None:
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await _select(pilot, app, "dead")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PickScreen))
        assert read_launches(str(project)) == []


async def test_r_refuses_a_completed_run(project: Path) -> None:
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await _select(pilot, app, "done")
        await pilot.press("r")
        await wait_for(pilot, lambda: "done completed: nothing to resume." in notices(app))
        assert not isinstance(app.screen, ConfirmScreen)
        assert read_launches(str(project)) == []


async def test_r_without_a_checkpoint_says_so_in_one_line(project: Path) -> None:
    (project / "dead" / "weights" / "last.pt").unlink()
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await _select(pilot, app, "dead")
        await pilot.press("r")
        await wait_for(pilot, lambda: any("Not resumed" in n for n in notices(app)))
        (notice,) = [n for n in notices(app) if "Not resumed" in n]
        assert notice.startswith("Not resumed: dead: no checkpoint in weights/ (last.pt, epoch_N")
        assert "\n" not in notice
        assert not isinstance(app.screen, ConfirmScreen)


async def test_r_refuses_a_running_run(runs_root) -> None:
    from .helpers import make_app

    app = make_app(runs_root, gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        run = app.snapshot.selected_run
        assert run.state == "running"
        await pilot.press("r")
        said = f"{run.name} is running: r resumes a DEAD, FAILED or STOPPED run (s stops this one)."
        await wait_for(pilot, lambda: said in notices(app))  # what r is for
        assert not isinstance(app.screen, ConfirmScreen)


async def test_r_lists_the_checkpoints_and_resumes_from_the_newest_complete_one(
    project: Path,
) -> None:
    """last.pt torn (0 bytes) by the kill; the dialog lists every
    candidate with its epoch, size and validity, highlights epoch_2.pt, says what is
    trained again, and the resume keeps the torn last.pt aside."""
    run = project / "dead"
    weights = run / "weights"
    (weights / "last.pt").write_bytes(b"")
    (weights / "epoch_1.pt").write_bytes(epoch_checkpoint(1, 4, archive="epoch_1"))
    (weights / "epoch_2.pt").write_bytes(epoch_checkpoint(2, 4, archive="epoch_2"))
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(110, 34)) as pilot:
        await _select(pilot, app, "dead")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert labels[0].startswith("epoch_2.pt  epoch 2, ")
        assert labels[1].startswith("epoch_1.pt  epoch 1, ")
        assert labels[2].startswith("last.pt     0 B, INVALID: last.pt is empty (0 bytes)")
        assert options.get_option_at_index(2).disabled
        assert options.get_option_at_index(options.highlighted).id == "epoch_2.pt"
        body = str(app.screen.query_one("#body").render())
        assert f"model={weights}/epoch_2.pt" in body
        assert "Torn, kept aside as NAME.torn-TIME when it starts: last.pt." in body
        await pilot.press("down")  # epoch_1.pt: the command follows the highlight
        await wait_for(
            pilot,
            lambda: f"model={weights}/epoch_1.pt" in str(app.screen.query_one("#body").render()),
        )
        assert "From weights/epoch_1.pt (epoch 1): epoch 2 is trained again." in str(
            app.screen.query_one("#body").render()
        )
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: (run / "fake_argv.json").exists())
        argv = json.loads((run / "fake_argv.json").read_text())
        assert argv[2] == f"model={weights}/epoch_2.pt"
        assert [p.name.split(".torn-")[0] for p in weights.glob("*.torn-*")] == ["last.pt"]
