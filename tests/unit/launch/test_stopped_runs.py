"""A run the user stopped is STOPPED, not FAIL: `stop` writes a stop
record before its first signal (core.records.stop_records), libreyolo then writes failed /
KeyboardInterrupt and drops completed_epochs (its own status writer here:
tests/support/status_trainer.py), and every view reads the run as stopped with its epochs
and progress kept; `watch` says run_stopped, never run_failed. A later attempt that fails
on its own is still a failure."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from support.checkpoints import epoch_checkpoint
from support.status_trainer import start as start_trainer

from rgpu_tui.core.away.events import EventEngine
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.fleet.fleet_summary import STATE_ORDER
from rgpu_tui.core.launch.resume import plan_resume
from rgpu_tui.core.launch.stop import stop_run
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.cost import run_costs
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.stop_records import read_stops
from rgpu_tui.core.render.prometheus import families
from rgpu_tui.core.render.snapshot_text import snapshot_to_text


@pytest.fixture
def procs():
    out = []
    yield out
    for p in out:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.mark.parametrize("by", ["app", "rgpu-tui stop", "fleet"])
def test_a_stopped_run_reads_stopped_with_its_epochs_and_no_failure(tmp_path: Path, procs, by):
    project = tmp_path / "runs"
    run = project / "exp"
    trainer = start_trainer(run, 3, 10)
    procs.append(trainer)
    watcher = RunsWatcher(str(project))
    engine = EventEngine(Settings(), pushes=False, first_look=False)
    engine.observe(watcher.refresh(time.time()))  # seen running

    result = stop_run(str(run), Settings(), sleep=time.sleep, by=by)
    assert result.ok and result.signals_sent == ("SIGINT",), result
    assert result.final_state == "stopped"
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "failed" and status["error"]["type"] == "KeyboardInterrupt"
    assert "completed_epochs" not in status  # libreyolo dropped it
    (stop,) = read_stops(str(run))
    assert (stop.pid, stop.by) == (trainer.pid, by)

    snap = watcher.refresh(time.time())
    (info,) = snap.runs
    assert info.state == "stopped" and info.error is None
    assert (info.completed_epochs, info.total_epochs) == (3, 10)
    assert info.progress == pytest.approx(0.3)
    assert snapshot_to_json(snap)["runs"][0]["state"] == "stopped"
    assert any(ln.startswith("stopped   exp ") for ln in snapshot_to_text(snap).splitlines())
    events = engine.observe(snap)
    assert [e.event for e in events] == ["run_stopped"]
    # during epoch 4 (libreyolo's current_epoch), 3 of them done
    assert events[0].message.startswith("exp stopped by the user at epoch 4/10")
    (fam,) = [f for f in families(snap, {}) if f.metric.name == "rgpu_run_info"]
    assert [labels[1] for labels, _v in fam.samples] == ["stopped"]
    assert "stopped" in STATE_ORDER
    assert run_costs(info, 3.6)[2] is None  # nothing to finish
    # `r` offers to resume it as what it is: STOPPED
    (run / "weights").mkdir()
    (run / "weights" / "last.pt").write_bytes(epoch_checkpoint(3, 10))
    data = tmp_path / "data.yaml"
    data.write_text("path: .\ntrain: images\nval: images\nnames: {0: a}\n")
    (run / "train_config.yaml").write_text(f"data: {data}\ndevice: cpu\n")
    assert plan_resume(str(run), executable="libreyolo").state == "stopped"


def test_a_later_attempt_that_fails_by_itself_is_a_failure(tmp_path: Path, procs) -> None:
    """The stop record names its attempt (pid, started_at): a resume that then dies of its
    own KeyboardInterrupt (not rgpu-tui's stop) reads FAIL."""
    run = tmp_path / "runs" / "exp"
    first = start_trainer(run, 3, 10)
    procs.append(first)
    assert stop_run(str(run), Settings(), sleep=time.sleep).final_state == "stopped"
    resumed = start_trainer(run, 5, 10, start_epoch=4)
    procs.append(resumed)
    resumed.send_signal(signal.SIGINT)  # a Ctrl-C in its own terminal: not a stop record
    assert resumed.wait(10) == 130
    (info,) = RunsWatcher(str(run.parent)).refresh(time.time()).runs
    assert info.state == "failed" and info.error.startswith("KeyboardInterrupt")
    assert info.completed_epochs == 5
