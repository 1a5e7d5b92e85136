"""End to end: `rgpu-tui watch` as a subprocess over runs whose trainers are real processes
(a python that sleeps, its pid and start time in status.json), notifying through a real
command. Every wait polls a file or the output against a deadline; no training needed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.waiting import wait_until
from support.watch_proc import Watch

# appends [event, run, message] to the file named first
RECORD = (
    "import json, sys\n"
    "with open(sys.argv[1], 'a') as f:\n"
    "    f.write(json.dumps(sys.argv[2:]) + '\\n')\n"
)


class Trainer:
    """A stand-in trainer: a real process whose pid and start time a status.json names."""

    def __init__(self, run_dir: Path, total_epochs: int = 10) -> None:
        self.run_dir = run_dir
        self.total = total_epochs
        # its command line names its run, as a trainer's does (core.run.run_process)
        code = "import time; time.sleep(600)"
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(run_dir)])
        created = psutil.Process(self.proc.pid).create_time()
        self.started_at = datetime.fromtimestamp(int(created), tz=timezone.utc).isoformat()
        self.status("running", completed_epochs=2)

    def status(self, state: str, **fields) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        doc = {
            "state": state,
            "pid": self.proc.pid,
            "started_at": self.started_at,
            "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "total_epochs": self.total,
            **fields,
        }
        tmp = self.run_dir / ".status.json.tmp"
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.run_dir / "status.json")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def finish(self) -> None:
        """As libreyolo ends a run: status.json says completed, then the process exits."""
        self.status("completed", completed_epochs=self.total, best_metric=0.42, best_epoch=9)
        self.proc.terminate()
        self.proc.wait()


@pytest.fixture
def trainers() -> Iterator[list[Trainer]]:
    made: list[Trainer] = []
    yield made
    for t in made:
        if t.proc.poll() is None:
            t.proc.kill()
        t.proc.wait()


@pytest.fixture
def setup(tmp_path: Path):
    """(root, env, notified file): a private HOME and state folder, notify_command set."""
    root = tmp_path / "runs"
    root.mkdir(exist_ok=True)  # (the live_training fixture's project, when it is used)
    notified = tmp_path / "notified.jsonl"
    env = clean_env(tmp_path, XDG_STATE_HOME=str(tmp_path / "state"))
    argv = [sys.executable, "-c", RECORD, str(notified), "{event}", "{run}", "{message}"]
    config = tmp_path / "home" / ".config" / "rgpu-tui" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"notify_command = {json.dumps(argv)}\n")
    return root, env, notified


def state_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state" / "rgpu-tui").glob("watch-*.json"))


def notified_events(path: Path, name: str) -> list[list[str]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [e for e in map(json.loads, text.splitlines()) if e[0] == name]


def test_a_killed_run_is_one_run_dead_notified_once_and_a_restart_repeats_nothing(
    tmp_path: Path, setup, trainers
) -> None:
    root, env, notified = setup
    dying = Trainer(root / "exp1")
    finishing = Trainer(root / "exp2")
    trainers += [dying, finishing]
    watch = Watch(root, env)
    # the first look is saved: from now on a change is news
    wait_until(lambda: state_files(tmp_path), "the state file", timeout=30, details=watch.details)
    dying.kill()
    finishing.finish()
    wait_until(
        lambda: watch.events("run_dead") and watch.events("run_done"),
        "run_dead and run_done",
        timeout=30,
        details=watch.details,
    )
    # more refreshes go by (a new run is seen): the death is still told once
    later = Trainer(root / "exp3")
    trainers.append(later)
    wait_until(lambda: watch.events("run_started"), "run_started", details=watch.details)
    wait_until(lambda: notified_events(notified, "run_started"), "the run_started notification")
    assert watch.stop() == 0, watch.stderr
    [dead] = watch.events("run_dead")
    assert set(dead) == {"at", "event", "run", "message"}
    assert dead["run"] == str(root / "exp1")
    assert f"process {dying.proc.pid} is gone; status.json still says running" in dead["message"]
    datetime.fromisoformat(dead["at"])
    [done] = watch.events("run_done")
    assert done["run"] == str(root / "exp2") and "completed: epoch 10/10" in done["message"]
    assert [e["run"] for e in watch.events("run_started")] == [str(root / "exp3")]
    assert notified_events(notified, "run_dead") == [["run_dead", dead["run"], dead["message"]]]
    assert notified_events(notified, "run_done") == [["run_done", done["run"], done["message"]]]
    assert "watching" in watch.stderr

    # a restarted watcher repeats nothing (the disk warning of this machine included);
    # what happens while it runs is news
    before = notified.read_text()
    again = Watch(root, env)
    wait_until(lambda: "watching" in again.proc.stderr.readline(), "the second watcher")
    later.kill()
    wait_until(lambda: again.events("run_dead"), "exp3's run_dead", details=again.details)
    assert again.stop(signal.SIGINT) == 0
    assert [(e["event"], e["run"]) for e in again.events()] == [("run_dead", str(root / "exp3"))]
    wait_until(lambda: notified.read_text() != before, "exp3's notification")
    assert [e[0] for e in map(json.loads, notified.read_text()[len(before) :].splitlines())] == [
        "run_dead"
    ]


def test_a_failing_notify_command_is_reported_once(tmp_path: Path, trainers) -> None:
    root = tmp_path / "runs"
    env = clean_env(tmp_path, XDG_STATE_HOME=str(tmp_path / "state"))
    code = "import sys; print('ntfy: 403 forbidden', file=sys.stderr); sys.exit(22)"
    env["RGPU_NOTIFY_COMMAND"] = json.dumps([sys.executable, "-c", code, "{message}"])
    runs = [Trainer(root / f"exp{i}") for i in range(3)]
    trainers += runs
    watch = Watch(root, env)
    wait_until(lambda: state_files(tmp_path), "the state file", timeout=30, details=watch.details)
    for t in runs:
        t.kill()
    wait_until(lambda: len(watch.events("run_dead")) == 3, "three run_dead", timeout=30)
    wait_until(lambda: watch.events("notify_failed"), "notify_failed", details=watch.details)
    assert watch.stop() == 0
    [failed] = watch.events("notify_failed")
    assert "exit status 22: ntfy: 403 forbidden" in failed["message"]


def test_one_watcher_per_root(tmp_path: Path, setup) -> None:
    root, env, _ = setup
    watch = Watch(root, env)
    wait_until(lambda: state_files(tmp_path), "the state file", timeout=30, details=watch.details)
    second = subprocess.run(
        [str(RGPU_TUI), "watch", str(root)], env=env, capture_output=True, text=True, timeout=60
    )
    assert watch.stop() == 0
    assert second.returncode == 1
    assert second.stderr.startswith("rgpu-tui: another `rgpu-tui watch` is watching this root")
    assert f"(pid {watch.proc.pid})" in second.stderr


def test_a_bad_notify_command_is_a_one_line_error(tmp_path: Path) -> None:
    env = clean_env(tmp_path, XDG_STATE_HOME=str(tmp_path / "state"), RGPU_NOTIFY_COMMAND="curl")
    proc = subprocess.run(
        [str(RGPU_TUI), "watch", str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("rgpu-tui: RGPU_NOTIFY_COMMAND: notify_command must be an argv")
    assert proc.stderr.count("\n") == 1


@pytest.mark.training
@pytest.mark.parametrize("live_training", [30], indirect=True)
def test_a_real_training_killed_mid_run_is_one_run_dead(
    live_training, tmp_path: Path, setup, trainers
) -> None:
    """A real `libreyolo train` on the CPU, SIGKILLed after its first epoch (status.json
    keeps saying running): one run_dead, notified once."""
    t = live_training
    _root, env, notified = setup
    watch = Watch(t.project, env)
    wait_until(lambda: state_files(tmp_path), "the state file", timeout=60, details=watch.details)
    t.wait_for_epochs(1, 180.0)
    t.kill()
    wait_until(lambda: watch.events("run_dead"), "run_dead", timeout=60, details=watch.details)
    probe = Trainer(t.project / "probe")  # more refreshes go by: the death is told once
    trainers.append(probe)
    wait_until(lambda: watch.events("run_started"), "the probe's run_started", timeout=60)
    wait_until(lambda: notified_events(notified, "run_started"), "its notification")
    assert watch.stop() == 0
    [dead] = watch.events("run_dead")
    assert dead["run"] == str(t.run_dir)
    assert (
        "is DEAD at epoch" in dead["message"]
        and "status.json still says running" in dead["message"]
    )
    assert json.loads((t.run_dir / "status.json").read_text())["state"] == "running"
    assert notified_events(notified, "run_dead") == [["run_dead", dead["run"], dead["message"]]]


def test_a_state_folder_that_cannot_be_made_is_one_line_exit_1(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("")
    env = clean_env(tmp_path, XDG_STATE_HOME=str(tmp_path / "not-a-folder"))
    proc = subprocess.run(
        [str(RGPU_TUI), "watch", str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"rgpu-tui: cannot keep watch state in {tmp_path}/not-a-folder")
    assert "set XDG_STATE_HOME to a writable folder" in proc.stderr
    assert proc.stderr.count("\n") == 1
