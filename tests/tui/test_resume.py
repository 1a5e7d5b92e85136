"""`r`: resume a DEAD or FAILED run, under Pilot. A stand-in `libreyolo` records the argv
it was started with and continues the run in its own directory, as libreyolo does."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import rgpu_tui.core.launch.launch_spec as launch_spec_mod
from rgpu_tui.core.records.launch_records import read_launches
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.dialogs import ConfirmScreen

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


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).isoformat()


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
        status["started_at"] = _iso(time.time() - 600)
        (run / "status.json").write_text(json.dumps(status))
        rows = [json.dumps({"epoch": e, "train/loss": 1.0 / e}) for e in range(1, epochs + 1)]
        (run / "metrics.jsonl").write_text("\n".join(rows) + "\n")
        (run / "train_config.yaml").write_text(f"data: {data}\ndevice: cpu\nepochs: 4\n")
        (run / "weights" / "last.pt").write_bytes(b"PK checkpoint")
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
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        assert "Resume dead (DEAD after epoch 2/4) in its own directory?" in body
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
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert read_launches(str(project)) == []


async def test_r_refuses_a_completed_run(project: Path) -> None:
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await _select(pilot, app, "done")
        await pilot.press("r")
        await wait_for(pilot, lambda: "done completed: nothing to resume." in notices(app))
        assert not isinstance(app.screen, ConfirmScreen)
        assert read_launches(str(project)) == []


async def test_r_without_last_pt_says_so_in_one_line(project: Path) -> None:
    (project / "dead" / "weights" / "last.pt").unlink()
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await _select(pilot, app, "dead")
        await pilot.press("r")
        await wait_for(pilot, lambda: any("Not resumed" in n for n in notices(app)))
        (notice,) = [n for n in notices(app) if "Not resumed" in n]
        assert notice.startswith("Not resumed: dead: no weights/last.pt: nothing to resume from")
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
        await wait_for(pilot, lambda: f"{run.name} is running." in notices(app))
        assert not isinstance(app.screen, ConfirmScreen)
