"""`rgpu-tui chart` and `rgpu-tui compare`, run as real subprocesses on run folders in
libreyolo's formats (the fixture is a real CPU run's files)."""

from __future__ import annotations

import json
import math
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_env import run_rgpu

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


def environ(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RGPU_", "NO_COLOR"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), COLUMNS="100")
    env["TERM"] = "xterm-256color"
    return env


def rgpu(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return run_rgpu(*args, env=environ(tmp_path), cwd=tmp_path)


def copy_fixture(dst: Path) -> Path:
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("weights", "val"))
    return dst


def test_chart_json_is_the_rows_with_gaps_where_placeholders_and_nan_stood(tmp_path):
    run = copy_fixture(tmp_path / "run")
    lines = (run / "metrics.jsonl").read_text().splitlines()
    # the real run's rows, with a COCO -1 placeholder, a NaN loss (as Python's json writes
    # it) and a null one (as libreyolo writes it) put in
    rows = [json.loads(line) for line in lines]
    rows[0]["metrics/mAP_large"] = -1.0
    rows[1]["train/box_loss"] = float("nan")
    rows[2]["train/cls_loss"] = None
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    names = ["train/box_loss", "train/cls_loss", "metrics/mAP_large", "metrics/mAP50-95"]
    args = [f"--metric={n}" for n in names]
    proc = rgpu(tmp_path, "chart", str(run), *args, "--smooth", "0.6", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    [got] = doc["runs"]
    assert doc["metrics"] == names
    assert got["epochs"] == [r["epoch"] for r in rows]
    for name in names:
        want = []
        for r in rows:
            v = r.get(name)
            ok = isinstance(v, float) and math.isfinite(v) and v != -1.0
            want.append(v if ok else None)
        assert got["metrics"][name]["raw"] == want, name
        smoothed = got["metrics"][name]["smoothed"]
        assert [s is None for s in smoothed] == [w is None for w in want]
    assert got["metrics"]["metrics/mAP_large"]["raw"][0] is None
    assert got["diverged"] == [2, 3]  # the NaN and the null loss
    assert got["time_seconds"] == pytest.approx(
        [sum(r["time"] for r in rows[: i + 1]) for i in range(len(rows))]
    )
    assert got["cost"] is None and doc["x"] == "epoch"
    priced = json.loads(
        rgpu(tmp_path, "chart", str(run), "--json", "--price-per-hour", "3.6").stdout
    )
    assert priced["runs"][0]["cost"][0] == pytest.approx(rows[0]["time"] / 1000)


def test_chart_text_has_no_escape_sequences_when_piped(tmp_path):
    run = copy_fixture(tmp_path / "run\x1b]0;evil\x07")
    with (run / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"epoch": 4, "metrics/\x1b[2Jx": 1.0, "train/box_loss": 5.0}) + "\n")
    proc = rgpu(
        tmp_path,
        "chart",
        str(run),
        "--metric",
        "metrics/\x1b[2Jx",
        "--width",
        "70",
        "--height",
        "14",
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "^[[2Jx" in proc.stdout
    lines = proc.stdout.splitlines()
    assert len(lines) == 14 and all(len(line) <= 70 for line in lines)
    assert any("┤" in line for line in lines) and any("└" in line for line in lines)


def test_chart_on_a_terminal_is_coloured(tmp_path):
    run = copy_fixture(tmp_path / "run")
    master, slave = pty.openpty()
    argv = [sys.executable, "-m", "rgpu_tui", "chart", str(run), "--width", "60", "--height", "12"]
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, env=environ(tmp_path))
    os.close(slave)
    out = b""
    try:
        while True:  # drained as it comes: a full pty would block the child
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(60) == 0, proc.stderr.read()
    finally:
        proc.stderr.close()
        os.close(master)
    assert b"\x1b[" in out and "┤".encode() in out


def test_compare_json_names_the_keys_that_differ(tmp_path):
    """One real run's train_config.yaml copied and edited: epochs and warmup_epochs."""
    a = copy_fixture(tmp_path / "a")
    b = copy_fixture(tmp_path / "b")
    config = (b / "train_config.yaml").read_text()
    config = config.replace("epochs: 3\n", "epochs: 5\n", 1).replace(
        "warmup_epochs: 3\n", "warmup_epochs: 1\n"
    )
    (b / "train_config.yaml").write_text(config)
    proc = rgpu(tmp_path, "compare", str(a), str(b), "--json", "--price-per-hour", "2.0")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["differs"] == ["epochs", "warmup_epochs"]
    assert [r["name"] for r in doc["runs"]] == ["a", "b"]
    assert doc["runs"][1]["config"]["warmup_epochs"] == "1"
    assert doc["runs"][0]["best_epoch"] == 3 and doc["runs"][0]["cost"] > 0
    text = rgpu(tmp_path, "compare", str(a), str(b), "--width", "80").stdout
    assert "warmup_epochs" in text and "\x1b" not in text


