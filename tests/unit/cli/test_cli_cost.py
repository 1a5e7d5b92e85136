"""`rgpu-tui cost`, and the settings of every command, run as real subprocesses.

HOME and XDG_CONFIG_HOME point into tmp_path and RGPU_* variables are dropped,
so the developer's own config and environment are never read.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli_env import run_rgpu
from support.readme_example import COST_JSON_KEYS, PRICE_FLAGS


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def rgpu(home: Path, *args: str, env: dict | None = None, cwd: Path | None = None):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RGPU_")}
    environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    environ.update(env or {})
    return run_rgpu(*args, env=environ, cwd=cwd or home)


def config(home: Path, text: str) -> Path:
    path = home / ".config" / "rgpu-tui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def line(stdout: str, label: str) -> str:
    [found] = [row for row in stdout.splitlines() if row.startswith(label + " ")]
    return found


def test_the_seed_example(home: Path) -> None:
    proc = rgpu(home, "cost", *PRICE_FLAGS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert line(proc.stdout, "running") == "running       $3.48/h  (--price-per-hour)"
    assert line(proc.stdout, "stopped") == (
        "stopped       $0.0694/h  (250 GB x $0.20/GB-month / 720 h)"
    )
    assert line(proc.stdout, "saving") == "saving        98.0% while stopped"
    assert line(proc.stdout, "break-even") == (
        "break-even    14.4 h  (rebuild $1.00: back within 14.4 h, stop; longer, destroy)"
    )
    assert line(proc.stdout, "spent so far").startswith("spent so far  $")


def test_no_price_is_one_line_saying_how_to_set_it(home: Path) -> None:
    proc = rgpu(home, "cost")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1
    for how in ("--price-per-hour", "RGPU_PRICE_PER_HOUR", "price_per_hour ="):
        assert how in proc.stdout


def test_json_keys_with_a_run(home: Path, sample_run: Path) -> None:
    proc = rgpu(home, "cost", str(sample_run.parent), "--json", *PRICE_FLAGS)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    keys = COST_JSON_KEYS
    assert set(keys) <= set(data)
    assert data["configured"] is True and data["price_per_hour"] == 3.4828
    assert data["run_spent"] > 0 and data["to_finish"] == 0.0  # the sample run completed
    assert data["projected_total"] == data["run_spent"]
    assert round(data["break_even_hours"], 1) == 14.4
    assert data["idle_seconds"] is None  # one look sees no idle time
    assert data["warnings"] == []


def test_text_names_the_run(home: Path, sample_run: Path) -> None:
    proc = rgpu(home, "cost", str(sample_run), *PRICE_FLAGS)
    assert proc.returncode == 0, proc.stderr
    assert line(proc.stdout, "run").startswith("run run1")
    assert "in all" in line(proc.stdout, "run")


def test_disk_defaults_to_the_filesystem_of_the_path(home: Path) -> None:
    proc = rgpu(home, "cost", "--json", "--price-per-hour", "1", "--storage-price-gb-month", "1")
    assert proc.returncode == 0, proc.stderr
    total_gb = os.statvfs(home).f_frsize * os.statvfs(home).f_blocks / 1e9
    assert json.loads(proc.stdout)["stopped_per_hour"] == pytest.approx(total_gb / 720)


def test_file_environment_and_flag(home: Path) -> None:
    config(home, "price_per_hour = 1.5\nbalance = 30\n")
    data = json.loads(rgpu(home, "cost", "--json").stdout)
    assert data["price_per_hour"] == 1.5 and data["balance_left"] <= 30
    env = {"RGPU_PRICE_PER_HOUR": "2.5"}
    assert json.loads(rgpu(home, "cost", "--json", env=env).stdout)["price_per_hour"] == 2.5
    proc = rgpu(home, "cost", "--json", "--price-per-hour", "3.5", env=env)
    assert json.loads(proc.stdout)["price_per_hour"] == 3.5


def test_named_config_file(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "prices.toml"
    other.write_text("price_per_hour = 4.25\n")
    proc = rgpu(home, "cost", "--json", "--config", str(other))
    assert json.loads(proc.stdout)["price_per_hour"] == 4.25


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.startswith("rgpu-tui: ") and proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr.strip()


def test_malformed_config_is_exit_2_with_the_line(home: Path) -> None:
    path = config(home, "price_per_hour = 3\nrebuild_cost = oops\n")
    message = one_line_error(rgpu(home, "cost"))
    assert message.startswith(f"rgpu-tui: {path} line 2: ")


@pytest.mark.parametrize("command", ["cost", "snapshot", "app"])
def test_bad_settings_stop_every_command(home: Path, sample_run: Path, command: str) -> None:
    args = [] if command == "app" else [command]
    proc = rgpu(home, *args, str(sample_run), env={"RGPU_DISK_GB": "big"})
    assert one_line_error(proc) == "rgpu-tui: RGPU_DISK_GB: disk_gb must be a number, got 'big'"
    proc = rgpu(home, *args, str(sample_run), "--balance", "lots")
    assert one_line_error(proc).startswith("rgpu-tui: --balance: balance must be a number")
    config(home, "prise_per_hour = 3\n")
    assert "unknown key 'prise_per_hour'" in one_line_error(rgpu(home, *args, str(sample_run)))


def test_snapshot_json_carries_the_cost(home: Path, sample_run: Path) -> None:
    proc = rgpu(home, "snapshot", str(sample_run), "--json", *PRICE_FLAGS)
    assert proc.returncode == 0, proc.stderr
    cost = json.loads(proc.stdout)["cost"]
    assert cost["configured"] is True and cost["run_spent"] > 0
    assert round(cost["break_even_hours"], 1) == 14.4


# -- the GPU source flags, what the numbers are ---------------------------------------------


def test_cost_takes_the_gpu_source_flags_of_the_other_commands(home: Path, tmp_path: Path):
    """`cost --fake-gpus N` as the app, snapshot and watch take it: the price per GPU,
    and the GPUs said to be simulated; a recording likewise; both at once is one line."""
    proc = rgpu(home, "cost", "--fake-gpus", "2", "--price-per-hour", "2.10")
    assert proc.returncode == 0, proc.stderr
    assert line(proc.stdout, "GPUs") == (
        "GPUs          2 simulated (--fake-gpus: not this machine's): $1.05/h per GPU"
    )
    recording = tmp_path / "gpus.jsonl"
    device = {"index": 0, "name": "NVIDIA H100", "util_percent": 90, "mem_used_mib": 1000,
              "mem_total_mib": 81920}  # fmt: skip
    sample = {"t": 0, "driver_version": "550.1", "devices": [device, {**device, "index": 1}]}
    recording.write_text(json.dumps(sample) + "\n")
    proc = rgpu(home, "cost", "--gpu-replay", str(recording), "--price-per-hour", "3")
    assert proc.returncode == 0, proc.stderr
    assert line(proc.stdout, "GPUs") == (
        "GPUs          2 x NVIDIA H100 (a GPU recording, --gpu-replay): $1.50/h per GPU"
    )
    both = rgpu(home, "cost", "--fake-gpus", "1", "--gpu-replay", str(recording))
    assert one_line_error(both).startswith("rgpu-tui: choose one GPU source")
    bad = rgpu(home, "cost", "--fake-gpus", "lots")
    assert one_line_error(bad).startswith("rgpu-tui: --fake-gpus must be a whole number")


def test_a_cheap_epoch_is_not_zero_dollars(home: Path, sample_run: Path) -> None:
    """The sample run's epochs last seconds: at $2.10/h an epoch costs a tenth of a cent,
    which "$0.00/epoch" hid."""
    proc = rgpu(home, "cost", str(sample_run), "--price-per-hour", "2.10")
    assert proc.returncode == 0, proc.stderr
    per_epoch = json.loads(rgpu(home, "cost", str(sample_run), "--json",
                                "--price-per-hour", "2.10").stdout)["per_epoch"]  # fmt: skip
    assert 0 < per_epoch < 0.005
    from rgpu_tui.core.base.formatting import fmt_price

    shown = fmt_price(per_epoch, "epoch")
    assert shown != "$0.00/epoch" and shown in line(proc.stdout, "run"), proc.stdout
    assert "$0.00/epoch" not in proc.stdout


def test_no_price_names_the_config_file_of_xdg_config_home(home: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "elsewhere"
    proc = rgpu(home, "cost", env={"XDG_CONFIG_HOME": str(xdg)})
    assert proc.returncode == 0, proc.stderr
    assert f"in {xdg}/rgpu-tui/config.toml." in proc.stdout
    assert "~/.config" not in proc.stdout
