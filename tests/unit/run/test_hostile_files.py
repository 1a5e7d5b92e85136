"""Run files that are not files (FIFOs, devices), directories that cannot be listed or are
too deep, and a reader that raises: each is that run's problem, never a hang or a failed
refresh; the RunsWatcher keeps a directory it cannot watch from stopping the rest.

A reader that blocks on a FIFO makes these tests fail after a timeout (support.fifos),
not hang the suite."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.fifos import make_fifo, returns_within

from rgpu_tui.core.base.config import load_settings
from rgpu_tui.core.base.safeio import NotRegularFile
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture import launch_rows, watch
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.records import read_json_lines
from rgpu_tui.core.render.snapshot_text import snapshot_to_text
from rgpu_tui.core.run import discovery
from rgpu_tui.core.run.discovery import MAX_DEPTH, RunFinder
from rgpu_tui.core.run.metrics import MetricsReader
from rgpu_tui.core.run.status import StatusReader
from rgpu_tui.core.run.tail import IncrementalFile, LogTail, describe_os_error

NOT_REGULAR = "is not a regular file"


def completed_status(run: Path, epochs: int = 2) -> None:
    run.mkdir(parents=True, exist_ok=True)
    doc = {"state": "completed", "total_epochs": epochs, "completed_epochs": epochs}
    (run / "status.json").write_text(json.dumps(doc))


def metrics(run: Path, epochs: int = 2) -> None:
    rows = [{"epoch": e, "train/loss": 1.0 / e} for e in range(1, epochs + 1)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


# -- FIFOs: every reader ---------------------------------------------------------------


def test_describe_os_error_names_a_non_regular_file() -> None:
    assert describe_os_error(NotRegularFile("/x/train.log")) == NOT_REGULAR


def test_incremental_file_on_a_fifo(tmp_path: Path) -> None:
    fifo = make_fifo(tmp_path / "train.log")
    reader = IncrementalFile(str(fifo))
    result = returns_within(reader.read_new, [fifo], what="IncrementalFile.read_new")
    assert (result.data, result.problem) == (b"", NOT_REGULAR)


def test_log_tail_on_a_fifo_then_a_real_log(tmp_path: Path) -> None:
    fifo = make_fifo(tmp_path / "train.log")
    tail = LogTail(str(fifo))
    returns_within(tail.poll, [fifo], what="LogTail.poll")
    assert (tail.problem, tail.lines()) == (NOT_REGULAR, ())
    fifo.unlink()
    fifo.write_text("epoch 1\n")  # replaced by a real log: read as usual
    assert tail.poll()
    assert (tail.problem, tail.lines()) == (None, ("epoch 1",))


def test_log_tail_on_a_character_device(tmp_path: Path) -> None:
    """A symlink to /dev/zero as train.log: refused before it is opened, not read forever."""
    link = tmp_path / "train.log"
    link.symlink_to("/dev/zero")
    tail = LogTail(str(link))
    returns_within(tail.poll, [], what="LogTail.poll on /dev/zero")
    assert tail.problem == NOT_REGULAR


def test_status_reader_on_a_fifo_keeps_the_last_good_value(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps({"state": "running", "completed_epochs": 3}))
    reader = StatusReader(str(path))
    reader.poll()
    path.unlink()
    make_fifo(path)
    assert returns_within(reader.poll, [path], what="StatusReader.poll")
    assert reader.problem == "status.json is not a regular file"
    assert reader.data == {"state": "running", "completed_epochs": 3}
    assert not reader.poll()  # the same FIFO: nothing new, nothing opened


@pytest.mark.parametrize("name", ["metrics.jsonl", "results.csv"])
def test_metrics_reader_on_a_fifo(tmp_path: Path, name: str) -> None:
    fifo = make_fifo(tmp_path / name)
    reader = MetricsReader(str(tmp_path))
    returns_within(reader.poll, [fifo], what="MetricsReader.poll")
    assert reader.problem == f"{name} is not a regular file"
    assert reader.row_count == 0


def test_read_json_lines_on_a_fifo_reads_no_records(tmp_path: Path) -> None:
    fifo = make_fifo(tmp_path / ".rgpu" / "pushes.jsonl")
    assert returns_within(lambda: read_json_lines(str(fifo)), [fifo], what="records") == []
    assert returns_within(lambda: read_json_lines(str(fifo), 1024), [fifo], what="tail") == []


def test_config_file_that_is_a_fifo(tmp_path: Path) -> None:
    """--config FIFO: an error naming the file; the default file a FIFO: a warning, and the
    other sources still count."""
    fifo = make_fifo(tmp_path / "settings.toml")
    with pytest.raises(ValueError, match=r"settings\.toml: is not a regular file") as err:
        returns_within(lambda: load_settings(str(fifo), environ={}), [fifo], what="--config")
    assert "\n" not in str(err.value)

    home = tmp_path / "home"
    default = make_fifo(home / ".config" / "rgpu-tui" / "config.toml")
    env = {"HOME": str(home), "RGPU_PRICE_PER_HOUR": "2.5"}
    settings = returns_within(lambda: load_settings(None, environ=env), [default], what="default")
    assert settings.price_per_hour == 2.5
    assert settings.config_path is None
    [warning] = settings.warnings
    assert warning.startswith(f"{default}: is not a regular file")


def test_config_default_that_is_a_directory_is_a_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "rgpu-tui" / "config.toml").mkdir(parents=True)
    settings = load_settings(None, environ={"HOME": str(home)})
    assert settings.warnings == (
        f"{home}/.config/rgpu-tui/config.toml: is a directory, not a config file; "
        "settings from it are not used",
    )


def test_runs_watcher_over_fifos_in_every_place(tmp_path: Path) -> None:
    """One refresh over runs whose status.json, metrics.jsonl, results.csv, train.log and
    pushes.jsonl are FIFOs, and a launches.jsonl FIFO: each run says which file is not a
    regular file, the sane run is whole, and nothing blocks."""
    root = tmp_path / "runs"
    fifos = [
        make_fifo(root / "status_fifo" / "status.json"),
        make_fifo(root / "metrics_fifo" / "metrics.jsonl"),
        make_fifo(root / "csv_fifo" / "results.csv"),
        make_fifo(root / "log_fifo" / "train.log"),
        make_fifo(root / "push_fifo" / ".rgpu" / "pushes.jsonl"),
        make_fifo(root / ".rgpu" / "launches.jsonl"),
    ]
    for name in ("metrics_fifo", "csv_fifo", "log_fifo", "push_fifo", "sane"):
        completed_status(root / name)
    metrics(root / "sane")
    w = RunsWatcher(str(root))
    snaps = {}
    for name in ("status_fifo", "metrics_fifo", "csv_fifo", "log_fifo", "push_fifo"):
        run = str(root / name)
        snaps[name] = returns_within(lambda run=run: w.refresh(time.time(), run), fifos)
    problems = {r.name: r.problem for r in snaps["status_fifo"].runs}
    assert problems == {
        "status_fifo": "status.json is not a regular file",
        "metrics_fifo": "metrics.jsonl is not a regular file",
        "csv_fifo": "results.csv is not a regular file",
        "log_fifo": "train.log is not a regular file",
        "push_fifo": None,
        "sane": None,
    }
    sane = snaps["status_fifo"].run(str(root / "sane"))
    assert (sane.state, sane.current_epoch, sane.progress) == ("completed", 2, 1.0)
    assert snaps["metrics_fifo"].selected.metrics.problem == "metrics.jsonl is not a regular file"
    assert snaps["log_fifo"].selected.log.problem == "train.log is not a regular file"
    assert snaps["push_fifo"].selected.pushes.attempts == 0  # a FIFO holds no records


# -- directories: a file as root, too deep, unlistable ---------------------------------------


def test_root_that_is_a_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "runs"
    path.write_text("")
    snap = RunsWatcher(str(path)).refresh(time.time())
    assert snap.problem.startswith(f"{path} is a file, not a directory: ")
    missing = RunsWatcher(str(tmp_path / "nope")).refresh(time.time())
    assert missing.problem.startswith(f"{tmp_path / 'nope'} does not exist yet: ")


def test_directories_deeper_than_the_limit_are_counted(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    at_limit = root.joinpath(*[f"d{i}" for i in range(1, MAX_DEPTH + 1)])
    completed_status(at_limit / "run")  # depth MAX_DEPTH + 1: not searched
    (at_limit / "other").mkdir()
    completed_status(root / "d1" / "shallow")
    finder = RunFinder(str(root))
    assert finder.scan() == [str(root / "d1" / "shallow")]
    assert finder.deep_skipped == 2
    assert finder.scan() and finder.deep_skipped == 2  # from the cache, the same count

    snap = RunsWatcher(str(root)).refresh(time.time())
    assert snap.deep_dirs_skipped == 2
    footer = f"2 directories deeper than {MAX_DEPTH} levels not searched"
    assert footer in snapshot_to_text(snap).splitlines()
    assert snapshot_to_json(snap)["deep_dirs_skipped"] == 2


def test_unlistable_run_directory_is_shown_with_its_problem(tmp_path: Path, monkeypatch) -> None:
    """A run directory whose listing is refused (permission denied; faked here, since the
    tests run as root; tests/faults does it for real as an unprivileged user) is a run
    with that problem, and is listed again until it can be."""
    root = tmp_path / "runs"
    completed_status(root / "locked")
    completed_status(root / "open")
    locked = str(root / "locked")
    real_scandir = os.scandir
    denied = {"on": True}

    def scandir(path):
        if denied["on"] and os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", locked)
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    w = RunsWatcher(str(root))
    snap = w.refresh(time.time())
    assert {r.name: r.problem for r in snap.runs} == {
        "locked": "directory cannot be listed: permission denied",
        "open": None,
    }
    assert snap.run(locked).state == "completed"  # its files could still be read by name
    denied["on"] = False
    snap = w.refresh(time.time())
    assert snap.run(locked).problem is None


def test_lost_and_found_is_never_a_run(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "runs"
    (root / "lost+found").mkdir(parents=True)
    real_scandir = os.scandir

    def scandir(path):
        if os.fspath(path).endswith("lost+found"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    assert RunFinder(str(root)).scan() == []


# -- a reader that raises: that run's problem -------------------------------------------------


def test_a_reader_that_raises_spoils_only_its_run(tmp_path: Path, monkeypatch) -> None:
    """Defence in depth: an unexpected exception while reading one run becomes that run's
    problem; the refresh and every other run go on (the app said "refresh failed")."""
    root = tmp_path / "runs"
    for name in ("bad", "good"):
        completed_status(root / name)
        metrics(root / name)
    bad = str(root / "bad")
    real_poll = MetricsReader.poll

    def poll(self):
        if self.run_dir == bad:
            raise RuntimeError("boom\nsecond line")
        return real_poll(self)

    monkeypatch.setattr(MetricsReader, "poll", poll)
    snap = RunsWatcher(str(root)).refresh(time.time(), selected=bad)
    assert {r.name: (r.state, r.problem) for r in snap.runs} == {
        "bad": ("unknown", "could not be read: RuntimeError: boom second line"),
        "good": ("completed", None),
    }
    assert snap.selected.run_dir == bad


def test_a_selected_view_that_raises_is_that_pane_problem(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "runs"
    completed_status(root / "r")
    metrics(root / "r")

    def broken(self, *args, **kwargs):
        raise OverflowError("odd value")

    monkeypatch.setattr(watch.RunWatcher, "metrics_view", broken)
    monkeypatch.setattr(watch.RunWatcher, "push_info", broken)
    monkeypatch.setattr(LogTail, "poll", broken)
    snap = RunsWatcher(str(root)).refresh(time.time())
    assert snap.runs[0].state == "completed"
    assert snap.selected.metrics.problem == "could not be read: OverflowError: odd value"
    assert snap.selected.log.problem == "could not be read: OverflowError: odd value"
    assert snap.selected.pushes is None


def test_a_launches_record_that_raises_keeps_the_runs(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "runs"
    completed_status(root / "r")

    def broken(*args, **kwargs):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(launch_rows, "read_launch_file", broken)
    (root / ".rgpu").mkdir()
    (root / ".rgpu" / "launches.jsonl").write_text("{}\n")
    snap = RunsWatcher(str(root)).refresh(time.time())
    assert [r.name for r in snap.runs] == ["r"]
    assert snap.problem == (
        "launches.jsonl could not be read: OverflowError: int too large to convert to float"
    )
