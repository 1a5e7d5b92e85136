"""The selected run's checkpoints and where a push puts them (core.run.checkpoints,
core.run.hub_target): built on the refresh thread, carried by the Snapshot, shown by the push
dialogs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.checkpoints import epoch_checkpoint

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.run import checkpoints as checkpoints_mod
from rgpu_tui.core.run.checkpoints import (
    CHECKS_PER_CALL,
    MAX_LISTED,
    CheckpointLister,
    checkpoint_epoch_metric,
    default_checkpoint,
    epoch_metric,
    order_key,
    validity_text,
)
from rgpu_tui.core.run.hub_target import ARTIFACTS_REQUEST, push_target
from rgpu_tui.core.run.metrics import CheckpointRows, MetricsReader


def rows_of(*rows: dict) -> CheckpointRows:
    out = CheckpointRows()
    for row in rows:
        out.add(row)
    return out


def row(epoch, current, *, best=None, best_epoch=None, is_best=False) -> dict:
    return {
        "epoch": epoch,
        "is_best": is_best,
        "current_metric": current,
        "current_metric_name": "metrics/mAP50-95",
        "best_metric": best,
        "best_metric_name": "metrics/mAP50-95",
        "best_epoch": best_epoch,
    }


def test_order_is_best_last_then_epochs_by_number() -> None:
    names = ["epoch_10.pt", "last.pt", "x.pt", "epoch_2.pt", "best.pt", "epoch_1.pt"]
    assert sorted(names, key=order_key) == [
        "best.pt", "last.pt", "epoch_1.pt", "epoch_2.pt", "epoch_10.pt", "x.pt",
    ]  # fmt: skip


def test_epoch_and_metric_of_each_checkpoint() -> None:
    rows = rows_of(
        row(1, 0.1, best=0.1, best_epoch=1, is_best=True),
        row(2, 0.3, best=0.3, best_epoch=2, is_best=True),
        row(3, 0.2, best=0.3, best_epoch=2),
    )
    assert epoch_metric("best.pt", rows) == (2, "mAP50-95", 0.3)
    assert epoch_metric("last.pt", rows) == (3, "mAP50-95", 0.2)
    assert epoch_metric("epoch_1.pt", rows) == (1, "mAP50-95", 0.1)
    assert epoch_metric("epoch_9.pt", rows) == (9, None, None)
    assert epoch_metric("other.pt", rows) == (None, None, None)
    # no is_best row: the last row's best_epoch; none of either: unknown
    assert epoch_metric("best.pt", rows_of(row(3, 0.2, best=0.3, best_epoch=2))) == (
        2, "mAP50-95", 0.3,
    )  # fmt: skip
    assert epoch_metric("best.pt", rows_of(row(3, 0.2))) == (None, None, None)
    assert epoch_metric("last.pt", CheckpointRows()) == (None, None, None)


def test_a_resumed_run_keeps_what_the_earlier_rows_said() -> None:
    """epoch_5.pt written before a resume from epoch 3 still holds what its row said,
    and best.pt the last is_best row (the history's stats drop those rows; these do not)."""
    rows = rows_of(
        row(4, 0.4, best=0.4, best_epoch=4, is_best=True),
        row(5, 0.5, best=0.5, best_epoch=5, is_best=True),
        row(4, 0.35, best=0.5, best_epoch=5),  # resumed
    )
    assert epoch_metric("epoch_5.pt", rows) == (5, "mAP50-95", 0.5)
    assert epoch_metric("epoch_4.pt", rows) == (4, "mAP50-95", 0.35)  # the later row wins
    assert epoch_metric("best.pt", rows) == (5, "mAP50-95", 0.5)


def test_the_reader_and_a_push_agree(tmp_path: Path) -> None:
    """The dialog's figures come from the refresh's MetricsReader; a push reads the file
    itself (checkpoint_epoch_metric): the same rows, the same answers, an unfinished last
    line included (neither takes it before its newline)."""
    lines = [json.dumps(row(e, e / 10, best=e / 10, best_epoch=e, is_best=True)) for e in (1, 2)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\nnot json\n" + lines[0])
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    for name in ("best.pt", "last.pt", "epoch_1.pt", "epoch_2.pt"):
        from_reader = epoch_metric(name, reader.checkpoint_rows)
        assert from_reader == checkpoint_epoch_metric(str(tmp_path), name)
    assert checkpoint_epoch_metric(str(tmp_path), "last.pt") == (2, "mAP50-95", 0.2)


def test_metrics_outside_the_run_are_not_read_for_checkpoints(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps(row(7, 0.7, best=0.7, best_epoch=7, is_best=True)) + "\n")
    run = tmp_path / "run"
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "best.pt").write_bytes(b"x")
    os.symlink(elsewhere, run / "metrics.jsonl")
    assert checkpoint_epoch_metric(str(run), "best.pt") == (None, None, None)
    sel = RunsWatcher(str(run)).refresh(time.time(), selected=str(run)).selected
    assert sel.checkpoint("best.pt").epoch is None


def test_the_weights_folder_is_listed_again_only_when_it_changes(tmp_path, monkeypatch) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "best.pt").write_bytes(b"12345")
    (weights / "notes.txt").write_text("not a checkpoint")
    listings = []
    real = os.listdir
    monkeypatch.setattr(checkpoints_mod.os, "listdir", lambda p: listings.append(p) or real(p))
    lister = CheckpointLister(str(tmp_path))
    settings = Settings(hub_repo="alice/ckpts")
    assert [c.name for c in lister.checkpoints(CheckpointRows(), settings)] == ["best.pt"]
    (weights / "best.pt").write_bytes(b"1234567")  # rewritten in place: same folder
    [best] = lister.checkpoints(CheckpointRows(), settings)
    assert best.size == 7 and len(listings) == 1  # re-stat'ed, not re-listed
    (weights / "epoch_1.pt").write_bytes(b"1")
    st = os.stat(weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # coarse clocks
    names = [c.name for c in lister.checkpoints(CheckpointRows(), settings)]
    assert names == ["best.pt", "epoch_1.pt"] and len(listings) == 2


def test_a_huge_weights_folder_lists_best_last_and_the_newest(tmp_path: Path) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    for name in ["best.pt", "last.pt"] + [f"epoch_{e}.pt" for e in range(1, MAX_LISTED + 11)]:
        (weights / name).write_bytes(b"")
    lister = CheckpointLister(str(tmp_path))
    names = [c.name for c in lister.checkpoints(CheckpointRows(), Settings())]
    assert len(names) == MAX_LISTED and lister.not_listed == 12
    assert names[:3] == ["best.pt", "last.pt", "epoch_13.pt"]
    assert names[-1] == f"epoch_{MAX_LISTED + 10}.pt"


def test_what_p_pushes(tmp_path: Path) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    lister = CheckpointLister(str(tmp_path))

    def default() -> str:
        st = os.stat(weights)
        os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        return default_checkpoint(lister.checkpoints(CheckpointRows(), Settings()))

    assert default() == "best.pt"  # nothing there: best.pt (the dialog says it is missing)
    (weights / "last.pt").write_bytes(b"")
    assert default() == "last.pt"
    os.symlink(weights / "gone.pt", weights / "best.pt")  # dangling: does not exist
    assert default() == "last.pt"
    os.unlink(weights / "best.pt")
    (weights / "best.pt").write_bytes(b"")
    assert default() == "best.pt"


@pytest.mark.parametrize(
    ("hub_path", "path", "folder"),
    [
        ("{run}/{file}", "exp1/best.pt", "exp1"),
        ("models/{run}/ckpt/{file}", "models/exp1/ckpt/best.pt", "models/exp1/ckpt"),
        ("./models//{run}/./{file}", "models/exp1/best.pt", "models/exp1"),
        ("{file}", "best.pt", ""),
    ],
)
def test_push_target(hub_path: str, path: str, folder: str) -> None:
    settings = Settings(hub_repo=" alice/ckpts ", hub_path=hub_path)
    target = push_target(settings, "/runs/exp1/", "best.pt")
    assert (target.repo, target.path, target.folder, target.problem) == (
        "alice/ckpts", path, folder, None,
    )  # fmt: skip
    artifacts = push_target(settings, "/runs/exp1", ARTIFACTS_REQUEST)
    assert (artifacts.path, artifacts.folder) == (folder or ".", folder)


def test_push_target_problems() -> None:
    no_repo = push_target(Settings(), "/runs/exp1", "best.pt")
    assert no_repo.repo_problem.startswith("no Hub repo") and no_repo.path == "exp1/best.pt"
    assert "--hub-repo" in no_repo.problem and "RGPU_HUB_REPO" in no_repo.problem
    bad = push_target(Settings(hub_repo="not a repo"), "/runs/exp1", "best.pt")
    assert bad.problem == "bad Hub repo 'not a repo': must look like ORG/NAME"
    up = push_target(Settings(hub_repo="a/b", hub_path="../{file}"), "/runs/exp1", "best.pt")
    assert up.path is None and up.repo_problem is None
    assert up.problem == "hub_path '../{file}' gives '../best.pt', not a path inside the repo"


def test_the_snapshot_carries_the_checkpoints(tmp_path: Path) -> None:
    run = tmp_path / "exp1"
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "last.pt").write_bytes(b"1234")
    (run / "weights" / "epoch_3.pt").write_bytes(b"12")
    (run / "metrics.jsonl").write_text(json.dumps(row(3, 0.3)) + "\n")
    settings = Settings(hub_repo="alice/ckpts", hub_path="m/{run}/{file}")
    snap = RunsWatcher(str(tmp_path), settings=settings).refresh(time.time(), str(run))
    sel = snap.selected
    assert [c.name for c in sel.checkpoints] == ["last.pt", "epoch_3.pt"]
    assert sel.push_default == "last.pt"
    assert sel.artifacts_target.path == "m/exp1"
    [last, epoch3] = snapshot_to_json(snap)["selected"]["checkpoints"]
    assert last == {
        "name": "last.pt",
        "path": str(run / "weights" / "last.pt"),
        "exists": True,
        "size": 4,
        "epoch": 3,
        "metric_name": "mAP50-95",
        "metric": 0.3,
        "problem": None,
        "valid": None,  # just written: checked once it has been still WRITING_S
        "invalid": None,
        "hub_repo": "alice/ckpts",
        "hub_path": "m/exp1/last.pt",
        "hub_problem": None,
    }
    assert (epoch3["epoch"], epoch3["hub_path"]) == (3, "m/exp1/epoch_3.pt")


