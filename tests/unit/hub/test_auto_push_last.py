"""auto_push_files = ["best", "last"]: last.pt is pushed each time it is rewritten too, so
the weights a resume needs are off the machine (core.hub.auto_push)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from support.checkpoints import checkpoint_bytes

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.auto_push import AutoPushState, auto_push_requests
from rgpu_tui.core.hub.push import PushRequest


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "exp"
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "best.pt").write_bytes(checkpoint_bytes(100, 1))
    (run / "weights" / "last.pt").write_bytes(checkpoint_bytes(100, 2))
    return run


def _rewrite(path: Path, seed: int) -> None:
    with open(path, "r+b") as out:  # in place, as libreyolo does
        out.truncate(0)
        out.write(checkpoint_bytes(100 + seed, seed))


def test_last_pt_after_each_epoch_with_best(tmp_path: Path) -> None:
    run = _run(tmp_path)
    both = Settings(auto_push="best", auto_push_files=("best", "last"))
    state = AutoPushState()
    row = {"epoch": 3, "best_epoch": 3}
    assert auto_push_requests(str(run), both, row, state) == []  # the first look notes
    _rewrite(run / "weights" / "last.pt", 3)
    assert auto_push_requests(str(run), both, {"epoch": 4, "best_epoch": 3}, state) == [
        PushRequest(str(run), "last.pt")
    ]
    assert auto_push_requests(str(run), both, {"epoch": 4, "best_epoch": 3}, state) == []
    _rewrite(run / "weights" / "last.pt", 4)
    _rewrite(run / "weights" / "best.pt", 4)
    assert auto_push_requests(str(run), both, {"epoch": 5, "best_epoch": 5}, state) == [
        PushRequest(str(run), "best.pt"),
        PushRequest(str(run), "last.pt"),
    ]
    only_last = Settings(auto_push="best", auto_push_files=("last",))
    fresh = AutoPushState()
    assert auto_push_requests(str(run), only_last, row, fresh, catch_up=True) == [
        PushRequest(str(run), "last.pt")
    ]
    assert auto_push_requests(str(run), Settings(auto_push="best"), row, AutoPushState()) == []


def test_last_pt_with_period_and_after_a_restart(tmp_path: Path) -> None:
    run = _run(tmp_path)
    period = Settings(auto_push="period", auto_push_files=("best", "last"))
    state = AutoPushState()
    assert auto_push_requests(str(run), period, None, state) == []
    (run / "weights" / "epoch_1.pt").write_bytes(checkpoint_bytes(10, 9))
    _rewrite(run / "weights" / "last.pt", 5)
    assert auto_push_requests(str(run), period, None, state) == [
        PushRequest(str(run), "epoch_1.pt"),
        PushRequest(str(run), "last.pt"),
    ]
    # a restarted app: last.pt pushed before, rewritten since: pushed again at once
    records = run / ".rgpu" / "pushes.jsonl"
    records.parent.mkdir()
    pushed_at = time.time() - 60
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(pushed_at))
    records.write_text(json.dumps({"outcome": "ok", "file": "last.pt", "time": stamp}) + "\n")
    os.utime(run / "weights" / "last.pt", (pushed_at - 30, pushed_at - 30))
    assert auto_push_requests(str(run), period, None, AutoPushState()) == []
    os.utime(run / "weights" / "last.pt", (pushed_at + 30, pushed_at + 30))
    assert auto_push_requests(str(run), period, None, AutoPushState()) == [
        PushRequest(str(run), "last.pt")
    ]
