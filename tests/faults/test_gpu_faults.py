"""NVML losing a GPU in the middle of a run (a stand-in, NVML cannot be made to fail for
real): the lost GPU says so, the others keep updating, the app shows it.

Run: .venv/bin/pytest tests/faults -q
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pynvml
from support.run_dir import make_run
from tui.helpers import rendered, wait_for

from faults.helpers import alive, only_run, status_doc
from rgpu_tui.core.machine.gpu import INIT_RETRY_S, GpuMonitor
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.render.snapshot_text import snapshot_to_text
from rgpu_tui.tui.app import RgpuApp

# -- GPUs ------------------------------------------------------------------------------


class FakeNvml:
    """The few pynvml calls the monitor needs, over `n` boards; `lost` holds the indexes
    NVML has lost (every query on them raises pynvml's GpuIsLost)."""

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVMLError = pynvml.NVMLError
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost

    def __init__(self, n: int):
        self.util = [50] * n
        self.lost: set[int] = set()

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.util)

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetHandleByIndex(self, index):
        if index in self.lost:
            raise pynvml.NVMLError_GpuIsLost()
        return index

    def _board(self, handle):
        if handle in self.lost:
            raise pynvml.NVMLError_GpuIsLost()
        return handle

    def nvmlDeviceGetName(self, h):
        return f"NVIDIA H100 #{self._board(h)}"

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{self._board(h):08d}"

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=self.util[self._board(h)], memory=10)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._board(h)
        return SimpleNamespace(used=1024**3, total=80 * 1024**3, free=79 * 1024**3)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 60 + self._board(h)


def test_nvml_loses_a_gpu_mid_run_the_others_keep_updating(tmp_path, collector, spawn) -> None:
    """Fault: NVML loses GPU 1 of 3 during a run (GpuIsLost): it reads LOST, the others keep
    updating, the run and the rest of the snapshot are untouched; it comes back later."""
    trainer = spawn(cwd=tmp_path / "runs" / "exp")
    make_run(tmp_path / "runs", "exp", status=status_doc(**alive(trainer)), epochs=3)
    fake = FakeNvml(3)
    c = collector(tmp_path / "runs", fake_gpus=None)
    c.gpus.close()
    c.gpus = GpuMonitor(nvml=fake)
    t = time.time()
    view = c.refresh(t).gpus
    assert [d.state for d in view.devices] == ["ok", "ok", "ok"]

    fake.lost.add(1)
    fake.util = [81, 99, 33]
    snap = c.refresh(t + 1)
    d0, d1, d2 = snap.gpus.devices
    assert (d0.state, d0.util_percent, d2.state, d2.util_percent) == ("ok", 81.0, "ok", 33.0)
    assert (d1.state, d1.flags, d1.util_percent, d1.name) == (
        "lost",
        ("lost",),
        None,
        "NVIDIA H100 #1",
    )
    assert only_run(snap).state == "running"
    assert "  1 NVIDIA H100 #1: LOST" in snapshot_to_text(snap).splitlines()
    assert snapshot_to_json(snap)["gpus"]["devices"][1]["state"] == "lost"

    fake.util = [90, 99, 12]
    d0, d1, d2 = c.refresh(t + 2).gpus.devices
    assert (d0.util_percent, d1.state, d2.util_percent) == (90.0, "lost", 12.0)
    assert d0.util_history == (50.0, 81.0, 90.0) and d1.util_history == (50.0, None, None)

    fake.lost.clear()  # the board is back: asked again after INIT_RETRY_S
    d1 = c.refresh(t + 2 + INIT_RETRY_S).gpus.devices[1]
    assert (d1.state, d1.util_percent) == ("ok", 99.0)


async def test_simulated_gpu_lost_in_the_app(tmp_path) -> None:
    """Fault: a simulated GPU lost mid-run (fake_lose): the pane says LOST on that row, the
    other rows keep their numbers and keep updating."""
    make_run(tmp_path / "runs", "exp", status=status_doc(), epochs=3)
    clock = [1000.0]
    app = RgpuApp(
        root=str(tmp_path / "runs"),
        interval=60.0,  # no refresh of its own before the test's; 10 samples of history
        clock=lambda: clock[0],
        fake_gpus=3,
        fake_lose={1: 5.0},
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert "LOST" not in rendered(app.view.gpu_pane)
        for t in (1010.0, 1020.0):
            clock[0] = t
            app.request_refresh()
            await wait_for(pilot, lambda t=t: app.snapshot.generated_at == t)
        await pilot.pause()
        rows = [line for line in rendered(app.view.gpu_pane).splitlines() if "4090" in line]
        assert len(rows) == 3
        assert "LOST" in rows[1] and "LOST" not in rows[0] + rows[2]
        assert "%" in rows[0] and "%" in rows[2]
        d0, d1, d2 = app.snapshot.gpus.devices
        assert d1.state == "lost" and d1.util_history[-2:] == (None, None)
        assert None not in d0.util_history + d2.util_history and len(d0.util_history) == 3
