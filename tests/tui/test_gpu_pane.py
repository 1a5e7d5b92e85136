"""The GPU pane and the run header with a GPU recording (--gpu-replay): the pane says
"replay", says when NVML's pids are host pids, names each GPU's run; the header lists the
run's GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rgpu_tui.core.machine.gpu_procs import ProcessAttributor
from rgpu_tui.core.machine.gpu_replay import load_recording
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.widgets.gpus import GpuPane
from rgpu_tui.tui.widgets.run_header import RunHeader

from .helpers import rendered, wait_for

SLEEP = "time.sleep(600)\n"
HOST_PID = 4_000_001  # no process here has it (a host pid of a container's process)


def _recording(path, devices: list[list[int]]):
    sample = {
        "t": 0,
        "driver_version": "550.54.15",
        "devices": [
            {
                "index": i,
                "minor": i,
                "name": "NVIDIA H100 80GB HBM3",
                "util_percent": 95,
                "mem_used_mib": 40000,
                "mem_total_mib": 81559,
                "temperature_c": 66,
                "power_w": 500.0,
                "processes": [{"pid": pid, "used_mib": 39000} for pid in pids],
            }
            for i, pids in enumerate(devices)
        ],
    }
    path.write_text(json.dumps(sample) + "\n")
    return load_recording(str(path))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_replay_in_a_container(runs_root, tmp_path, size) -> None:
    # the running run's status.json pid is 1; GPUs 0 and 2 are its, GPU 1 a host process's
    recording = _recording(tmp_path / "gpus.jsonl", [[1], [HOST_PID], [1]])
    app = RgpuApp(str(runs_root.root), interval=3600.0, clock=runs_root.clock,
                  gpu_replay=recording)  # fmt: skip
    # as inside a container's pid namespace (this test machine is not one)
    app.collector.gpus.attributor = ProcessAttributor(initial_pidns=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        pane = [row for row in rendered(app.query_one(GpuPane)).splitlines() if row[:3] != "   "]
        assert pane[0].startswith("GPUs 3 replay driver 550.54.15  container: NVML gives host pids")
        assert "live_exp" in pane[1] and "live_exp" in pane[3]
        assert "host process" in pane[2]
        if size[0] >= 120:
            assert "live_exp (pid 1 38.1G)" in pane[1]
            assert "host process (host pid 4000001 38.1G)" in pane[2]
        header = rendered(app.query_one(RunHeader))
        assert "epoch 30/100  GPUs 0,2" in header
    live = app.snapshot.run(str(runs_root.root / "live_exp"))
    assert live.gpu_indices == (0, 2)
    assert app.snapshot.gpus.pid_namespace == "host"


async def test_a_training_setting_up_is_shown_and_the_machine_is_not_idle(runs_root, tmp_path):
    """`libreyolo train` started by hand (a real process: a tiny script
    named libreyolo on a temporary PATH) before its status.json: the pane says SETTING UP
    with its command, and not IDLE."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "libreyolo"
    exe.write_text(f"#!{sys.executable}\nimport time\nprint('ready', flush=True)\n" + SLEEP)
    exe.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    empty = tmp_path / "no_runs"
    empty.mkdir()
    train = subprocess.Popen(
        ["libreyolo", "train", "data=coco8.yaml"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert train.stdout.readline().strip() == "ready"
        app = RgpuApp(root=str(empty), interval=3600.0, clock=runs_root.clock, fake_gpus=1)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.snapshot is not None)
            text = rendered(app.query_one(GpuPane))
            assert "IDLE" not in text
            assert "\nSETTING UP " in text  # its age by the app's (frozen) clock
            assert (
                f"m (libreyolo training, no status.json yet: not idle) pid {train.pid} "
                "libreyolo train data=coco8.yaml\n"
            ) in text + "\n"
    finally:
        train.kill()
        train.wait(10)
        train.stdout.close()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_gpu_health_from_120_columns(runs_root, tmp_path, size) -> None:
    """A recording (--gpu-replay) with the health fields: from 120 columns
    each GPU has its health row, what slows it first; a GPU without them reads N/A, never 0;
    at 80 columns the rows are as before."""
    sample = {
        "t": 0,
        "driver_version": "550.54.15",
        "devices": [
            {
                "index": 0, "name": "NVIDIA H100 80GB HBM3", "util_percent": 61,
                "mem_used_mib": 40000, "mem_total_mib": 81559, "temperature_c": 87,
                "power_w": 500.0, "processes": [{"pid": 1, "used_mib": 39000}],
                "clock_events": ["hw_thermal"], "sm_clock_mhz": 1410, "sm_clock_max_mhz": 1980,
                "mem_clock_mhz": 2619, "mem_clock_max_mhz": 2619, "pcie_gen": 5,
                "pcie_gen_max": 5, "pcie_width": 16, "pcie_width_max": 16, "pcie_tx_kbs": 2048,
                "pcie_rx_kbs": 30720, "ecc_corrected": 0, "ecc_uncorrected": 0,
                "retired_pages": 0, "remapped_rows": 0, "remap_pending": False,
                "xid_count": 2, "xid_last": 79, "fan_percent": 100, "pstate": "P0",
            },
            {"index": 1, "name": "NVIDIA H100 80GB HBM3", "util_percent": 95,
             "mem_used_mib": 40000, "mem_total_mib": 81559, "temperature_c": 66,
             "power_w": 500.0, "processes": [{"pid": 1, "used_mib": 39000}]},
        ],
    }  # fmt: skip
    path = tmp_path / "health.jsonl"
    path.write_text(json.dumps(sample) + "\n")
    app = RgpuApp(str(runs_root.root), interval=3600.0, clock=runs_root.clock,
                  gpu_replay=load_recording(str(path)))  # fmt: skip
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        rows = rendered(app.query_one(GpuPane)).splitlines()
    if size[0] < 120:
        assert not [r for r in rows if r.startswith("   ")]
        return
    assert rows[1].startswith(" 0 H100")
    # too much for one row at 120 columns: the rest on a second
    assert rows[2] == (
        "   thermal throttling at 87C · XID 2 (last 79) · ECC 0/0 retired 0 remap 0 · "
        "PCIe 5x16/5x16 ↑2.0 ↓30.0MB/s"
    )
    assert rows[3] == "   SM 1410/1980 mem 2619/2619MHz · P0 fan 100%"
    assert rows[4].startswith(" 1 H100")
    assert rows[5] == (
        "   XID N/A · ECC N/A retired N/A remap N/A · PCIe N/A · SM N/A mem N/A · "
        "P-state N/A fan N/A"
    )
