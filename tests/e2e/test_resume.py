"""End to end: a real CPU `libreyolo train` SIGKILLed after epoch 2 of 5, resumed by
`rgpu-tui resume RUN_DIR` (a subprocess, as a user types it), ends `completed` in the same
directory with metrics for every epoch, and `rgpu-tui snapshot --json` reads it 5/5 DONE.

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
from support.training import Training
from support.waiting import wait_until

from rgpu_tui.core.records.launch_records import read_launches

pytestmark = pytest.mark.training

EPOCHS = 5
KILL_AFTER = 2
TIMEOUT = 240.0  # a 5-epoch run takes about 15 s here; slow CI gets room


@pytest.fixture
def killed_run(trained_dataset: Path, tmp_path: Path) -> Iterator[Training]:
    """A real run SIGKILLed once status.json says epoch 2 is done (weights/last.pt then
    holds epoch 2: libreyolo writes the checkpoint before the epoch's status)."""
    training = Training(trained_dataset, tmp_path / "runs", name="r", epochs=EPOCHS)
    training.start()
    try:
        training.wait_for_epochs(KILL_AFTER, timeout=TIMEOUT)
        training.kill()
        assert training.returncode == -signal.SIGKILL
        yield training
    finally:
        training.cleanup()
        for record in read_launches(str(training.project)):  # the resumed trainer too
            try:
                os.killpg(record.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _status(run: Path) -> dict:
    try:
        return json.loads((run / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _console(project: Path) -> str:
    logs = sorted((project / ".rgpu" / "console").glob("*.log"))
    if not logs:
        return "<no console log>"
    return "--- resume console ---\n" + "\n".join(logs[-1].read_text().splitlines()[-30:])


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


def test_a_sigkilled_run_resumes_in_place_to_the_end(killed_run: Training, tmp_path: Path):
    run, project = killed_run.run_dir, killed_run.project
    before = _status(run)
    assert before["state"] == "running"  # libreyolo never got to say otherwise
    killed_at = before["completed_epochs"]
    assert KILL_AFTER <= killed_at < EPOCHS

    done = _rgpu(tmp_path, "resume", str(run), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["plan"]["state"] == "dead" and out["plan"]["completed_epochs"] == killed_at
    assert out["launch"]["argv"][1:] == [
        "train",
        f"model={run}/weights/last.pt",
        "resume=True",
        f"data={killed_run.data_yaml}",
        "device=cpu",
    ]
    assert out["console_log"].startswith(str(project / ".rgpu" / "console" / "r-"))
    pid = out["pid"]

    final = wait_until(
        lambda: (st := _status(run)).get("pid") == pid and st.get("state") != "running" and st,
        "the resumed run to end",
        TIMEOUT,
        details=lambda: _console(project),
    )
    assert final["state"] == "completed", _console(project)
    # in place: no r2 beside it, and the run directory saw every epoch
    assert sorted(p.name for p in project.iterdir() if p.is_dir()) == [".rgpu", "r"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert {row["epoch"] for row in rows} == set(range(1, EPOCHS + 1))
    assert rows[-1]["epoch"] == EPOCHS

    snap = _rgpu(tmp_path, "snapshot", str(project), "--json")
    assert snap.returncode == 0, snap.stderr
    (shown,) = json.loads(snap.stdout)["runs"]
    assert shown["run_dir"] == str(run)
    assert (shown["state"], shown["current_epoch"], shown["total_epochs"]) == (
        "completed",
        EPOCHS,
        EPOCHS,
    )
    assert shown["progress"] == 1.0
    text = _rgpu(tmp_path, "snapshot", str(project))
    line = next(line for line in text.stdout.splitlines() if " r " in line)
    assert line.startswith("completed") and f"{EPOCHS}/{EPOCHS}" in line and "100%" in line

    again = _rgpu(tmp_path, "resume", str(run))
    assert again.returncode == 1
    assert again.stderr == "rgpu-tui: not resumed: r completed: nothing to resume\n"
