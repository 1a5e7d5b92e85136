"""Setup is never idle: a training started by hand that has no status.json
yet (downloading, caching its dataset) keeps the machine busy and is shown "setting up" with
its command and age. Real processes: a copy of a tiny script named `libreyolo` on a temporary
PATH run as `libreyolo train ...`, a script at .../libreyolo/training/_ddp_coordinator.py,
and processes holding files of a stand-in device folder open.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.waiting import wait_until

from rgpu_tui.core.machine.setup_procs import SetupWatcher, is_libreyolo_training
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.snapshot_text import snapshot_to_text

NOW = 1_800_000_000.0
SLEEPER = "import time\ntime.sleep(600)\n"


@pytest.mark.parametrize(
    "cmd",
    [
        ["libreyolo", "train", "model=LibreYOLO9s.pt", "data=coco8.yaml"],
        ["/venv/bin/libreyolo", "--verbose", "train", "data=x.yaml"],
        ["/venv/bin/python3", "/venv/bin/libreyolo", "train", "data=x.yaml"],
        ["python", "-u", "-m", "libreyolo", "train", "data=x.yaml"],
        ["python", "-m", "libreyolo.cli", "train"],
        ["python", "-m", "libreyolo.training.trainer"],
    ],
)
def test_libreyolo_trainings_by_their_command_line(cmd) -> None:
    assert is_libreyolo_training(cmd)


@pytest.mark.parametrize(
    "cmd",
    [
        [],
        ["libreyolo", "predict", "model=x.pt"],
        ["libreyolo"],
        ["python", "train.py"],
        ["python", "-c", "import libreyolo"],
        ["vim", "libreyolo", "train"],
        ["python", "-m", "libreyolo_extras", "train"],
    ],
)
def test_other_command_lines_are_not(cmd) -> None:
    assert not is_libreyolo_training(cmd)


class Procs:
    """Real processes started by a test, ended by their pids when it ends."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        self.started.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            proc.stdout.close()


@pytest.fixture
def procs() -> Iterator[Procs]:
    p = Procs()
    yield p
    p.close()


def fake_libreyolo(tmp_path: Path) -> dict:
    """An environment whose PATH has a `libreyolo` that sleeps (a training setting up)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "libreyolo"
    exe.write_text(f"#!{sys.executable}\nprint('ready', flush=True)\n{SLEEPER}")
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


def holder(tmp_path: Path, node: str) -> list[str]:
    """A process that opens `node` of the stand-in device folder and sleeps holding it."""
    path = tmp_path / "dev" / node
    path.parent.mkdir(exist_ok=True)
    path.touch()
    code = f"f = open({str(path)!r})\nprint('ready', flush=True)\n{SLEEPER}"
    return [sys.executable, "-c", code]


def started(proc: subprocess.Popen) -> subprocess.Popen:
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_a_hand_started_training_a_coordinator_and_a_cuda_holder_are_setting_up(
    tmp_path: Path, procs: Procs
) -> None:
    train = started(
        procs.start(["libreyolo", "train", "data=coco8.yaml"], env=fake_libreyolo(tmp_path))
    )
    coord_file = tmp_path / "site" / "libreyolo" / "training" / "_ddp_coordinator.py"
    coord_file.parent.mkdir(parents=True)
    coord_file.write_text(f"print('ready', flush=True)\n{SLEEPER}")
    coord = started(procs.start([sys.executable, str(coord_file), str(tmp_path / "job")]))
    cuda = started(procs.start(holder(tmp_path, "nvidia-uvm")))
    nvml_reader = started(procs.start(holder(tmp_path, "nvidiactl")))  # nvidia-smi, nvitop
    other = started(procs.start([sys.executable, "-c", f"print('ready', flush=True)\n{SLEEPER}"]))

    found = SetupWatcher(dev=str(tmp_path / "dev"), rescan_s=0).sample(NOW)
    by_pid = {p.pid: p for p in found}
    assert by_pid[train.pid].why == "libreyolo training"
    assert by_pid[train.pid].command.endswith("libreyolo train data=coco8.yaml")
    assert by_pid[coord.pid].why == "libreyolo DDP coordinator"
    assert by_pid[cuda.pid].why == f"holds {tmp_path}/dev/nvidia-uvm"
    assert nvml_reader.pid not in by_pid and other.pid not in by_pid
    assert os.getpid() not in by_pid
    assert all(p.started_at is not None and p.started_at <= NOW for p in found)


def test_setting_up_is_busy_shown_and_in_the_json(tmp_path: Path, procs: Procs) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    collector = Collector(
        str(root), fake_gpus=1, setup=SetupWatcher(dev=str(tmp_path / "dev"), rescan_s=0)
    )
    try:
        idle = [collector.refresh(now=NOW + t) for t in (0, 30)][-1]
        assert idle.gpus.idle and idle.cost.idle_now_seconds == 30.0 and idle.setup == ()
        train = started(
            procs.start(["libreyolo", "train", "data=coco8.yaml"], env=fake_libreyolo(tmp_path))
        )
        busy = collector.refresh(now=NOW + 60)
        [setup] = busy.setup
        assert setup.pid == train.pid and setup.why == "libreyolo training"
        assert not busy.gpus.idle and busy.cost.idle_now_seconds is None
        assert f"setting up: pid {train.pid} " in snapshot_to_text(busy)
        data = json.loads(json.dumps(snapshot_to_json(busy)))
        assert data["setup"][0]["pid"] == train.pid
        assert data["setup"][0]["why"] == "libreyolo training"
        assert data["setup"][0]["started_at"].endswith("+00:00")
        train.kill()
        train.wait(10)
        again = [collector.refresh(now=NOW + t) for t in (90, 120)][-1]
        assert again.setup == () and again.cost.idle_now_seconds == 30.0  # idle from 90
    finally:
        collector.close()


def test_without_gpu_readings_setting_up_is_busy_too(tmp_path: Path, procs: Procs) -> None:
    cuda = started(procs.start(holder(tmp_path, "nvidia-uvm")))
    collector = Collector(str(tmp_path), setup=SetupWatcher(dev=str(tmp_path / "dev"), rescan_s=0))
    try:
        snap = [collector.refresh(now=NOW + t) for t in (0, 30)][-1]
        assert not snap.gpus.available
        assert [p.pid for p in snap.setup] == [cuda.pid]
        assert snap.cost.idle_now_seconds is None
    finally:
        collector.close()


def test_a_gone_process_leaves_the_list(tmp_path: Path, procs: Procs) -> None:
    proc = started(procs.start(holder(tmp_path, "nvidia-uvm")))
    watcher = SetupWatcher(dev=str(tmp_path / "dev"), rescan_s=0)
    assert [p.pid for p in watcher.sample(NOW)] == [proc.pid]
    proc.kill()
    proc.wait(10)
    wait_until(lambda: watcher.sample(NOW) == (), "the killed holder to leave the list")
