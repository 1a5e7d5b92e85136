"""weights/epoch_N.pt with an N outside the epoch range (2^64 + 1, 240 digits): no epoch,
as every epoch out of range is (core.run.checkpoints.file_epoch, the one check): `chart
--json`'s `saved`, `snapshot --json`'s checkpoints, auto-push and resume, as real
subprocesses and calls on a real run's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from support.cli_env import clean_env, run_rgpu

from rgpu_tui.core.hub.auto_push import AutoPushState, auto_push_requests
from rgpu_tui.core.launch.resume_from import list_candidates
from rgpu_tui.core.run.checkpoints import file_epoch, order_key

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
ODD = ("epoch_18446744073709551617.pt", "epoch_" + "9" * 240 + ".pt", "epoch_10000001.pt")


def run_with_odd_epochs(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "exp"
    shutil.copytree(FIXTURE, run, ignore=shutil.ignore_patterns("weights", "val"))
    (run / "weights").mkdir()
    for name in ("epoch_2.pt", *ODD):
        (run / "weights" / name).write_bytes(b"not a checkpoint")
    return run


def test_the_one_check():
    assert [file_epoch(n) for n in ("epoch_0.pt", "epoch_10000000.pt", *ODD)] == [
        0,
        10_000_000,
        None,
        None,
        None,
    ]
    assert file_epoch("epoch_5.ptx") is None and file_epoch("best.pt") is None
    assert sorted(["x.pt", ODD[0], "epoch_3.pt", "last.pt"], key=order_key) == [
        "last.pt",
        "epoch_3.pt",
        ODD[0],
        "x.pt",
    ]


def test_chart_json_saves_only_epochs_in_range(tmp_path):
    run = run_with_odd_epochs(tmp_path)
    proc = run_rgpu("chart", str(run), "--json", env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [got] = json.loads(proc.stdout)["runs"]
    assert got["saved"] == [2]


def test_snapshot_json_lists_them_with_no_epoch(tmp_path):
    run = run_with_odd_epochs(tmp_path)
    proc = run_rgpu("snapshot", str(run), "--json", env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    listed = {c["name"]: c["epoch"] for c in json.loads(proc.stdout)["selected"]["checkpoints"]}
    assert listed["epoch_2.pt"] == 2
    assert all(listed[name] is None for name in ODD if name in listed)
    assert ODD[0] in listed


def test_auto_push_and_resume_leave_them_out(tmp_path):
    run = run_with_odd_epochs(tmp_path)
    state, period = AutoPushState(), SimpleNamespace(auto_push="period")
    names = ["epoch_2.pt", *ODD]
    got = auto_push_requests(str(run), period, None, state, names, catch_up=True)
    assert [r.file for r in got] == ["epoch_2.pt"]  # none pushed yet: the one epoch file
    (run / "weights" / "epoch_3.pt").write_bytes(b"x")
    got = auto_push_requests(str(run), period, None, state, [*names, "epoch_3.pt"])
    assert [r.file for r in got] == ["epoch_3.pt"]
    candidates = {c.name: c.epoch for c in list_candidates(str(run))}
    assert not set(ODD) & set(candidates) and candidates["epoch_3.pt"] == 3
