"""What the launch form starts from (core.launch.clone): the exact argv of the launch that
became the selected run, else its train_config.yaml and status.json, else the root's last
launch. Real launches (a stand-in libreyolo, as test_launch_unit's), real records, a real
libreyolo run directory (tests/fixtures/run_completed)."""

# ruff: noqa: F811 (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from support.waiting import wait_until

from rgpu_tui.core.launch.clone import clone_run, last_launch, prefill, values_from_argv
from rgpu_tui.core.launch.launch import launch
from rgpu_tui.core.launch.launch_spec import make_spec
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.launch_records import launch_pseudo_dir, launches_path

from .test_launch_unit import _env, data_yaml, fake_libreyolo, project  # noqa: F401 (fixtures)

FIXTURE_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


def _runs(root: Path):
    return RunsWatcher(str(root)).refresh(time.time()).runs


def test_values_from_argv_splits_fields_and_extra() -> None:
    argv = ["/v/bin/libreyolo", "train", "model=yolo9-t", "data=/d/data.yaml", "epochs=3",
            "batch=4", "imgsz=128", "device=cpu", "project=/r", "name=exp",
            "pretrained=False", "note=a b; c"]  # fmt: skip
    values = values_from_argv(argv)
    assert values == {
        "model": "yolo9-t", "data": "/d/data.yaml", "epochs": "3", "batch": "4",
        "imgsz": "128", "device": "cpu", "project": "/r", "name": "exp",
        "extra": "pretrained=False 'note=a b; c'",
    }  # fmt: skip


def test_a_launched_run_is_cloned_from_its_launch(
    fake_libreyolo,
    data_yaml,
    project,
) -> None:
    spec = make_spec(str(data_yaml), str(project), model="yolo9-t", epochs=7, batch=2,
                     imgsz="96", device="cpu", name="exp", extra=["pretrained=False"])  # fmt: skip
    launch(spec, env=_env(FAKE_SLEEP="0"), executable=fake_libreyolo)
    wait_until(lambda: (project / "exp" / "status.json").exists(), what="the run")
    runs = wait_until(
        lambda: [r for r in _runs(project) if r.name == "exp" and r.state == "completed"] and
        _runs(project), what="the run completed"
    )  # fmt: skip
    run = next(r for r in runs if r.name == "exp")
    got = clone_run(run, runs)
    assert got.source == "clone of exp"
    assert got.values == {
        "model": "yolo9-t", "data": str(data_yaml), "epochs": "7", "batch": "2",
        "imgsz": "96", "device": "cpu", "project": str(project), "name": "exp",
        "extra": "pretrained=False",
    }  # fmt: skip
    # nothing selected: the root's last launch, the same values
    assert last_launch(str(project)).values == got.values
    assert prefill(str(project), None).source == "as the last launch, exp"
    # a resume of it is not a launch to repeat
    resume = json.loads(Path(launches_path(str(project))).read_text().splitlines()[0])
    resume.update(id="r1", time=time.time(), argv=[resume["argv"][0], "train",
                  f"model={project}/exp/weights/last.pt", "resume=True"])  # fmt: skip
    with open(launches_path(str(project)), "a") as f:
        f.write(json.dumps(resume) + "\n")
    assert last_launch(str(project)).values == got.values
    assert clone_run(run, _runs(project)).values == got.values


def test_a_failed_launch_is_cloned_from_its_own_record(
    fake_libreyolo,
    data_yaml,
    project,
) -> None:
    spec = make_spec(str(data_yaml), str(project), model="yolo9-zz", name="bad")
    record = launch(spec, env=_env(FAKE_MODE="bad_model"), executable=fake_libreyolo)
    pseudo = launch_pseudo_dir(str(project), record.id)
    failed = wait_until(
        lambda: next((r for r in _runs(project) if r.run_dir == pseudo and r.state == "failed"),
                     None), what="the failed launch"
    )  # fmt: skip
    got = clone_run(failed, ())
    assert got.values["model"] == "yolo9-zz" and got.values["name"] == "bad"


def test_a_run_started_by_hand_is_cloned_from_its_train_config(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(FIXTURE_RUN, root / "cli", ignore=shutil.ignore_patterns("val", "weights"))
    [run] = _runs(root)
    got = clone_run(run, (run,))
    assert got.values == {
        "data": "/root/data/other.yaml", "epochs": "3", "batch": "4", "imgsz": "128",
        "device": "cpu", "name": "cli", "model": "yolo9-t", "project": str(root),
    }  # fmt: skip
    assert last_launch(str(root)) is None  # no launch recorded here


def test_a_hostile_train_config_gives_nothing_but_what_status_says(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run_dir = root / "odd"
    shutil.copytree(FIXTURE_RUN, run_dir, ignore=shutil.ignore_patterns("val", "weights"))
    (run_dir / "train_config.yaml").unlink()
    (run_dir / "train_config.yaml").symlink_to("/etc/passwd")  # outside the run: not read
    [run] = _runs(root)
    assert clone_run(run).values == {"model": "yolo9-t", "project": str(root), "name": "odd"}
    (run_dir / "train_config.yaml").unlink()
    (run_dir / "train_config.yaml").write_text("epochs: [1, 2]\ndata: " + "x" * 5000 + "\n")
    assert clone_run(run).values == {"model": "yolo9-t", "project": str(root), "name": "odd"}