def test_settled_checkpoints_are_stat_ed_again_only_when_the_folder_changes(tmp_path) -> None:
    """A refresh stats best.pt, last.pt and files changed within STABLE_S; an epoch_N.pt
    written long ago is stat'ed again when weights/ changes (a new file appears)."""
    weights = tmp_path / "weights"
    weights.mkdir()
    old = time.time() - 600
    for name in ("best.pt", "epoch_1.pt", "epoch_2.pt"):
        (weights / name).write_bytes(b"1")
        os.utime(weights / name, (old, old))
    (weights / "epoch_2.pt").write_bytes(b"1")  # just written: still settling
    lister = CheckpointLister(str(tmp_path))

    def sizes() -> dict:
        got = lister.checkpoints(CheckpointRows(), Settings(), rows_key=1, now=time.time())
        return {c.name: c.size for c in got}

    assert sizes() == {"best.pt": 1, "epoch_1.pt": 1, "epoch_2.pt": 1}
    first = lister.checkpoints(CheckpointRows(), Settings(), rows_key=1, now=time.time())
    again = lister.checkpoints(CheckpointRows(), Settings(), rows_key=1, now=time.time())
    assert again is first  # nothing changed: the same tuple, nothing rebuilt
    for name in ("best.pt", "epoch_1.pt", "epoch_2.pt"):
        with open(weights / name, "r+b") as handle:  # rewritten in place: same folder
            handle.write(b"123")
    assert sizes() == {"best.pt": 3, "epoch_1.pt": 1, "epoch_2.pt": 3}
    (weights / "epoch_3.pt").write_bytes(b"1")
    st = os.stat(weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert sizes() == {"best.pt": 3, "epoch_1.pt": 3, "epoch_2.pt": 3, "epoch_3.pt": 1}


def test_torn_checkpoints_are_marked_and_never_the_default(tmp_path: Path) -> None:
    """A 0-byte last.pt and a cut best.pt are invalid (core.run.torch_checkpoint); `p`
    then pushes the newest valid epoch_N.pt; the JSON says which and why."""
    weights = tmp_path / "weights"
    weights.mkdir()
    whole = epoch_checkpoint(3, archive="best")
    (weights / "best.pt").write_bytes(whole[: len(whole) // 2])
    (weights / "last.pt").write_bytes(b"")
    for n in (2, 3):
        (weights / f"epoch_{n}.pt").write_bytes(epoch_checkpoint(n, archive=f"epoch_{n}"))
    old = time.time() - 600
    for p in weights.iterdir():
        os.utime(p, (old, old))
    lister = CheckpointLister(str(tmp_path))
    got = {c.name: c for c in lister.checkpoints(CheckpointRows(), Settings(), now=time.time())}
    assert {n: c.valid for n, c in got.items()} == {
        "best.pt": False, "last.pt": False, "epoch_2.pt": True, "epoch_3.pt": True,
    }  # fmt: skip
    assert got["last.pt"].invalid.startswith("last.pt is empty (0 bytes)")
    assert "not a complete torch checkpoint" in got["best.pt"].invalid
    assert default_checkpoint(got.values()) == "epoch_3.pt"
    assert validity_text(got["last.pt"]) == "0 B, INVALID (torn or not a checkpoint)"
    assert validity_text(got["epoch_3.pt"]).endswith(" B, epoch 3")
    (weights / "last.pt").write_bytes(epoch_checkpoint(3))  # written again: checked again
    os.utime(weights / "last.pt", (old + 1, old + 1))
    got = {c.name: c for c in lister.checkpoints(CheckpointRows(), Settings(), now=time.time())}
    assert got["last.pt"].valid is True and default_checkpoint(got.values()) == "last.pt"


def test_validity_checks_are_bounded_a_call(tmp_path: Path) -> None:
    """A folder of many checkpoints is checked CHECKS_PER_CALL files a refresh, the newest
    first; the others say "not checked yet" meanwhile."""
    weights = tmp_path / "weights"
    weights.mkdir()
    old = time.time() - 600
    for n in range(1, 11):
        (weights / f"epoch_{n}.pt").write_bytes(epoch_checkpoint(n))
        os.utime(weights / f"epoch_{n}.pt", (old, old))
    lister = CheckpointLister(str(tmp_path))
    first = lister.checkpoints(CheckpointRows(), Settings(), now=time.time())
    checked = [c.name for c in first if c.valid is not None]
    assert checked == [f"epoch_{n}.pt" for n in range(10 - CHECKS_PER_CALL + 1, 11)]
    assert validity_text(first[0]) == validity_text(first[-1]).replace("10", "1")
    for _ in range(3):
        last = lister.checkpoints(CheckpointRows(), Settings(), now=time.time())
    assert all(c.valid for c in last)


def test_a_checkpoint_outside_the_run_is_never_read(tmp_path: Path) -> None:
    """A symlink out of the run: its problem says so; the validity check does not open it."""
    outside = tmp_path / "elsewhere.pt"
    outside.write_bytes(b"")
    run = tmp_path / "r"
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "best.pt").symlink_to(outside)
    old = time.time() - 600
    os.utime(outside, (old, old))
    lister = CheckpointLister(str(run))
    (best,) = lister.checkpoints(CheckpointRows(), Settings(), now=time.time())
    assert best.problem.startswith("best.pt resolves to") and best.valid is None
