"""The demo's own dataset passes `libreyolo doctor` without a warning:
before, 16 images with 1 to 3 random boxes gave red 6 and green 8 training instances, and
the doctor warned "fewer than 10 training instances" on every demo. The classes now take
turns; a dataset an older rgpu-tui made is made again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rgpu_tui.core.launch.demo import DEMO_IMGSZ, demo_dataset
from rgpu_tui.core.launch.synthetic_dataset import (
    BALANCED_MARK,
    CLASS_NAMES,
    DARK_BG,
    make_dataset,
)

DOCTOR_MIN_INSTANCES = 10  # libreyolo doctor's balance.class_few_instances threshold


def _counts(data_yaml: Path, split: str) -> Counter:
    labels = data_yaml.parent / "labels" / split
    return Counter(
        int(line.split()[0]) for f in labels.iterdir() for line in f.read_text().splitlines()
    )


def test_every_class_has_enough_training_boxes(tmp_path: Path) -> None:
    data = Path(demo_dataset(str(tmp_path)))
    assert data.read_text().startswith(BALANCED_MARK)
    train = _counts(data, "train")
    assert set(train) == set(range(len(CLASS_NAMES)))
    assert min(train.values()) >= DOCTOR_MIN_INSTANCES, train
    assert max(train.values()) - min(train.values()) <= 1  # turns: as even as can be


def test_a_dataset_from_an_older_rgpu_tui_is_made_again(tmp_path: Path) -> None:
    old = make_dataset(tmp_path / "dataset", n_train=16, n_val=8, imgsz=DEMO_IMGSZ, seed=0,
                       background=DARK_BG)  # fmt: skip
    assert min(_counts(old, "train").values()) < DOCTOR_MIN_INSTANCES  # what warned
    data = Path(demo_dataset(str(tmp_path)))
    assert data == old and data.read_text().startswith(BALANCED_MARK)
    assert min(_counts(data, "train").values()) >= DOCTOR_MIN_INSTANCES
    before = {p: p.stat().st_mtime_ns for p in data.parent.rglob("*") if p.is_file()}
    demo_dataset(str(tmp_path))  # made once: a current one is left as it is
    assert before == {p: p.stat().st_mtime_ns for p in data.parent.rglob("*") if p.is_file()}


def test_the_tests_dataset_is_unchanged(tmp_path: Path) -> None:
    """balanced is the demo's: the tests' dataset keeps its bytes (1 to 3 random boxes)."""
    data = make_dataset(tmp_path / "t", n_train=4, n_val=2, imgsz=64, seed=0)
    assert not data.read_text().startswith("#")
    first = (data.parent / "labels" / "train" / "train_0000.txt").read_text().splitlines()
    assert 1 <= len(first) <= 3


def test_the_real_libreyolo_doctor_finds_nothing_to_warn_about(tmp_path: Path) -> None:
    pytest.importorskip("libreyolo")
    from rgpu_tui.core.launch.doctor import run_doctor

    report = run_doctor(demo_dataset(str(tmp_path)), DEMO_IMGSZ)
    assert report.ok and report.errors == () and report.warnings == (), report
