"""`rgpu-tui snapshot`, run as a real subprocess (argv list, no shell)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.cli_env import run_rgpu


def test_snapshot_json_on_the_sample_run(sample_run: Path) -> None:
    proc = run_rgpu("snapshot", str(sample_run), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1
    assert data["root"] == str(sample_run)
    [run] = data["runs"]
    assert (run["name"], run["state"], run["run_dir"]) == ("run1", "completed", str(sample_run))
    assert (run["current_epoch"], run["total_epochs"], run["progress"]) == (3, 3, 1.0)
    assert data["selected"]["run_dir"] == str(sample_run)
    assert data["selected"]["log_tail"][-1].endswith("Training complete in 0.00 hours")


def test_snapshot_json_on_a_runs_root(sample_run: Path) -> None:
    proc = run_rgpu("snapshot", str(sample_run.parent), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["name"] for r in data["runs"]] == ["run1"]
    assert data["selected"]["run_dir"] == str(sample_run)  # the newest is selected


def test_snapshot_text_mentions_run_name_and_state(sample_run: Path) -> None:
    proc = run_rgpu("snapshot", str(sample_run))
    assert proc.returncode == 0, proc.stderr
    assert "run1" in proc.stdout
    assert "completed" in proc.stdout
    assert "3/3" in proc.stdout


def test_snapshot_missing_path_fails_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "runs"
    for args in (("snapshot", str(missing), "--json"), ("snapshot", str(missing))):
        proc = run_rgpu(*args)
        assert proc.returncode != 0
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert str(missing) in lines[0]


def test_snapshot_json_with_simulated_gpus_has_gpus_and_system(sample_run: Path) -> None:
    proc = run_rgpu("snapshot", str(sample_run), "--json", "--fake-gpus", "3")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    gpus = data["gpus"]
    assert (gpus["available"], gpus["source"]) == (True, "fake")
    assert [d["index"] for d in gpus["devices"]] == [0, 1, 2]
    device_keys = {
        "index", "name", "uuid", "util_percent", "mem_util_percent", "mem_used_mib",
        "mem_total_mib", "temperature_c", "power_w", "power_limit_w", "sm_clock_mhz",
        "state", "flags", "processes",
    }  # fmt: skip
    for d in gpus["devices"]:
        assert device_keys <= set(d)
        assert d["state"] == "ok" and "idle" in d["flags"]  # the sample run is completed
    assert gpus["idle"] is True
    system = data["system"]
    assert {"cpu_percent", "load_avg", "mem_used_bytes", "mem_total_bytes", "swap_used_bytes",
            "disk", "warnings"} <= set(system)  # fmt: skip
    assert set(system["disk"]) == {"path", "total_bytes", "used_bytes", "free_bytes"}
    assert system["disk"]["total_bytes"] > 0


def test_snapshot_fake_gpus_from_the_environment_and_a_lost_device(sample_run: Path) -> None:
    import os

    env = dict(os.environ, RGPU_FAKE_GPUS="2", RGPU_FAKE_GPU_LOSE="1@0")
    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "snapshot", str(sample_run), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    states = [d["state"] for d in json.loads(proc.stdout)["gpus"]["devices"]]
    assert states == ["ok", "lost"]


def test_snapshot_bad_fake_gpus_environment_is_one_line_error(sample_run: Path) -> None:
    import os

    env = dict(os.environ, RGPU_FAKE_GPUS="many")
    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "snapshot", str(sample_run)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("rgpu-tui: ") and proc.stderr.count("\n") == 1
