"""Hostile run files and settings through the whole system: `rgpu-tui snapshot` and `rgpu-tui
cost` as subprocesses, and the app under Pilot, over one runs root that holds FIFOs where
files should be, values out of every range, and sane runs beside them.

What the user must see: every sane run, each broken run with a one-line problem, exit
status 0, no traceback; a bad setting is one line and exit status 2. Before the fixes a
FIFO blocked forever: every subprocess here has a timeout and the app test releases the
FIFOs at teardown (support.fifos), so a regression fails instead of hanging the suite.

Permission tests run the CLI as an unprivileged user (setpriv to nobody) when the suite
runs as root, since root reads and lists everything whatever the mode bits say.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fifos import FifoReleaser, make_fifo
from support.hostile_files import BIG, DONE, EXPECTED, MAP, hostile_root, rows, write_run
from tui.helpers import rendered, wait_for

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.run.discovery import MAX_DEPTH
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.cost import CostScreen

TIMEOUT = 60  # a FIFO that blocks makes the command time out: the test fails, not hangs
NOT_REGULAR = "is not a regular file"


def cli(*args: str, home: Path, env: dict | None = None, prefix: tuple = ()):
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        **(env or {}),
    }
    return subprocess.run(
        [*prefix, sys.executable, "-m", "rgpu_tui", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def one_line(proc) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_snapshot_over_every_hostile_run_at_once(tmp_path: Path) -> None:
    """FIFOs in every place and values out of every range, in one runs root: `snapshot`
    (JSON and text) exits 0 in time, shows every run with its one-line problem, every sane
    value of the sane runs, and says that a directory was too deep to search."""
    root = tmp_path / "runs"
    hostile_root(root)
    proc = cli("snapshot", "--json", "--fake-gpus", "1", str(root), home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    snap = json.loads(proc.stdout)
    runs = {r["name"]: r for r in snap["runs"]}
    assert {name: r["problem"] for name, r in runs.items()} == EXPECTED
    assert (runs["sane"]["state"], runs["sane"]["current_epoch"], runs["sane"]["progress"]) == (
        "completed",
        3,
        1.0,
    )
    assert runs["infinite_map"]["progress"] == 1.0
    assert runs["negative_epochs"]["progress"] is None  # unknown, never -5%
    assert runs["total_400_digits"]["total_epochs"] is None
    assert runs["year_1"]["elapsed_seconds"] is None
    assert snap["deep_dirs_skipped"] == 1

    text = cli("snapshot", "--fake-gpus", "1", str(root), home=tmp_path / "home")
    assert text.returncode == 0, text.stderr
    assert "-5%" not in text.stdout
    assert f"1 directory deeper than {MAX_DEPTH} levels not searched" in text.stdout
    for problem in filter(None, EXPECTED.values()):
        assert f"({problem})" in text.stdout


@pytest.mark.parametrize(
    ("name", "where", "problem"),
    [
        ("status_fifo", "runs", "status.json is not a regular file"),
        ("metrics_fifo", "metrics", "metrics.jsonl is not a regular file"),
        ("csv_fifo", "metrics", "results.csv is not a regular file"),
        ("log_fifo", "log", "train.log is not a regular file"),
    ],
)
def test_snapshot_of_one_run_with_a_fifo(tmp_path: Path, name: str, where: str, problem: str):
    """The run given as PATH is the selected one, whose metrics and log are read whole."""
    root = tmp_path / "runs"
    hostile_root(root)
    proc = cli("snapshot", "--json", "--fake-gpus", "1", str(root / name), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    got = {
        "runs": snap["runs"][0]["problem"],
        "metrics": snap["selected"]["metrics"]["problem"],
        "log": snap["selected"]["log_problem"],
    }
    assert got[where] == problem


def test_metrics_of_hostile_runs_in_snapshot(tmp_path: Path) -> None:
    """An infinite mAP no longer hides the real best (the column's max was "-"); a
    results.csv with a byte order mark has an `epoch` column, not `\ufeffepoch`."""
    root = tmp_path / "runs"
    hostile_root(root)

    def metrics_of(name: str) -> dict:
        proc = cli("snapshot", "--json", "--fake-gpus", "1", str(root / name), home=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["selected"]["metrics"]

    metrics = metrics_of("infinite_map")
    assert metrics["stats"][MAP]["max"] == pytest.approx(0.2)
    assert metrics["stats"][MAP]["best"] == pytest.approx(0.2)
    assert metrics["non_finite_values"] == 1
    assert metrics_of("bom_csv")["columns"] == ["epoch", "train/loss"]


def test_cost_over_every_hostile_run_at_once(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    hostile_root(root)
    for args in (["--price-per-hour", "2"], ["--json", "--price-per-hour", "2"]):
        proc = cli("cost", *args, str(root), home=tmp_path / "home")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
    proc = cli("cost", "--price-per-hour", "2", str(root / "year_1"), home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr


def test_cost_with_a_tiny_price_and_a_huge_balance(tmp_path: Path) -> None:
    """--price-per-hour 0.0001 --balance 1e12 crashed `cost` (and the app's c view) with a
    traceback: a balance beyond ±1e9 is now one line and exit 2; the largest balance
    allowed works, and its end (4 million years away) is not a date shown."""
    home = tmp_path / "home"
    proc = cli("cost", "--price-per-hour", "0.0001", "--balance", "1e12", home=home)
    assert proc.returncode == 2
    assert one_line(proc) == (
        "rgpu-tui: --balance: balance must be at most 1,000,000,000, got '1e12'"
    )
    for extra in ([], ["--json"]):
        proc = cli("cost", *extra, "--price-per-hour", "0.0001", "--balance", "1e9", home=home)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
    assert json.loads(proc.stdout)["balance_runs_out_at"] is None


@pytest.mark.parametrize("command", ["snapshot", "cost"])
def test_bad_settings_values_are_one_line(tmp_path: Path, command: str) -> None:
    home = tmp_path / "home"
    (tmp_path / "runs").mkdir()
    millis = cli(
        command, str(tmp_path / "runs"), home=home, env={"RGPU_BILLING_STARTED_AT": "1.7e12"}
    )
    assert millis.returncode == 2
    assert one_line(millis).startswith(
        "rgpu-tui: RGPU_BILLING_STARTED_AT: billing_started_at must be an ISO 8601 time"
    )
    millis = cli(
        command, str(tmp_path / "runs"), home=home, env={"RGPU_BILLING_STARTED_AT": "1700000000000"}
    )
    assert millis.returncode == 2
    assert one_line(millis).startswith(
        "rgpu-tui: RGPU_BILLING_STARTED_AT: billing_started_at looks like epoch milliseconds"
    )
    config = tmp_path / "big.toml"
    config.write_text(f"price_per_hour = 1\nbalance = {BIG}\n")
    big = cli(command, "--config", str(config), str(tmp_path / "runs"), home=home)
    assert big.returncode == 2
    assert one_line(big).startswith(
        f"rgpu-tui: {config} line 2: balance must be at most 1,000,000,000, got 99999"
    )


# -- the config file: a FIFO, unreadable ---------------------------------------------------------


@pytest.mark.parametrize("command", ["snapshot", "cost"])
def test_config_file_that_is_a_fifo(tmp_path: Path, command: str) -> None:
    """A FIFO as --config is one line and exit 2; as the default config file, a one-line
    warning and the command goes on with the other sources. Neither blocks."""
    home = tmp_path / "home"
    (tmp_path / "runs").mkdir()
    fifo = make_fifo(tmp_path / "settings.toml")
    proc = cli(command, "--config", str(fifo), str(tmp_path / "runs"), home=home)
    assert proc.returncode == 2
    assert one_line(proc) == (
        f"rgpu-tui: {fifo}: is not a regular file (a FIFO, socket or device), not a config file"
    )
    default = make_fifo(home / ".config" / "rgpu-tui" / "config.toml")
    proc = cli(command, "--price-per-hour", "2", str(tmp_path / "runs"), home=home)
    assert proc.returncode == 0, proc.stderr
    assert one_line(proc) == (
        f"rgpu-tui: warning: {default}: is not a regular file (a FIFO, socket or device), "
        "not a config file; settings from it are not used"
    )


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user can enter (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="rgpu-hostile-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(path)


def unprivileged(home: Path) -> tuple:
    """The argv prefix that runs a command as a user the mode bits apply to: nobody via
    setpriv when the suite runs as root, nothing otherwise. Skips when that is impossible."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits cannot be tested")
    prefix = (setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--")
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import rgpu_tui.cli"],
        capture_output=True,
        timeout=TIMEOUT,
        cwd=home,
    )
    if probe.returncode != 0:
        pytest.skip(f"nobody cannot run this Python: {probe.stderr[-200:]!r}")
    return prefix


@pytest.mark.parametrize("command", ["snapshot", "cost"])
def test_unreadable_config_file(shared_dir: Path, command: str) -> None:
    """Permission denied on the default config file is a one-line warning and the command
    goes on (every command exited 2); on --config FILE it is one line and exit 2."""
    home = shared_dir / "home"
    config = home / ".config" / "rgpu-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("price_per_hour = 3\n")
    config.chmod(0o000)
    for p in (home, home / ".config", config.parent):
        p.chmod(0o755)
    runs = shared_dir / "runs"
    write_run(runs, "sane", DONE, rows(3)).chmod(0o755)
    runs.chmod(0o755)
    prefix = unprivileged(home)
    proc = cli(command, "--price-per-hour", "2", str(runs), home=home, prefix=prefix)
    assert proc.returncode == 0, proc.stderr
    assert one_line(proc) == (
        f"rgpu-tui: warning: {config}: cannot read: Permission denied; "
        "settings from it are not used"
    )
    assert "$2.00/h" in proc.stdout or command == "snapshot"
    proc = cli(command, "--config", str(config), str(runs), home=home, prefix=prefix)
    assert proc.returncode == 2
    assert one_line(proc) == f"rgpu-tui: {config}: cannot read: Permission denied"


def test_run_directory_that_cannot_be_listed(shared_dir: Path) -> None:
    """A run directory without read permission (its files still reachable by name) and one
    without any permission were silently missing: both are shown with their problem."""
    root = shared_dir / "runs"
    for name in ("open", "no_read", "sealed"):
        write_run(root, name, DONE, rows(3))
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    root.chmod(0o755)
    (root / "no_read").chmod(0o311)  # search but no read: cannot be listed
    (root / "sealed").chmod(0o000)
    prefix = unprivileged(shared_dir)
    proc = cli("snapshot", "--json", "--fake-gpus", "1", str(root), home=shared_dir, prefix=prefix)
    assert proc.returncode == 0, proc.stderr
    runs = {r["name"]: r for r in json.loads(proc.stdout)["runs"]}
    assert {name: r["problem"] for name, r in runs.items()} == {
        "open": None,
        "no_read": "directory cannot be listed: permission denied",
        "sealed": "directory cannot be listed: permission denied; "
        "status.json unreadable: permission denied",
    }
    assert (runs["no_read"]["state"], runs["no_read"]["current_epoch"]) == ("completed", 3)
    assert runs["sealed"]["state"] == "unknown"


# -- the app ------------------------------------------------------------------------------------


async def test_app_over_every_hostile_run_keeps_refreshing(tmp_path: Path) -> None:
    """The app over the whole hostile root, with a tiny price and the largest balance: the
    first refresh arrives, later ones too, refresh_error stays None, every sane run is in
    the list with the too-deep footer, the header of a bad run says why, and the cost
    view (c) opens and updates without a traceback."""
    root = tmp_path / "runs"
    fifos = hostile_root(root)
    now = time.time()
    settings = Settings(price_per_hour=0.0001, balance=1e9, balance_at=now)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1, settings=settings)
    # before the fix a refresh blocks on a FIFO, holding the lock the app's unmount waits
    # for: from the end of the test on, play the writer so that the app can close
    releaser = FifoReleaser(fifos)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            try:
                await _check_hostile_app(app, pilot, root)
            finally:
                releaser.start()
    finally:
        releaser.stop()


