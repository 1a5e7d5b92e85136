"""core.render.prometheus: one Snapshot as metric families (the exporter's contract), built by
the real Collector over real run directories (the libreyolo fixture run, a live run whose pid
is a real sleeping process, a dead one whose pid is gone) with simulated GPUs (labelled
fake), at a frozen clock."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from support.run_dir import iso

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.values import parse_time
from rgpu_tui.core.model.snapshot import CostView, GpuDevice, GpuView, RunInfo, Snapshot
from rgpu_tui.core.model.snapshot_json import run_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.prometheus import METRICS, families, run_labels

from ..helpers import SAMPLE_RUN

MIB = 1024 * 1024


@pytest.fixture
def live_dir(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "live"  # where live_process works: the live run


def samples(fams, name: str) -> dict[tuple[str, ...], float]:
    [fam] = [f for f in fams if f.metric.name == name]
    return dict(fam.samples)


def by_label(fams, name: str, label: str = "run") -> dict[str, float]:
    [fam] = [f for f in fams if f.metric.name == name]
    i = fam.metric.labels.index(label)
    return {labels[i]: value for labels, value in fam.samples}


@pytest.fixture
def root(tmp_path: Path, write_status, write_metrics, live_process, dead_pid) -> Path:
    """done (the libreyolo fixture run, completed), live (running: a real live pid), died
    (status.json says running, its pid is gone), broken (status.json unreadable)."""
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE_RUN, runs / "done")
    created = live_process.create_time()
    rows = [{"epoch": e, "train/loss": 1.0 / e, "best_metric": 0.1 * e} for e in (1, 2, 3)]
    write_metrics(runs / "live", rows)
    write_status(
        runs / "live",
        mtime=created + 30,
        state="running",
        pid=live_process.pid,
        started_at=iso(created),
        updated_at=iso(created + 30),
        current_epoch=4,
        completed_epochs=3,
        total_epochs=10,
        mean_epoch_seconds=10.0,
        best_metric=0.3,
        best_metric_name="metrics/mAP50-95",
        model_family="yolo9",
        model_size="s",
        task="detect",
    )
    write_metrics(runs / "died", rows[:2])
    write_status(
        runs / "died",
        state="running",
        pid=dead_pid,
        started_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:02:00+00:00",
        current_epoch=3,
        total_epochs=10,
    )  # no completed_epochs: the metrics history says 2
    (runs / "broken").mkdir()
    (runs / "broken" / "status.json").write_text("{not json")
    return runs


def snapshot(root: Path, now: float, **settings) -> Snapshot:
    collector = Collector(str(root), fake_gpus=2, settings=Settings(**settings), log_keep=1)
    try:
        return collector.refresh(now=now)
    finally:
        collector.close()


def test_runs_state_epochs_eta_best_and_info(root: Path, live_process: psutil.Process) -> None:
    now = live_process.create_time() + 35
    fams = families(snapshot(root, now), {})
    info = samples(fams, "rgpu_run_info")
    assert info == {
        ("done", "completed", "yolo9-t", "detect"): 1.0,
        ("live", "running", "yolo9-s", "detect"): 1.0,
        ("died", "dead", "", ""): 1.0,
        ("broken", "unknown", "", ""): 1.0,
    }
    assert by_label(fams, "rgpu_run_completed_epochs") == {"done": 3, "live": 3, "died": 2}
    assert by_label(fams, "rgpu_run_planned_epochs") == {"done": 3, "live": 10, "died": 10}
    assert by_label(fams, "rgpu_run_progress_ratio") == {"done": 1.0, "live": 0.3, "died": 0.2}
    # only a running run has an ETA: 7 epochs of 10 s, less the 5 s since its update
    assert by_label(fams, "rgpu_run_eta_seconds") == {"live": pytest.approx(65.0)}
    assert by_label(fams, "rgpu_run_epoch_seconds")["live"] == 10.0
    best = samples(fams, "rgpu_run_best_metric")
    assert best[("live", "metrics/mAP50-95")] == 0.3
    assert best[("done", "metrics/mAP50-95")] == pytest.approx(0.00025270239574564746)
    status = json.loads((SAMPLE_RUN / "status.json").read_text())
    assert by_label(fams, "rgpu_run_last_update_timestamp_seconds")["done"] == parse_time(
        status["updated_at"]
    )


def test_dead_is_one_for_the_dead_run_zero_for_the_others_absent_when_unknown(
    root: Path, live_process: psutil.Process
) -> None:
    fams = families(snapshot(root, live_process.create_time() + 35), {})
    assert by_label(fams, "rgpu_run_dead") == {"done": 0, "live": 0, "died": 1}


def test_the_run_json_carries_completed_epochs_and_task(
    root: Path, live_process: psutil.Process
) -> None:
    snap = snapshot(root, live_process.create_time() + 35)
    got = {r.name: run_to_json(r) for r in snap.runs}
    assert (got["live"]["completed_epochs"], got["live"]["task"]) == (3, "detect")
    assert (got["died"]["completed_epochs"], got["died"]["task"]) == (2, None)


def test_gpus_are_labelled_fake_and_name_the_run_that_uses_them(
    root: Path, live_process: psutil.Process
) -> None:
    fams = families(snapshot(root, live_process.create_time() + 35), {})
    assert samples(fams, "rgpu_gpu_source_info") == {("fake",): 1.0}
    util = samples(fams, "rgpu_gpu_utilization_ratio")
    assert set(util) == {("0", "GPU-fake-0000-0000"), ("1", "GPU-fake-0000-0001")}
    assert all(0.8 <= v <= 0.98 for v in util.values())  # a running run: busy boards
    assert samples(fams, "rgpu_gpu_run") == {("0", "live"): 1.0, ("1", "live"): 1.0}
    total = samples(fams, "rgpu_gpu_memory_total_bytes")
    assert total[("0",)] == 24564 * MIB
    assert set(samples(fams, "rgpu_gpu_memory_used_bytes")) == {("0",), ("1",)}
    assert set(samples(fams, "rgpu_gpu_temperature_celsius")) == {("0",), ("1",)}
    assert set(samples(fams, "rgpu_gpu_power_watts")) == {("0",), ("1",)}


def test_money_and_disk(root: Path, live_process: psutil.Process) -> None:
    now = live_process.create_time() + 35
    snap = snapshot(root, now, price_per_hour=3.6, billing_started_at=now - 7200)
    fams = families(snap, {})
    assert samples(fams, "rgpu_machine_price_dollars_per_hour") == {(): 3.6}
    assert samples(fams, "rgpu_machine_spent_dollars") == {(): pytest.approx(7.2)}
    # a run is running: the machine is busy, which is known: 0, not absent
    assert samples(fams, "rgpu_machine_idle_seconds") == {(): 0.0}
    assert samples(fams, "rgpu_machine_idle_dollars") == {(): 0.0}
    free = samples(fams, "rgpu_disk_free_bytes")[()]
    assert free == snap.system.disk.free_bytes > 0
    assert samples(fams, "rgpu_exporter_snapshot_timestamp_seconds") == {(): now}


def test_unknown_values_are_absent_never_zero(tmp_path: Path, dead_pid: int) -> None:
    """No price, no GPU readings (a lost GPU), a run with nothing but its name: the
    families have no sample for any of it."""
    lost = GpuDevice(index=0, name=None, uuid=None, state="lost")
    snap = Snapshot(
        generated_at=1000.0,
        root=str(tmp_path),
        root_exists=True,
        runs=(RunInfo(run_dir=str(tmp_path / "r"), name="r", state="unknown"),),
        selected=None,
        gpus=GpuView(available=True, reason=None, source="nvml", devices=(lost,)),
        cost=CostView(configured=False, idle_now_seconds=120.0),
    )
    fams = families(snap, {str(tmp_path / "r"): None})
    served = {f.metric.name for f in fams if f.samples}
    assert served == {
        "rgpu_run_info",
        "rgpu_gpu_source_info",
        "rgpu_machine_idle_seconds",  # idle is known without a price
        "rgpu_exporter_snapshot_timestamp_seconds",
    }
    assert samples(fams, "rgpu_gpu_source_info") == {("nvml",): 1.0}


def test_weights_unpushed_is_the_callers_verdict_and_absent_without_weights(
    tmp_path: Path,
) -> None:
    runs = tuple(
        RunInfo(run_dir=str(tmp_path / n), name=n, state="completed") for n in ("a", "b", "c")
    )
    snap = Snapshot(1.0, str(tmp_path), True, runs, None)
    verdicts = {str(tmp_path / "a"): True, str(tmp_path / "b"): False}
    fams = families(snap, verdicts)
    assert by_label(fams, "rgpu_run_weights_unpushed") == {"a": 1, "b": 0}


def test_families_follow_the_contract_in_order_with_every_label(
    root: Path, live_process: psutil.Process
) -> None:
    fams = families(snapshot(root, live_process.create_time() + 35, price_per_hour=2.0), {})
    assert [f.metric for f in fams] == list(METRICS)
    for fam in fams:
        for labels, value in fam.samples:
            assert len(labels) == len(fam.metric.labels), fam.metric.name
            assert isinstance(value, float)


def test_run_labels_are_relative_printable_and_unique(tmp_path: Path) -> None:
    names = ["exp/a", "b\x1b]0;pwned\x07", "b^[]0;pwned^G", "c\u202eevil", "b\x1b]0;pwned\x07"]
    runs = tuple(
        RunInfo(run_dir=str(tmp_path / f"d{i}"), name=n, state="running")
        for i, n in enumerate(names)
    )
    labels = run_labels(Snapshot(1.0, str(tmp_path), True, runs, None))
    assert list(labels.values()) == [
        "exp/a",
        "b^[]0;pwned^G",
        "b^[]0;pwned^G #2",  # the same printable text as the run before it
        "c\\u202eevil",
        "b^[]0;pwned^G #3",
    ]


def test_a_gpu_used_by_a_run_missing_from_the_runs_is_named_by_its_path(tmp_path: Path) -> None:
    d = GpuDevice(index=3, name="x", uuid="GPU-1", state="ok", runs=(str(tmp_path / "x" / "y"),))
    snap = Snapshot(
        1.0, str(tmp_path), True, (), None, gpus=GpuView(True, None, "nvml", None, (d,))
    )
    assert samples(families(snap, {}), "rgpu_gpu_run") == {("3", os.path.join("x", "y")): 1.0}


def test_a_non_finite_value_is_absent(tmp_path: Path) -> None:
    run = RunInfo(run_dir=str(tmp_path / "r"), name="r", state="running", eta_seconds=1.0)
    snap = Snapshot(1.0, str(tmp_path), True, (replace(run, eta_seconds=float("inf")),), None)
    assert by_label(families(snap, {}), "rgpu_run_eta_seconds") == {}
