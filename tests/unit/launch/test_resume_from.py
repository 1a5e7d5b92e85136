"""Resume from the newest complete checkpoint (core.launch.resume_from, core.launch.resume):
a torn last.pt is skipped and kept aside, `--from` chooses, the plan says which file, its
epoch and the epochs trained again. The stand-in libreyolo of test_resume.py continues the
run of the checkpoint it is given."""

# ruff: noqa: F811 - the fixtures of test_resume.py are imported, then taken as arguments

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.checkpoints import epoch_checkpoint
from support.waiting import wait_until

from rgpu_tui.core.launch.resume import ResumeError, ResumePlan, choose, plan_resume, start_resume
from rgpu_tui.core.launch.resume_from import MAX_EPOCH_FILES, list_candidates
from rgpu_tui.core.model.snapshot_from_json import dataclass_from_json
from rgpu_tui.core.records.launch_records import read_launches

from .test_resume import data_yaml, fake_libreyolo, make_run, project  # noqa: F401


def torn_run(project: Path, data: Path, pid: int) -> Path:
    """Killed while saving after epoch 22 of 30: last.pt 0 bytes; epoch_19.pt, epoch_20.pt
    and best.pt (epoch 15) complete; epoch_21.pt cut short; metrics say 22 done."""
    run = make_run(project, pid=pid, data=data, device="cpu", epochs_done=22)
    weights = run / "weights"
    (weights / "last.pt").write_bytes(b"")
    for n in (19, 20):
        (weights / f"epoch_{n}.pt").write_bytes(epoch_checkpoint(n, 30, archive=f"epoch_{n}"))
    whole = epoch_checkpoint(21, 30, archive="epoch_21")
    (weights / "epoch_21.pt").write_bytes(whole[: len(whole) // 2])
    (weights / "best.pt").write_bytes(epoch_checkpoint(15, 30, archive="best"))
    status = json.loads((run / "status.json").read_text())
    status.update(total_epochs=30, completed_epochs=22)
    (run / "status.json").write_text(json.dumps(status))
    return run


def test_the_newest_complete_checkpoint_is_chosen_and_said(
    project: Path, data_yaml: Path, dead_pid: int
) -> None:
    run = torn_run(project, data_yaml, dead_pid)
    plan = plan_resume(str(run), executable="libreyolo")
    assert plan.checkpoint == str(run / "weights" / "epoch_20.pt")
    assert plan.argv[2] == f"model={run}/weights/epoch_20.pt"
    assert (plan.from_name, plan.from_epoch, plan.from_epoch_source) == (
        "epoch_20.pt", 20, "checkpoint",
    )  # fmt: skip
    assert (plan.completed_epochs, plan.redo_epochs) == (22, 2)
    assert plan.from_text() == "from weights/epoch_20.pt (epoch 20): epochs 21-22 are trained again"
    assert [(c.name, c.epoch, c.valid) for c in plan.candidates] == [
        ("epoch_20.pt", 20, True),
        ("epoch_19.pt", 19, True),
        ("best.pt", 15, True),
        ("epoch_21.pt", 21, False),
        ("last.pt", None, False),
    ]
    assert plan.candidates[-1].describe().startswith("0 B, INVALID: last.pt is empty (0 bytes)")
    assert set(plan.set_aside) == {str(run / "weights" / n) for n in ("last.pt", "epoch_21.pt")}
    # the fleet reads the plan back from its JSON, candidates included
    back = dataclass_from_json(ResumePlan, json.loads(json.dumps(plan.to_json())))
    assert back == plan


@pytest.mark.parametrize(
    ("choice", "name", "epoch"),
    [("best", "best.pt", 15), ("epoch_19", "epoch_19.pt", 19), ("epoch_19.pt", "epoch_19.pt", 19)],
)
def test_from_chooses(
    project: Path, data_yaml: Path, dead_pid: int, choice: str, name: str, epoch: int
) -> None:
    run = torn_run(project, data_yaml, dead_pid)
    plan = plan_resume(str(run), executable="libreyolo", choice=choice)
    assert (plan.from_name, plan.from_epoch, plan.redo_epochs) == (name, epoch, 22 - epoch)
    assert plan.argv[2] == f"model={run}/weights/{name}"
    assert choose(plan, "epoch_20.pt").argv[2] == f"model={run}/weights/epoch_20.pt"


def test_from_a_torn_or_missing_file_is_refused_in_one_line(
    project: Path, data_yaml: Path, dead_pid: int
) -> None:
    run = torn_run(project, data_yaml, dead_pid)
    with pytest.raises(ResumeError) as e:
        plan_resume(str(run), executable="libreyolo", choice="last")
    assert str(e.value).startswith("r: not resumed from last.pt: last.pt is empty (0 bytes)")
    with pytest.raises(ResumeError, match="no weights/epoch_7.pt to resume from"):
        plan_resume(str(run), executable="libreyolo", choice="epoch_7")
    with pytest.raises(ResumeError, match="give best, last, epoch_N or the path"):
        plan_resume(str(run), executable="libreyolo", choice="newest")
    plan = plan_resume(str(run), executable="libreyolo")
    with pytest.raises(ResumeError, match="not resumed from epoch_21.pt: epoch_21.pt is not a"):
        choose(plan, "epoch_21.pt")
    for path in (run / "weights").iterdir():
        path.write_bytes(b"")
    with pytest.raises(ResumeError) as e:
        plan_resume(str(run), executable="libreyolo")
    assert str(e.value).startswith("r: no complete checkpoint to resume from: ")
    assert "\n" not in str(e.value) and "best.pt is empty" in str(e.value)


def test_a_checkpoint_elsewhere_names_the_run(
    project: Path, data_yaml: Path, dead_pid: int, tmp_path: Path
) -> None:
    """A pulled checkpoint outside the run: libreyolo would start a new run from it unless
    project, name and exist_ok say which one to continue."""
    run = torn_run(project, data_yaml, dead_pid)
    pulled = tmp_path / "pulled" / "weights" / "epoch_21.pt"
    pulled.parent.mkdir(parents=True)
    pulled.write_bytes(epoch_checkpoint(21, 30))
    plan = plan_resume(str(run), executable="libreyolo", choice=str(pulled))
    assert plan.argv[2] == f"model={pulled}"
    assert plan.argv[-3:] == (f"project={project}", "name=r", "exist_ok=True")
    assert (plan.from_epoch, plan.redo_epochs) == (21, 1)


def test_the_epoch_comes_from_the_file_name_else_the_mtime_orders(tmp_path: Path) -> None:
    run = tmp_path / "r"
    weights = run / "weights"
    weights.mkdir(parents=True)
    (weights / "epoch_4.pt").write_bytes(epoch_checkpoint(None, archive="epoch_4"))
    (weights / "last.pt").write_bytes(epoch_checkpoint(None))
    (weights / "best.pt").write_bytes(epoch_checkpoint(None, archive="best"))
    old = time.time() - 100
    os.utime(weights / "best.pt", (old, old))
    got = [(c.name, c.epoch, c.epoch_from) for c in list_candidates(str(run))]
    assert got == [("epoch_4.pt", 4, "file name"), ("last.pt", None, None), ("best.pt", None, None)]
    for n in range(1, 30):
        (weights / f"epoch_{n}.pt").write_bytes(epoch_checkpoint(n))
    names = [c.name for c in list_candidates(str(run), total=40)]
    assert len(names) == 2 + MAX_EPOCH_FILES and names[0] == "epoch_29.pt"
    assert [c.valid for c in list_candidates(str(run), total=29)][:1] == [True]
    assert list_candidates(str(run), total=29)[-1].problem == (
        "epoch_29.pt holds all 29 epochs: nothing left to train from it"
    )


def test_resume_keeps_the_torn_files_aside_and_records_the_launch(
    project: Path, data_yaml: Path, dead_pid: int, fake_libreyolo: str
) -> None:
    """Started: model= the newest complete checkpoint; the 0-byte last.pt and the cut
    epoch_21.pt are renamed NAME.torn-TIME (never deleted: the same bytes); the launch that
    made the run by its pid is recorded as the run's before status.json takes the resume's."""
    run = torn_run(project, data_yaml, dead_pid)
    torn21 = (run / "weights" / "epoch_21.pt").read_bytes()
    launches = project / ".rgpu" / "launches.jsonl"
    launches.parent.mkdir()
    launch = {
        "kind": "launch", "id": "first", "time": time.time() - 600, "pid": dead_pid,
        "create_time": None, "argv": ["libreyolo", "train", "name=r"], "command": "",
        "cwd": str(project), "project": str(project), "name": "r",
        "console_log": str(project / "c.log"),
    }  # fmt: skip
    launches.write_text(json.dumps(launch) + "\n")
    plan, record = start_resume(str(run), env={**os.environ})
    assert record.argv[2] == f"model={run}/weights/epoch_20.pt"
    kept = sorted(p.name for p in (run / "weights").iterdir() if ".torn-" in p.name)
    assert [k.split(".torn-")[0] for k in kept] == ["epoch_21.pt", "last.pt"]
    assert sorted(os.path.basename(p) for p in plan.set_aside_as) == kept
    assert (run / "weights" / kept[0]).read_bytes() == torn21
    assert not (run / "weights" / "last.pt").exists()
    first = next(r for r in read_launches(str(project)) if r.id == "first")
    assert first.run_dir == str(run)
    wait_until(lambda: (run / "fake_argv.json").exists(), what="the resume to start")
    seen = json.loads((run / "fake_argv.json").read_text())
    assert seen["argv"][2] == f"model={run}/weights/epoch_20.pt"
