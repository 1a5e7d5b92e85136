"""Simulated GPUs are marked wherever they appear on the screen: each
GPU row and the run header's GPUs, not only the pane's first line, and the fleet's hosts
table (its row and its totals) and `fleet --once`; NVML's never are."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from rgpu_tui.cli import fleet as fleet_cli
from rgpu_tui.core.fleet.fleet_summary import HostSummary, summarize, totals
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.tui.fleet.table import cells, totals_text
from rgpu_tui.tui.widgets.gpus import gpu_row

from .helpers import make_app, rendered, wait_for
from .test_gpu_pane import _recording


async def test_the_gpu_rows_and_the_run_header_say_simulated(runs_root):
    app = make_app(runs_root, gpus=2)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        run = app.snapshot.selected_run
        assert run.name == "live_exp" and run.gpu_indices == (0, 1)  # the sim's busy GPUs
        rows = [r.plain for r in app.view.gpu_pane._rows]
        assert rows[0].startswith("GPUs 2 simulated")
        assert [r[:16] for r in rows[1:3]] == [" 0 RTX 4090 sim ", " 1 RTX 4090 sim "]
        header = rendered(app.view.run_header).splitlines()[0]
        assert "sim GPUs 0-1" in header


def test_nvml_rows_are_not_marked() -> None:
    from rgpu_tui.core.model.snapshot import GpuDevice

    d = GpuDevice(index=0, name="NVIDIA H100", uuid="u", state="ok", util_percent=50.0)
    assert "sim" not in gpu_row(d, {}, 80, 4).plain
    assert gpu_row(d, {}, 80, 4, simulated=True).plain.startswith(" 0 H100 sim ")


# -- the fleet's hosts table (a host whose GPUs are simulated or replayed says so) --------


def _host(name: str, snap) -> HostSummary:
    state = SimpleNamespace(name=name, reachable=True, settled=True, error=None, since=None)
    return summarize(state, snap)


def test_the_hosts_table_marks_simulated_and_replayed_gpus(runs_root, tmp_path) -> None:
    root = str(runs_root.root)
    now = runs_root.now
    fake = Collector(root, fake_gpus=2, one_shot=True).refresh(now)
    replayed = Collector(
        root, gpu_replay=_recording(tmp_path / "gpus.jsonl", [[1], [], [1]]), one_shot=True
    ).refresh(now)
    # NVML cannot be had here: the simulated snapshot, its source said to be NVML's
    nvml = replace(fake, gpus=replace(fake.gpus, source="nvml"))
    hosts = [_host("sim-box", fake), _host("replay-box", replayed), _host("real-box", nvml)]
    assert [h.gpu_label for h in hosts] == ["sim", "replay", ""]
    gpus = [cells(h, now)["gpus"] for h in hosts]
    assert gpus[0].plain.startswith("2 sim ") and gpus[1].plain.startswith("3 replay ")
    assert gpus[2].plain.split()[0] == "2" and gpus[2].plain.split()[1].endswith("%")
    assert any("magenta" in str(s.style) for s in gpus[0].spans)
    assert totals_text(totals(hosts)).plain.startswith(
        "3 machines (3 reachable)  7 GPUs (2 simulated, 3 replayed)"
    )
    assert totals_text(totals(hosts[2:])).plain.startswith("1 machine (1 reachable)  2 GPUs  ")
    # `rgpu-tui fleet --once` says it the same way, from each host's JSON
    states = [
        SimpleNamespace(name=name, reachable=True, settled=True, error=None, since=None,
                        snapshot=snapshot_to_json(snap))
        for name, snap in (("sim-box", fake), ("replay-box", replayed), ("real-box", nvml))
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[2:] for line in fleet_cli.table(states)[1:]}
    assert rows["sim-box"][:2] == ["2", "sim"] and rows["replay-box"][:2] == ["3", "replay"]
    assert "sim" not in rows["real-box"]
