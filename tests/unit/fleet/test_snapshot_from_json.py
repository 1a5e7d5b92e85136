"""The Snapshot back from its JSON (core.model.snapshot_from_json, through
core.fleet.host_ranges.host_snapshot), as the fleet's host view gets it from a remote
agent. Real snapshots (the Collector on real run folders, simulated GPUs, a price, a
balance, checkpoints, pushes records) go to JSON and back, and compare equal field by
field once the fields JSON does not keep are set as the module says. A hostile document
never raises anything but SnapshotJsonError."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from tui.conftest import build_runs_root

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.formatting import iso
from rgpu_tui.core.base.values import parse_time
from rgpu_tui.core.fleet.host_ranges import host_snapshot
from rgpu_tui.core.model import snapshot as snapshot_module
from rgpu_tui.core.model.snapshot import Snapshot
from rgpu_tui.core.model.snapshot_from_json import SnapshotJsonError
from rgpu_tui.core.model.snapshot_json import LOG_TAIL_LEN, snapshot_to_json
from rgpu_tui.core.picture.collect import Collector

FIXTURE_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


def whole_seconds(ts: float | None) -> float | None:
    return parse_time(iso(ts)) if ts is not None else None


def as_json_keeps(s: Snapshot) -> Snapshot:
    """`s` with what the JSON drops set as snapshot_from_json's doc says."""
    runs = tuple(
        dataclasses.replace(
            r,
            activity=0.0,
            started_at=None,
            updated=parse_time(r.updated_at),
            attempts=tuple(
                dataclasses.replace(
                    a, started_at=whole_seconds(a.started_at), ended_at=whole_seconds(a.ended_at)
                )
                for a in r.attempts
            ),
        )
        for r in s.runs
    )
    cost = s.cost
    if cost is not None:
        cost = dataclasses.replace(
            cost,
            billing_started_at=whole_seconds(cost.billing_started_at),
            balance_runs_out_at=whole_seconds(cost.balance_runs_out_at),
        )
    sel = s.selected
    if sel is not None:
        pushes = sel.pushes
        if pushes is not None:
            pushes = dataclasses.replace(pushes, last_ok_at=whole_seconds(pushes.last_ok_at))
        checkpoints = tuple(
            dataclasses.replace(
                c,
                target=dataclasses.replace(
                    c.target,
                    path_problem=None if c.target.repo_problem else c.target.path_problem,
                ),
            )
            for c in sel.checkpoints
        )
        sel = dataclasses.replace(
            sel,
            log=dataclasses.replace(sel.log, lines=sel.log.lines[-LOG_TAIL_LEN:]),
            pushes=pushes,
            checkpoints=checkpoints,
            checkpoints_not_listed=0,
            artifacts_target=None,
        )
    return dataclasses.replace(
        s,
        generated_at=whole_seconds(s.generated_at),
        runs=runs,
        cost=cost,
        selected=sel,
    )


def assert_same(got: Snapshot, want: Snapshot) -> None:
    """Field by field first (a readable failure), then the whole."""
    for f in dataclasses.fields(Snapshot):
        assert getattr(got, f.name) == getattr(want, f.name), f.name
    assert got == want


def round_trip(snap: Snapshot) -> Snapshot:
    # through the text, as the agent's line crosses the link
    return host_snapshot(json.loads(json.dumps(snapshot_to_json(snap))))


def _with_weights(run: Path) -> None:
    weights = run / "weights"
    weights.mkdir(exist_ok=True)
    (weights / "best.pt").write_bytes(b"best")
    (weights / "last.pt").write_bytes(b"last")
    (weights / "epoch_3.pt").write_bytes(b"epoch")
    records = run / ".rgpu"
    records.mkdir(exist_ok=True)
    (records / "pushes.jsonl").write_text(
        json.dumps(
            {
                "at": "2026-12-02T10:00:00.750000+00:00",
                "outcome": "ok",
                "file": "best.pt",
                "epoch": 3,
                "repo": "alice/exp",
                "commit_url": "https://hf.co/alice/exp/commit/abc",
                "sha256": "0" * 64,
            }
        )
        + "\n"
    )


SETTINGS = [
    pytest.param(Settings(), id="no-price"),
    pytest.param(
        Settings(
            price_per_hour=2.5,
            balance=40.0,
            balance_at=1_700_000_000.25,
            billing_started_at=1_699_990_000.5,
            disk_gb=200.0,
            storage_price_gb_month=0.1,
            hub_repo="alice/exp",
        ),
        id="price-balance-repo",
    ),
    pytest.param(Settings(price_per_hour=1, hub_repo="not a repo"), id="bad-repo"),
]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("gpus", [0, 2, 8])
def test_every_run_of_a_real_root_comes_back_equal(
    tmp_path: Path, settings: Settings, gpus: int
) -> None:
    root = build_runs_root(tmp_path).root
    shutil.copytree(FIXTURE_RUN, root / "fixture_done")
    _with_weights(root / "live_exp")
    collector = Collector(
        str(root), fake_gpus=gpus or None, log_keep=500, settings=settings, interval=1.0
    )
    try:
        seen = 0
        for selected in [None, *sorted(str(p) for p in root.iterdir())]:
            for _ in range(2):  # the second refresh has idle time and GPU history
                snap = collector.refresh(time.time(), selected=selected)
            assert snap.runs and (selected is None or snap.selected.run_dir == selected)
            assert_same(round_trip(snap), as_json_keeps(snap))
            seen += 1
        assert seen == 5
    finally:
        collector.close()


