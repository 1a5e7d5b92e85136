"""A push records the epoch of the bytes it uploaded: libreyolo rewrites
best.pt in place when an epoch ends, and a push confirmed near an epoch's end waits for
the file to be still (the settle wait), then uploads what it finds. Here best.pt (epoch 10)
is really rewritten (truncated and written again, as torch.save does) with epoch 11 while
the push waits: the Hub gets the epoch-11 file, and pushes.jsonl, the push's result and the
header say epoch 11 and its metric (the epoch the dialog asked for kept as `asked_epoch`);
best.pt is not "changed since pushed", since the Hub holds exactly the local file."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import pytest
from support.checkpoints import epoch_checkpoint
from support.hub_server import HubServer

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.push import PushRequest, push
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.push_records import read_pushes

from .test_hub_push import WRITE_TOKEN

SETTLE_S = 1.5  # the rewrite comes 1.2 s in: over a second after the push began


def row(epoch: int) -> dict:
    metric = round(0.03 * epoch, 4)
    return {
        "epoch": epoch,
        "time": 1.0,
        "is_best": True,
        "current_metric": metric,
        "current_metric_name": "metrics/mAP50-95",
        "best_metric": metric,
        "best_metric_name": "metrics/mAP50-95",
        "best_epoch": epoch,
    }


@pytest.fixture
def hub(tmp_path: Path):
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_best_pt_rewritten_during_the_settle_wait_is_recorded_as_what_was_uploaded(
    tmp_path: Path, hub: HubServer
) -> None:
    run = tmp_path / "runs" / "exp"
    (run / "weights").mkdir(parents=True)
    metrics = run / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(row(e)) + "\n" for e in range(1, 11)))
    best = run / "weights" / "best.pt"
    best.write_bytes(epoch_checkpoint(10, 30, archive="best", size=200_000))
    epoch_11 = epoch_checkpoint(11, 30, archive="best", size=200_000)

    def epoch_ends() -> None:  # libreyolo: a row, then best.pt saved in place
        time.sleep(1.2)
        with open(metrics, "a") as out:
            out.write(json.dumps(row(11)) + "\n")
        with open(best, "r+b") as out:
            out.truncate(0)
            out.write(epoch_11[: len(epoch_11) // 2])
            out.flush()
            time.sleep(0.05)
            out.write(epoch_11[len(epoch_11) // 2 :])

    writer = threading.Thread(target=epoch_ends)

    def on_phase(name: str) -> None:
        if name == "settling" and not writer.is_alive() and writer.ident is None:
            writer.start()

    result = push(
        PushRequest(str(run), "best.pt"),
        Settings(hub_repo="alice/ckpts"),
        endpoint=hub.url,
        token=WRITE_TOKEN,
        settle_s=SETTLE_S,
        timeout=5,
        retry_waits=(0.05,),
        on_phase=on_phase,
    )
    writer.join(5)
    assert result.ok, result.error
    uploaded = hub.file_bytes("alice/ckpts", "exp/best.pt")
    assert uploaded == epoch_11 == best.read_bytes()  # the epoch-11 bytes, as on disk
    assert result.sha256 == hashlib.sha256(epoch_11).hexdigest()
    (record,) = read_pushes(str(run))
    assert record["epoch"] == 11 and record.get("asked_epoch") == 10
    assert (record["metric_name"], record["metric"]) == ("mAP50-95", pytest.approx(0.33))
    assert (result.epoch, result.metric) == (11, pytest.approx(0.33))
    assert "epoch 11" in hub.commits("alice/ckpts")[-1].message

    # the header: best.pt is the pushed one (not "changed since pushed")
    snap = RunsWatcher(str(run.parent)).refresh(time.time(), str(run))
    assert snap.selected.pushes.best_changed is False
    assert snap.selected.pushes.last_ok_epoch == 11

    # and once libreyolo writes best.pt again, it is changed since
    time.sleep(0.01)
    best.write_bytes(epoch_checkpoint(12, 30, archive="best", size=200_000))
    snap = RunsWatcher(str(run.parent)).refresh(time.time(), str(run))
    assert snap.selected.pushes.best_changed is True
