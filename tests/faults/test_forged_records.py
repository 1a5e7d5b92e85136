"""Forged launch records (`.rgpu/launches.jsonl`) beside a real run (the fixture's, a
completed CPU run of 6.4 s): a time of -1e300, "-inf", "nan", a 400-digit number, a date
in 2001 with an exit at the run's start, a date in the future. Through `snapshot --json`
and `cost --json` as subprocesses and the app under Pilot: nothing crashes, the run's time
and money stay its own, and each record left out is said once. Before, -1e300 and "-inf"
made `snapshot --json` exit 1 (OverflowError) and `cost` print a 300-digit amount, "nan"
was taken, and the 2001 record gave 25 years ($454,398 at $2/h)."""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime
from pathlib import Path

import pytest
from support.cli_env import clean_env, run_rgpu
from tui.helpers import rendered, wait_for

from rgpu_tui.tui.app import RgpuApp

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
ELAPSED = 6.367  # the run's own elapsed_seconds
NO_TIME = "with a time that is no time"
OUTSIDE = "launch record ignored: dated more than 30 days before the run's start"


def run_with_records(tmp_path: Path, *records: tuple) -> Path:
    """The fixture's run under tmp/runs, and one launch record (with an exit line) for each
    (time, exit time); the run's start is `start` in either."""
    root = tmp_path / "runs"
    shutil.copytree(FIXTURE, root / "exp", ignore=shutil.ignore_patterns("weights", "val"))
    status = json.loads((root / "exp" / "status.json").read_text())
    start = datetime.fromisoformat(status["started_at"]).timestamp()
    lines = []
    for i, (at, exited) in enumerate(records):
        at, exited = (start if t == "start" else t for t in (at, exited))
        lines.append(
            {"kind": "launch", "id": f"f{i}", "time": at, "pid": 4_000_000 + i,
             "project": str(root), "name": "exp", "console_log": str(root / "nope.log"),
             "run_dir": str(root / "exp"), "argv": ["libreyolo", "train", "name=exp"]}
        )  # fmt: skip
        lines.append({"kind": "exit", "id": f"f{i}", "returncode": 0, "time": exited})
    (root / ".rgpu").mkdir()
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (root / ".rgpu" / "launches.jsonl").write_text(text)
    return root


FORGED = {
    "-1e300": ((-1e300, "start"), NO_TIME),
    "-inf as text": (("-inf", "start"), NO_TIME),
    "nan as text": (("nan", "start"), NO_TIME),
    "400 digits": ((-(10**400), "start"), NO_TIME),
    "2001, exit at the start": ((978_307_200.0, "start"), OUTSIDE),
    "in ten days": ((time.time() + 10 * 86_400, time.time() + 20 * 86_400), OUTSIDE),
    "exit in 2150": (("start", 5_680_281_600.0), OUTSIDE),
}


@pytest.mark.parametrize("case", list(FORGED))
def test_snapshot_and_cost_keep_the_runs_own_time(tmp_path: Path, case: str) -> None:
    record, said = FORGED[case]
    root = run_with_records(tmp_path, record)
    proc = run_rgpu("snapshot", str(root), "--json", env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    [run] = doc["runs"]
    assert run["elapsed_seconds"] == pytest.approx(ELAPSED, abs=0.01)
    notices = f"{doc['problem']} | {run['problem']}"
    assert notices.count("ignored") == 1 and said in notices, notices
    assert "Error" not in notices
    proc = run_rgpu("cost", str(root), "--json", "--price-per-hour", "2", env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    cost = json.loads(proc.stdout)
    assert cost["run_spent"] == pytest.approx(ELAPSED / 3600 * 2, rel=0.01)
    text = run_rgpu("cost", str(root), "--price-per-hour", "2", env=clean_env(tmp_path)).stdout
    assert "run exp       $0.00 so far" in text


def test_a_record_just_before_the_start_is_the_runs_launch(tmp_path: Path) -> None:
    root = run_with_records(tmp_path, ("start", "start"))
    doc = json.loads(run_rgpu("snapshot", str(root), "--json", env=clean_env(tmp_path)).stdout)
    [run] = doc["runs"]
    assert doc["problem"] is None and "ignored" not in (run["problem"] or "")
    assert run["attempts"][0]["known_by"].startswith("launch record")


async def test_the_app_says_them_and_keeps_the_runs_time(tmp_path: Path) -> None:
    root = run_with_records(tmp_path, (978_307_200.0, "start"), ("-inf", "start"))
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.runs)
        [run] = app.snapshot.runs
        assert run.elapsed_seconds == pytest.approx(ELAPSED, abs=0.01)
        await pilot.pause()
        header = rendered(app.view.run_header)
        assert OUTSIDE in " ".join(header.split()), header  # the run's line before the root's
        assert app.snapshot.problem.endswith(f"1 {NO_TIME} (out of range or not a number)")
        assert "Overflow" not in header and "y" not in header.split("elapsed")[1].split()[0]


def test_an_autostop_plan_with_a_400_digit_start_is_no_plan() -> None:
    """The plan file names its watcher's pid and start: a start no float can hold is no
    watcher (it raised OverflowError in the subtraction)."""
    from rgpu_tui.core.records.autostop_files import process_alive

    assert process_alive(1, 10**400) is False
    assert process_alive(1, float("nan")) is False
