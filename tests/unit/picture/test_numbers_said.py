"""Numbers say what they are: sizes in one unit wherever the same
bytes show, why the CPU is N/A in a single look, simulated GPUs marked in every text, and a
launch still starting keeps the machine from being called idle."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from rgpu_tui.core.away.events import disk_message, idle_message
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.formatting import fmt_bytes
from rgpu_tui.core.machine.gpu_waste import is_idle
from rgpu_tui.core.machine.system import SystemMonitor
from rgpu_tui.core.model.snapshot import (
    CostView,
    DiskInfo,
    GpuDevice,
    GpuView,
    RunInfo,
    Snapshot,
    SystemView,
)
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.picture.cost import cost_to_text
from rgpu_tui.core.picture.idle import machine_idle
from rgpu_tui.core.records.records import append_json_line
from rgpu_tui.core.render.snapshot_text import gpus_to_text, system_to_text

from .test_read_path import launch_line

FREE = 69_912_345_678  # 69.9 GB, 65.1 GiB: the header said "65.1G", a notice "69.9 GB"
TOTAL = 1_000_000_000_000


def _system(free: int = FREE, total: int = TOTAL, cpu: float | None = None) -> SystemView:
    disk = DiskInfo("/data", total, total - free, free)
    return SystemView(cpu, None, (0.5, 0.4, 0.3), 13_000_000_000, 67_400_000_000, 0, 0, disk)


def _snap(**kw) -> Snapshot:
    return Snapshot(generated_at=1000.0, root="/data/runs", root_exists=True, runs=(),
                    selected=None, **kw)  # fmt: skip


def test_the_disk_reads_the_same_in_the_header_a_warning_a_notice_and_snapshot() -> None:
    from rgpu_tui.tui.widgets.gpus import system_parts  # the GPU pane's header line

    free = fmt_bytes(FREE)
    assert free == "69.9 GB"
    assert f"disk {free} free" in system_parts(_system())
    nearly_full = _system(free=FREE, total=FREE * 20)  # 95% full: the notice's rule
    assert f"{free} free of" in disk_message(_snap(system=nearly_full))
    assert f"disk /data: {free} free of 1.0 TB" in system_to_text(_system())[0]
    # the machine pane's own warning (core.machine.system) says it the same way
    monitor = SystemMonitor("/")
    monitor._disk = lambda: DiskInfo("/data", FREE * 20, FREE * 19, FREE)  # noqa: SLF001
    assert any(f"{free} free on /data" in w for w in monitor.sample(0.0, ()).warnings)


def test_snapshot_text_gives_units_and_why_the_cpu_is_unknown() -> None:
    [line] = system_to_text(_system(cpu=None))
    assert line.startswith("CPU N/A (measured between two readings, one look has one")
    assert "RAM 13.0/67.4 GB" in line and "of 1.0 TB" in line
    [line] = system_to_text(_system(cpu=42.0))
    assert line.startswith("CPU 42%  load 0.50")


def _sim_gpus(source: str = "fake") -> GpuView:
    device = GpuDevice(index=0, name="RTX 4090", uuid="GPU-0", state="ok", util_percent=1.0)
    return GpuView(True, None, source, "simulated", (device, replace(device, index=1)), idle=True)


def test_simulated_gpus_are_marked_in_every_text() -> None:
    gpus = _sim_gpus()
    lines = gpus_to_text(gpus)
    assert lines[0].startswith("GPUs 2 (simulated)")
    assert lines[1].startswith("  0 RTX 4090 (simulated): util 1%")
    cost = CostView(configured=True, price_per_hour=2.1, idle_now_seconds=3600.0,
                    idle_minutes=30)  # fmt: skip
    text = cost_to_text(cost, Settings(price_per_hour=2.1), 1000.0, gpus=gpus)
    assert "GPUs          2 simulated (--fake-gpus: not this machine's): $1.05/h per GPU" in text
    assert "every simulated GPU under 5%" in idle_message(_snap(gpus=gpus, cost=cost))
    real = _sim_gpus("nvml")
    assert "(simulated)" not in "\n".join(gpus_to_text(real))
    assert "simulated" not in cost_to_text(cost, Settings(price_per_hour=2.1), 1000.0, gpus=real)
    assert "every GPU under 5%" in idle_message(_snap(gpus=real, cost=cost))


def test_a_starting_launch_is_busy() -> None:
    cold = [GpuDevice(index=0, name="x", uuid="u", state="ok", util_percent=0.0)]
    starting = RunInfo("/r/a (launch)", "a (launch)", "starting")
    assert not is_idle(cold, [starting])
    assert not machine_idle([starting], None)
    assert is_idle(cold, [replace(starting, state="failed")])


@pytest.mark.parametrize("fake_gpus", [1, 0], ids=["simulated-gpus", "no-gpu-readings"])
def test_the_idle_clock_does_not_count_while_a_launch_starts(tmp_path: Path, fake_gpus) -> None:
    """A real launch record whose process is alive with no status.json yet (loading the
    model): the header's IDLE, the idle banner and autostop all read this clock."""
    project = tmp_path / "runs"
    (project / ".rgpu" / "console").mkdir(parents=True)
    waiting = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
    )
    try:
        line = launch_line(project, "l-wait", "wait", waiting.pid, time.time())
        append_json_line(str(project / ".rgpu" / "launches.jsonl"), line)
        collector = Collector(str(project), fake_gpus=fake_gpus, settings=Settings(idle_minutes=1))
        try:
            t0 = time.time()
            snaps = [collector.refresh(now=t0 + 100 * i) for i in range(3)]
        finally:
            collector.close()
    finally:
        waiting.send_signal(signal.SIGKILL)
        waiting.wait(10)
    assert [r.state for r in snaps[-1].runs] == ["starting"]
    for snap in snaps:
        assert not snap.gpus.idle
        assert snap.cost.idle_now_seconds is None and not snap.cost.idle_alert
    assert snaps[-1].cost.idle_seconds == 0