def test_bad_arguments_are_one_line_errors(tmp_path):
    proc = rgpu(tmp_path, "chart", str(tmp_path / "nope"))
    assert (
        proc.returncode == 2
        and proc.stderr.count("\n") == 1
        and "not a run directory" in proc.stderr
    )
    many = [str(copy_fixture(tmp_path / f"r{i}")) for i in range(7)]
    proc = rgpu(tmp_path, "compare", *many)
    assert proc.returncode == 2 and "at most 6 runs" in proc.stderr
    proc = rgpu(tmp_path, "chart", many[0], "--smooth", "1.5")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_fifos_in_place_of_the_run_files_never_block(tmp_path):
    """metrics.jsonl and train_config.yaml as FIFOs with no writer: read without waiting
    (core.base.safeio), said, and the command ends."""
    run = copy_fixture(tmp_path / "run")
    for name in ("metrics.jsonl", "train_config.yaml"):
        (run / name).unlink()
        os.mkfifo(run / name)
    proc = rgpu(tmp_path, "compare", str(run), "--json")  # timeout=60 in rgpu: no hang
    assert proc.returncode == 0, proc.stderr
    [got] = json.loads(proc.stdout)["runs"]
    assert "not a regular file" in got["config_problem"]
    proc = rgpu(tmp_path, "chart", str(run), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["runs"][0]["epochs"] == []


def test_a_metric_by_the_name_the_views_show_draws_that_metric_only(tmp_path):
    """`--metric mAP50-95` (as the header, the metrics pane and the
    chart's titles name it) drew "not in this run", exited 0, and added an unrequested
    train/box_loss panel. Now it draws metrics/mAP50-95 alone, in text and in --json."""
    run = copy_fixture(tmp_path / "run")
    proc = rgpu(tmp_path, "chart", str(run), "--metric", "mAP50-95", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["metrics"] == ["metrics/mAP50-95"]
    [got] = doc["runs"]
    assert list(got["metrics"]) == ["metrics/mAP50-95"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert got["metrics"]["metrics/mAP50-95"]["raw"] == [r["metrics/mAP50-95"] for r in rows]
    args = ("--metric", "mAP50-95", "--metric", "train/loss", "--width", "100", "--height", "14")
    proc = rgpu(tmp_path, "chart", str(run), *args)
    assert proc.returncode == 0, proc.stderr
    titles = [line.split()[0] for line in proc.stdout.splitlines()[2:3]]
    assert titles == ["mAP50-95"], proc.stdout
    assert "train/loss" in proc.stdout.splitlines()[2]  # side by side: both asked, no other
    assert "not in this run" not in proc.stdout and "box_loss" not in proc.stdout
    # beside a run that lacks it: its panel says so, and no panel of that run's own is added
    other = copy_fixture(tmp_path / "other")
    rows = [json.loads(line) for line in (other / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        del r["metrics/mAP50-95"]
    (other / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = rgpu(tmp_path, "chart", str(run), str(other), "--metric", "mAP50-95", "--json")
    doc = json.loads(proc.stdout)
    assert doc["metrics"] == ["metrics/mAP50-95"]
    assert [list(r["metrics"]) for r in doc["runs"]] == [["metrics/mAP50-95"], []]
    proc = rgpu(tmp_path, "chart", str(run), str(other), "--metric", "mAP50-95")
    assert proc.returncode == 0 and "box_loss" not in proc.stdout, proc.stdout
    # alone, that run has no such metric: said, with the nearest it has
    proc = rgpu(tmp_path, "chart", str(other), "--metric", "mAP50-95")
    assert proc.returncode == 2 and "did you mean `mAP50-95(B)`?" in proc.stderr


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("map50-95", "did you mean `mAP50-95`?"),
        ("box_loss", "did you mean `train/box_loss`?"),
        ("zzzz", "the metrics are train/loss, "),
    ],
)
def test_an_unknown_metric_is_one_line_offering_the_nearest(tmp_path, name, said):
    run = copy_fixture(tmp_path / "run")
    for extra in ((), ("--json",)):
        proc = rgpu(tmp_path, "chart", str(run), "--metric", name, *extra)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert f"no metric '{name}' in the runs' metrics: {said}" in proc.stderr


def test_a_metric_asked_of_a_run_with_no_rows_yet_is_not_refused(tmp_path):
    """Nothing to check a name against (a run that just started): drawn as asked."""
    run = tmp_path / "fresh"
    run.mkdir()
    proc = rgpu(tmp_path, "chart", str(run), "--metric", "metrics/mAP50-95", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["metrics"] == ["metrics/mAP50-95"]