def test_what_json_drops_is_what_the_doc_says(tmp_path: Path) -> None:
    """The round trip is not the identity: times in whole seconds, the log's last 50
    lines, the artifacts target; the rest is equal (the test above)."""
    root = build_runs_root(tmp_path).root
    live = root / "live_exp"
    with (live / "train.log").open("a") as f:
        f.writelines(f"line {i}\n" for i in range(200))
    collector = Collector(str(root), fake_gpus=1, log_keep=500, settings=Settings(price_per_hour=2))
    try:
        snap = collector.refresh(now=1_800_000_000.75, selected=str(live))
    finally:
        collector.close()
    back = round_trip(snap)
    assert snap.generated_at == 1_800_000_000.75 and back.generated_at == 1_800_000_000.0
    assert len(snap.selected.log.lines) > LOG_TAIL_LEN
    assert back.selected.log.lines == snap.selected.log.lines[-LOG_TAIL_LEN:]
    assert back.selected.log.path == str(live / "train.log") == snap.selected.log.path
    assert snap.selected.artifacts_target is not None and back.selected.artifacts_target is None
    assert [r.activity for r in back.runs] == [0.0] * len(snap.runs)
    assert [r.run_dir for r in back.runs] == [r.run_dir for r in snap.runs]  # the order kept


def test_a_log_without_log_path_from_an_older_agent_is_the_run_dir() -> None:
    doc = {
        "generated_at": "2026-12-02T10:00:00+00:00",
        "root": "/r",
        "runs": [],
        "selected": {"run_dir": "/r/a", "log_tail": ["x", 7, "y"], "metrics": {}},
    }
    sel = host_snapshot(doc).selected
    assert sel.log.path == "/r/a" and sel.log.lines == ("x", "y")
    assert sel.metrics.series == () and sel.push_default == "best.pt"


@pytest.mark.parametrize(
    "doc, why",
    [
        ([], "a snapshot must be a JSON object"),
        ({"root": "/r", "runs": []}, "the snapshot has no usable generated_at"),
        ({"generated_at": "yesterday", "root": "/r", "runs": []}, "no usable generated_at"),
        ({"generated_at": "2026-12-02T10:00:00+00:00", "runs": []}, "the snapshot has no root"),
        ({"generated_at": "2026-12-02T10:00:00+00:00", "root": "/r"}, "no list of runs"),
    ],
)
def test_what_is_not_a_snapshot_is_one_line(doc, why: str) -> None:
    with pytest.raises(SnapshotJsonError, match=why):
        host_snapshot(doc)


def test_hostile_values_become_unknown_never_an_exception(tmp_path: Path) -> None:
    """Every value of a real document replaced in turn by values of the wrong type or out
    of range: snapshot_from_json returns a Snapshot or raises SnapshotJsonError."""
    root = build_runs_root(tmp_path).root
    _with_weights(root / "live_exp")
    collector = Collector(
        str(root), fake_gpus=2, settings=Settings(price_per_hour=2, hub_repo="alice/exp")
    )
    try:
        collector.refresh(time.time(), selected=str(root / "live_exp"))
        doc = snapshot_to_json(collector.refresh(time.time(), selected=str(root / "live_exp")))
    finally:
        collector.close()
    bad_values = [None, True, "x", 10**400, -(2**70), 1e308, [], {}, [1, "x", None], {"a": 1}]

    def paths(value, at=()):
        yield at
        if isinstance(value, dict):
            for k, v in value.items():
                yield from paths(v, (*at, k))
        elif isinstance(value, list):
            for i, v in enumerate(value[:3]):
                yield from paths(v, (*at, i))

    tried = 0
    for path in list(paths(doc)):
        if not path:
            continue
        for bad in bad_values:
            copy = json.loads(json.dumps(doc))
            node = copy
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = bad
            try:
                snap = host_snapshot(copy)
            except SnapshotJsonError:
                continue
            tried += 1
            assert isinstance(snap, Snapshot)
            # what comes back is what the panes format without raising
            for r in snap.runs:
                assert isinstance(r.run_dir, str) and isinstance(r.state, str)
                assert r.progress is None or isinstance(r.progress, (int, float))
    assert tried > 1000


def test_huge_ints_and_infinities_are_unknown() -> None:
    doc = {
        "generated_at": "2026-12-02T10:00:00+00:00",
        "root": "/r",
        "runs": [
            {"run_dir": "/r/a", "name": "a", "state": "running", "status_state": None,
             "pid": 10**30, "pid_alive": None, "current_epoch": 3, "total_epochs": 10,
             "progress": 10**400, "eta_seconds": 1e308 * 10, "elapsed_seconds": "5",
             "mean_epoch_seconds": None, "best_metric": None, "best_metric_name": None,
             "best_epoch": None, "updated_at": "0001-01-01T00:00:00", "error": None}
        ],
    }  # fmt: skip
    run = host_snapshot(doc).runs[0]
    assert (run.pid, run.progress, run.eta_seconds, run.elapsed_seconds) == (None,) * 4
    assert run.current_epoch == 3 and run.updated is None
    assert os.path.basename(run.run_dir) == "a"


def test_the_autostop_plan_comes_back(tmp_path: Path) -> None:
    """Any part a Snapshot has is read back by its annotation: the watcher's autostop
    plan, its fires_at in whole seconds."""
    root = build_runs_root(tmp_path).root
    collector = Collector(str(root), fake_gpus=1)
    try:
        snap = collector.refresh(time.time())
    finally:
        collector.close()
    plan = snapshot_module.AutostopPlan("counting", "all weights on the Hub", 1_800_000_000.5)
    snap = dataclasses.replace(snap, autostop=plan)
    back = round_trip(snap)
    assert back.autostop == dataclasses.replace(plan, fires_at=1_800_000_000.0)
    assert_same(back, dataclasses.replace(as_json_keeps(snap), autostop=back.autostop))
