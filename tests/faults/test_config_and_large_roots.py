"""A config file that is not TOML (one line naming the file and line, exit 2), every file
fault at once under `rgpu-tui snapshot` (exit 0), and a root of 200 runs whose refresh
with nothing changed reads nothing (the time printed, never asserted).

Run: .venv/bin/pytest tests/faults -q
"""

from __future__ import annotations

import json
import statistics
import time

import pytest
from support.cli_env import clean_env, run_rgpu
from support.run_dir import make_run, metric_row

from faults.helpers import HALF_WRITTEN, age, status_doc

# -- configuration ----------------------------------------------------------------------

NOT_TOML = b"price_per_hour = 3.48\nthis is not toml\n"


@pytest.mark.parametrize(
    ("command", "where", "content", "line"),
    [
        ("snapshot", "--config", NOT_TOML, 2),
        ("cost", "--config", NOT_TOML, 2),
        ("app", "--config", NOT_TOML, 2),
        ("snapshot", "default", NOT_TOML, 2),
        ("cost", "default", NOT_TOML, 2),
        ("snapshot", "--config", b'{"price_per_hour": 3.48}\n', 1),  # JSON, not TOML
        ("cost", "default", b"idle_minutes = 5\n\x89PNG\r\n\x1a\n\xff\xfe", 2),  # binary
    ],
    ids=["snapshot", "cost", "app", "snapshot-default", "cost-default", "json", "binary"],
)
def test_config_file_that_is_not_toml(tmp_path, command, where, content, line) -> None:
    """Fault: the config file is not TOML (garbage, JSON, binary): one line naming the file
    and the line, exit status 2, nothing on stdout."""
    home = tmp_path / "home"
    if where == "default":
        path = home / ".config" / "rgpu-tui" / "config.toml"
        flags = []
    else:
        path = tmp_path / "my settings.toml"
        flags = ["--config", str(path)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    (tmp_path / "runs").mkdir()
    argv = [] if command == "app" else [command]
    proc = run_rgpu(
        *argv,
        *flags,
        str(tmp_path / "runs"),
        env=clean_env(tmp_path, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config")),
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"rgpu-tui: {path} line {line}: "), lines[0]


# -- every file fault at once --------------------------------------------------------------


def test_every_file_fault_at_once_snapshot_exits_0(tmp_path) -> None:
    """Faults together in one runs root (half-written, empty, non-object and directory
    status.json, torn and over-long metrics lines): `rgpu-tui snapshot` prints every run
    with its problem and exits 0, as text and as JSON."""
    root = tmp_path / "runs"
    make_run(root, "half_status", epochs=0).joinpath("status.json").write_text('{"state": "runn')
    make_run(root, "empty_status", epochs=0).joinpath("status.json").write_text("")
    make_run(root, "list_status", epochs=0).joinpath("status.json").write_text("[1, 2]")
    (make_run(root, "dir_status", epochs=2) / "status.json").mkdir()
    torn = make_run(root, "torn_metrics", status=status_doc("completed", 2, 2), epochs=2)
    with open(torn / "metrics.jsonl", "a") as f:
        f.write('{"epoch": 3, "train/lo')
    long = make_run(root, "long_metrics", status=status_doc("completed", 2, 2), epochs=1)
    with open(long / "metrics.jsonl", "a") as f:
        f.write('{"x": "' + "z" * (2 * 1024 * 1024) + '"}\n' + json.dumps(metric_row(2)) + "\n")

    proc = run_rgpu(
        "snapshot",
        "--json",
        "--fake-gpus",
        "1",
        str(root),
        env=clean_env(tmp_path, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config")),
    )
    assert proc.returncode == 0, proc.stderr
    runs = {r["name"]: r for r in json.loads(proc.stdout)["runs"]}
    assert {name: (r["state"], r["problem"]) for name, r in runs.items()} == {
        "half_status": ("unknown", HALF_WRITTEN),
        "empty_status": ("unknown", HALF_WRITTEN),
        "list_status": ("unknown", "status.json is not a JSON object"),
        "dir_status": ("unknown", "status.json unreadable: is a directory"),
        "torn_metrics": ("completed", None),
        "long_metrics": ("completed", None),
    }
    assert runs["dir_status"]["current_epoch"] == 2  # from metrics.jsonl
    text = run_rgpu(
        "snapshot",
        "--fake-gpus",
        "1",
        str(root),
        env=clean_env(tmp_path, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config")),
    )
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("(status.json") == 4
    one = run_rgpu(
        "snapshot",
        "--json",
        "--fake-gpus",
        "1",
        str(long),
        env=clean_env(tmp_path, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config")),
    )
    assert json.loads(one.stdout)["selected"]["metrics"]["malformed_lines"] == 1


# -- a large runs root -----------------------------------------------------------------------


def test_200_runs_refresh_stays_cheap(tmp_path, collector, record_property) -> None:
    """Fault: a runs root holding 200 runs. After the first refresh, a refresh with nothing
    changed lists no directory, re-reads no status.json and reads no metrics byte; an append
    costs its own bytes. The time is printed and recorded, never asserted."""
    root = tmp_path / "runs"
    for i in range(200):
        make_run(
            root,
            f"run_{i:03d}",
            status=status_doc("completed", 5, 5),
            epochs=5,
            log=[f"run {i} line {n}" for n in range(20)],
        )
    age(root)  # written a while ago: directory listings can be trusted
    c = collector(root)
    t0 = time.perf_counter()
    snap = c.refresh(time.time())
    first = time.perf_counter() - t0
    assert len(snap.runs) == 200 and c.runs.finder.listed == 201

    watchers = [c.runs.watcher(r.run_dir) for r in snap.runs]

    def work() -> tuple:
        return (
            sum(w.metrics._file.bytes_read for w in watchers),
            sum(w.metrics.rows_parsed for w in watchers),
            sum(w.status.generation for w in watchers),
        )

    before = work()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        snap = c.refresh(time.time())
        times.append(time.perf_counter() - t0)
        assert c.runs.finder.listed == 0
        assert c.system.listed == 0
        assert work() == before
        assert len(snap.runs) == 200
    again = statistics.median(times)

    row = (json.dumps(metric_row(6)) + "\n").encode()
    with open(root / "run_123" / "metrics.jsonl", "ab") as f:
        f.write(row)
    c.refresh(time.time())
    assert c.runs.finder.listed == 0
    assert work()[0] == before[0] + len(row) and work()[1] == before[1] + 1

    print(
        f"\n200 runs: first refresh {first * 1000:.1f} ms, "
        f"refresh with nothing changed {again * 1000:.2f} ms (median of 5)"
    )
    record_property("refresh_200_runs_first_ms", round(first * 1000, 1))
    record_property("refresh_200_runs_unchanged_ms", round(again * 1000, 2))