async def _check_hostile_app(app: RgpuApp, pilot, root: Path) -> None:
    await wait_for(pilot, lambda: app.snapshot is not None, timeout=20)
    for _ in range(3):
        before = app.snapshot
        app.request_refresh()
        await wait_for(pilot, lambda before=before: app.snapshot is not before)
        assert app.refresh_error is None
    names = {r.name for r in app.snapshot.runs}
    assert names == set(EXPECTED)
    await pilot.pause()
    listed = [
        app.view.runs_list.get_option_at_index(i).prompt.plain
        for i in range(app.view.runs_list.option_count)
    ]
    assert listed[-1] == f"1 directory deeper than {MAX_DEPTH} levels not searched"
    assert len(listed) == len(names) + 1

    app.view.selected = str(root / "year_1")
    before = app.snapshot
    app.request_refresh()
    await wait_for(pilot, lambda: app.snapshot is not before)
    await pilot.pause()
    assert EXPECTED["year_1"] in rendered(app.view.run_header)

    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, CostScreen))
    body = str(app.screen.query_one("#body").render())
    assert "$1,000,000,000.00 left" in body
    assert "unavailable" not in body
    before = app.snapshot
    app.request_refresh()
    await wait_for(pilot, lambda: app.snapshot is not before)
    assert app.refresh_error is None
