"""core.records.push_records.UnpushedWeights: are a run's newest weights confirmed by its push
records (the exporter's rgpu_run_weights_unpushed)? Records are written as core.hub.push
writes them (tests/e2e/test_exporter_prometheus.py does a real push to the local Hub)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.fifos import make_fifo
from support.run_dir import iso

from rgpu_tui.core.records.push_records import UnpushedWeights, push_info, read_pushes

T0 = 1_800_000_000.0  # the push's time; files are dated around it


def weights(run: Path, name: str = "best.pt", size: int = 1000, mtime: float = T0 - 60) -> Path:
    path = run / "weights" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"w" * size)
    os.utime(path, (mtime, mtime))
    return path


def record(run: Path, file: str = "best.pt", outcome: str = "ok", size=1000, at=T0, **extra):
    path = run / ".rgpu" / "pushes.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"time": iso(at), "file": file, "size": size, "outcome": outcome, **extra}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "exp"
    path.mkdir(parents=True)
    return path


def test_no_weights_nothing_to_lose(run: Path) -> None:
    record(run)
    assert UnpushedWeights().unpushed(str(run)) is None


def test_weights_never_pushed(run: Path) -> None:
    weights(run)
    assert UnpushedWeights().unpushed(str(run)) is True


def test_pushed_and_unchanged_is_confirmed(run: Path) -> None:
    weights(run)
    record(run)
    assert UnpushedWeights().unpushed(str(run)) is False


def test_a_skipped_push_confirms_a_failed_one_does_not(run: Path) -> None:
    weights(run)
    record(run, outcome="error", error="Hub down")
    check = UnpushedWeights()
    assert check.unpushed(str(run)) is True
    record(run, outcome="skipped")  # unchanged since an earlier ok push
    assert check.unpushed(str(run)) is False


def test_rewritten_after_its_push_is_unpushed(run: Path) -> None:
    path = weights(run)
    record(run)
    check = UnpushedWeights()
    assert check.unpushed(str(run)) is False
    os.utime(path, (T0 + 0.9, T0 + 0.9))  # within the record's whole second: the same
    assert check.unpushed(str(run)) is False
    os.utime(path, (T0 + 5, T0 + 5))  # a newer best.pt of the same size
    assert check.unpushed(str(run)) is True


def test_another_size_is_unpushed(run: Path) -> None:
    weights(run, size=1001)
    record(run, size=1000)
    assert UnpushedWeights().unpushed(str(run)) is True


def test_best_pt_wins_over_last_pt(run: Path) -> None:
    weights(run, "last.pt")
    record(run, file="last.pt")
    check = UnpushedWeights()
    assert check.unpushed(str(run)) is False  # last.pt alone: it is the newest weights
    weights(run, "best.pt")
    assert check.unpushed(str(run)) is True  # best.pt appeared and was never pushed
    record(run, file="best.pt")
    assert check.unpushed(str(run)) is False


def test_a_push_of_another_file_does_not_count(run: Path) -> None:
    weights(run)
    record(run, file="epoch_3.pt")
    record(run, file="artifacts")
    assert UnpushedWeights().unpushed(str(run)) is True


def test_a_fifo_named_best_pt_is_no_weights(run: Path) -> None:
    (run / "weights").mkdir()
    make_fifo(run / "weights" / "best.pt")
    assert UnpushedWeights().unpushed(str(run)) is None  # and it did not block


def test_weights_outside_the_run_are_unpushed(run: Path, tmp_path: Path) -> None:
    outside = weights(tmp_path / "elsewhere")
    (run / "weights").mkdir()
    os.symlink(outside, run / "weights" / "best.pt")
    record(run)  # a record a run directory could hold: rgpu-tui refuses to push such a file
    assert UnpushedWeights().unpushed(str(run)) is True


def test_torn_and_malformed_records_are_skipped(run: Path) -> None:
    weights(run)
    record(run)
    with open(run / ".rgpu" / "pushes.jsonl", "a") as f:
        f.write('not json\n["a list"]\n{"time": "x", "file": "best.pt", "outc')
    assert UnpushedWeights().unpushed(str(run)) is False


def test_records_are_read_again_only_when_they_change(run: Path, monkeypatch) -> None:
    from rgpu_tui.core.records import push_records

    weights(run)
    reads = []
    real = push_records.read_json_lines
    monkeypatch.setattr(
        push_records, "read_json_lines", lambda *a, **k: reads.append(a) or real(*a, **k)
    )
    check = UnpushedWeights()
    record(run)
    for _ in range(3):
        assert check.unpushed(str(run)) is False
    assert len(reads) == 1
    record(run, outcome="error")
    assert check.unpushed(str(run)) is False  # the newest ok one still confirms it
    assert len(reads) == 2


def test_forget_others_drops_runs_no_longer_found(run: Path, tmp_path: Path) -> None:
    weights(run)
    check = UnpushedWeights()
    check.unpushed(str(run))
    check.forget_others([str(tmp_path / "other")])
    assert check._cache == {}


def test_push_info_best_changed_keeps_its_rule(run: Path) -> None:
    """The header's "best.pt changed since its push" reads the same rule (changed_since)."""
    weights(run)
    record(run)
    records = read_pushes(str(run))
    assert push_info(records, 1000, T0 - 60).best_changed is False
    assert push_info(records, 1000, T0 + 5).best_changed is True
    assert push_info(records, 999, T0 - 60).best_changed is True
    assert push_info(records, None, None).best_changed is None
