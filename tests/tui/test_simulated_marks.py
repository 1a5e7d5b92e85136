"""Simulated GPUs are marked wherever they appear on the screen (issue 24, item 7): each
GPU row and the run header's GPUs, not only the pane's first line; NVML's never are."""

from __future__ import annotations

from rgpu_tui.tui.widgets.gpus import gpu_row

from .helpers import make_app, rendered, wait_for


async def test_the_gpu_rows_and_the_run_header_say_simulated(runs_root):
    app = make_app(runs_root, gpus=2)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        run = app.snapshot.selected_run
        assert run.name == "live_exp" and run.gpu_indices == (0, 1)  # the sim's busy GPUs
        rows = [r.plain for r in app.gpu_pane._rows]
        assert rows[0].startswith("GPUs 2 simulated")
        assert [r[:16] for r in rows[1:3]] == [" 0 RTX 4090 sim ", " 1 RTX 4090 sim "]
        header = rendered(app.run_header).splitlines()[0]
        assert "sim GPUs 0-1" in header


def test_nvml_rows_are_not_marked() -> None:
    from rgpu_tui.core.model.snapshot import GpuDevice

    d = GpuDevice(index=0, name="NVIDIA H100", uuid="u", state="ok", util_percent=50.0)
    assert "sim" not in gpu_row(d, {}, 80, 4).plain
    assert gpu_row(d, {}, 80, 4, simulated=True).plain.startswith(" 0 H100 sim ")
