"""End to end: a real CPU `libreyolo train` (save_period=1)
launched as the app launches (core.launch.launch: no run directory recorded), SIGKILLed
mid-run, its weights/last.pt then truncated to 0 bytes as a kill during the save leaves it.
`rgpu-tui resume RUN` continues from the newest epoch_N.pt (the torn last.pt kept aside),
the run completes in the same directory, the history covers every epoch once, `rgpu-tui
snapshot --json` shows two attempts and an elapsed time no smaller than their sum, and the
app, `snapshot`, `agent` and `watch` list the run once.

Marked ``training``; every wait is a handshake on the run's files against a deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.run_lists import agent_list, snapshot_doc, snapshot_list, watch_env, watch_list
from support.waiting import wait_until, wait_until_pilot

from rgpu_tui.core.launch.launch import launch
from rgpu_tui.core.launch.launch_spec import make_spec
from rgpu_tui.core.records.launch_records import read_launches
from rgpu_tui.core.records.launch_runs import launch_alive
from rgpu_tui.tui.app import RgpuApp

pytestmark = pytest.mark.training

EPOCHS = 8
KILL_AFTER = 4
TIMEOUT = 300.0
TRAIN_ARGS = ("pretrained=False", "workers=0", "amp=False", "eval_interval=1", "save_period=1")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "runs"
    yield root
    for record in read_launches(str(root)):  # the resumed trainer too
        try:
            os.killpg(record.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _status(run: Path) -> dict:
    try:
        return json.loads((run / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _consoles(project: Path) -> str:
    out = []
    for log in sorted((project / ".rgpu" / "console").glob("*.log")):
        out.append(f"--- {log.name} ---\n" + "\n".join(log.read_text().splitlines()[-25:]))
    return "\n".join(out)


def _rgpu(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = clean_env(tmp_path, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", MPLBACKEND="Agg")
    return subprocess.run(
        [str(RGPU_TUI), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


async def test_a_torn_last_pt_resumes_from_the_newest_epoch_and_stays_one_run(
    trained_dataset: Path, project: Path, tmp_path: Path
) -> None:
    spec = make_spec(
        str(trained_dataset), str(project), model="yolo9-t", epochs=EPOCHS, batch=4,
        imgsz=128, device="cpu", name="exp", extra=TRAIN_ARGS,
    )  # fmt: skip
    first = launch(spec, env=ENV)
    run = project / "exp"
    wait_until(
        lambda: (_status(run).get("completed_epochs") or 0) >= KILL_AFTER,
        f"epoch {KILL_AFTER}",
        TIMEOUT,
        details=lambda: _consoles(project),
    )
    os.killpg(first.pid, signal.SIGKILL)  # mid-run: epoch KILL_AFTER + 1 has begun
    wait_until(lambda: not launch_alive(first), "the trainer to die", 30)
    weights = run / "weights"
    (weights / "last.pt").write_bytes(b"")  # as a kill during torch.save leaves it
    killed_at = _status(run)["completed_epochs"]
    newest = max(int(p.stem.split("_")[1]) for p in weights.glob("epoch_*.pt"))
    assert newest >= killed_at >= KILL_AFTER

    done = _rgpu(tmp_path, "resume", str(run), "--json")
    assert done.returncode == 0, done.stderr + _consoles(project)
    out = json.loads(done.stdout)
    plan = out["plan"]
    assert out["launch"]["argv"][2] == f"model={weights}/epoch_{newest}.pt"
    assert (plan["from_name"], plan["from_epoch"]) == (f"epoch_{newest}.pt", newest)
    assert plan["from_epoch_source"] == "checkpoint"
    assert plan["redo_epochs"] == max(plan["completed_epochs"] - newest, 0)
    assert [Path(p).name.split(".torn-")[0] for p in plan["set_aside_as"]] == ["last.pt"]
    torn = Path(plan["set_aside_as"][0])
    assert torn.stat().st_size == 0  # kept, never deleted
    resumed = out["pid"]
    final = wait_until(
        lambda: (st := _status(run)).get("pid") == resumed and st.get("state") != "running" and st,
        "the resumed run to end",
        TIMEOUT,
        details=lambda: _consoles(project),
    )
    assert final["state"] == "completed", _consoles(project)
    assert sorted(p.name for p in project.iterdir()) == [".rgpu", "exp"]  # in place
    assert (weights / "last.pt").stat().st_size > 0 and torn.exists()

    # what the snapshot shows: every epoch once, two attempts, their sum
    doc = _rgpu(tmp_path, "snapshot", str(run), "--json")
    assert doc.returncode == 0, doc.stderr
    snap = json.loads(doc.stdout)
    (shown,) = snap["runs"]
    assert (shown["state"], shown["current_epoch"], shown["total_epochs"]) == (
        "completed", EPOCHS, EPOCHS,
    )  # fmt: skip
    metrics = snap["selected"]["metrics"]
    assert metrics["rows"] == EPOCHS
    assert len(metrics["series"]["train/loss"]) == EPOCHS
    one, two = shown["attempts"]
    assert one["ended"] and two["ended"]
    assert one["epochs"] == killed_at and two["epochs"] == EPOCHS - newest
    assert one["known_by"] in ("launch record, exit record", "launch record, console log")
    assert one["started_at"] < one["ended_at"] <= two["started_at"] < two["ended_at"]
    assert shown["elapsed_seconds"] >= one["seconds"] + two["seconds"] - 1e-6
    assert shown["elapsed_seconds"] > two["seconds"]
    assert shown["epochs_trained"] == killed_at + EPOCHS - newest

    # one row everywhere
    env = clean_env(tmp_path)
    want = {(str(run), "exp")}
    assert snapshot_list(project, env) == want
    assert agent_list(project, env) == want
    assert watch_list(project, watch_env(env, tmp_path)) == {str(run)}
    assert len(snapshot_doc(project, env)["runs"]) == 1
    app = RgpuApp(root=str(project), interval=0.5, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until_pilot(
            pilot, lambda: app.snapshot is not None, "the app's first snapshot", 30
        )
        assert {(r.run_dir, r.name) for r in app.snapshot.runs} == want
        assert len(app.snapshot.runs[0].attempts) == 2
