"""core.machine.gpu: GpuMonitor against a fake pynvml module, simulated GPUs, waste signals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pynvml
import pytest

from rgpu_tui.core.machine import gpu_procs
from rgpu_tui.core.machine.gpu import GpuMonitor
from rgpu_tui.core.machine.gpu_sim import fake_gpus_from_env
from rgpu_tui.core.machine.gpu_waste import (
    STARVED_GUESS,
    find_stragglers,
    is_idle,
    parse_profile_summary,
    read_profile_verdict,
    window_mean,
)
from rgpu_tui.core.machine.nvml_source import INIT_RETRY_S
from rgpu_tui.core.model.snapshot import GpuDevice

from ..gpu_fakes import MIB, T0, FakeGpu, FakeNvml, dev, gpus, proc, run_info


@pytest.fixture
def child_of_parent() -> Iterator[tuple[int, int]]:
    """(parent pid, child pid): a python that started `sleep 30`; both killed on teardown."""
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)",
        ]
    )
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 10
        while not children:
            children = psutil.Process(parent.pid).children()
            if time.monotonic() > deadline:  # pragma: no cover
                pytest.fail("the parent never started its child")
            time.sleep(0.01)
        yield parent.pid, children[0].pid
    finally:
        for c in children:
            try:
                c.kill()  # reaped by its parent's reaper once the parent is gone
            except psutil.Error:
                pass
        parent.kill()
        parent.wait()


# -- NVML path: devices and fields ------------------------------------------------------


def test_several_gpus_every_field() -> None:
    fake = FakeNvml(gpus(3))
    fake.gpus[1].util = 77
    fake.gpus[2].mig = (1, 1)
    fake.gpus[2].pstate = 0
    mon = GpuMonitor(nvml=fake)
    view = mon.sample(T0, (), 10.0)
    assert view.available is True and view.reason is None
    assert view.source == "nvml"
    assert view.driver_version == "550.54.15"  # bytes decoded
    assert [d.index for d in view.devices] == [0, 1, 2]
    d0 = dev(view, 0)
    assert d0.name == "NVIDIA H100 80GB HBM3"
    assert d0.uuid == "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"
    assert d0.state == "ok"
    assert d0.util_percent == 50.0 and d0.mem_util_percent == 20.0
    assert d0.mem_used_mib == 1000.0 and d0.mem_total_mib == 81559.0
    assert d0.temperature_c == 61.0
    assert d0.power_w == 312.5 and d0.power_limit_w == 700.0  # mW -> W
    assert d0.sm_clock_mhz == 1980.0 and d0.fan_percent == 45.0
    assert d0.pstate == "P2" and d0.mig_mode == "disabled"
    assert d0.processes == ()
    assert dev(view, 1).util_percent == 77.0
    assert dev(view, 2).mig_mode == "enabled" and dev(view, 2).pstate == "P0"
    assert dev(view, 1).uuid != d0.uuid


def test_str_driver_version_and_names_accepted() -> None:
    fake = FakeNvml([FakeGpu(name="Tesla T4", uuid="GPU-t4")], driver="535.104.05")
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert view.driver_version == "535.104.05"
    assert dev(view, 0).name == "Tesla T4" and dev(view, 0).uuid == "GPU-t4"


def test_not_supported_fields_are_none_others_intact() -> None:
    fake = FakeNvml(gpus(2))
    fake.gpus[1].unsupported = {
        "nvmlDeviceGetFanSpeed",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetPerformanceState",
        "nvmlDeviceGetMigMode",
    }
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    d1 = dev(view, 1)
    assert d1.state == "ok"
    assert d1.fan_percent is None and d1.power_w is None and d1.power_limit_w is None
    assert d1.sm_clock_mhz is None and d1.pstate is None and d1.mig_mode is None
    assert d1.util_percent == 50.0 and d1.mem_used_mib == 1000.0 and d1.temperature_c == 61.0
    assert d1.name == "NVIDIA H100 80GB HBM3"
    d0 = dev(view, 0)  # the other board is untouched
    assert d0.fan_percent == 45.0 and d0.power_w == 312.5 and d0.pstate == "P2"


def test_utilisation_not_supported_keeps_memory() -> None:
    fake = FakeNvml(gpus(1, unsupported={"nvmlDeviceGetUtilizationRates"}))
    d = dev(GpuMonitor(nvml=fake).sample(T0, (), None), 0)
    assert d.util_percent is None and d.mem_util_percent is None
    assert d.mem_used_mib == 1000.0 and d.state == "ok"


def test_unknown_pstate_is_none() -> None:
    fake = FakeNvml(gpus(1, pstate=pynvml.NVML_PSTATE_UNKNOWN))
    assert dev(GpuMonitor(nvml=fake).sample(T0, (), None), 0).pstate is None


def test_names_uuids_limits_read_once() -> None:
    fake = FakeNvml(gpus(3))
    mon = GpuMonitor(nvml=fake)
    for k in range(5):
        view = mon.sample(T0 + k, (), None)
    assert fake.calls["nvmlDeviceGetName"] == 3
    assert fake.calls["nvmlDeviceGetUUID"] == 3
    assert fake.calls["nvmlDeviceGetEnforcedPowerLimit"] == 3
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 3  # handles cached too
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == 15  # measurements every time
    assert fake.calls["nvmlInit"] == 1
    assert all(d.power_limit_w == 700.0 and d.name for d in view.devices)


def test_measurements_follow_the_board() -> None:
    fake = FakeNvml(gpus(1))
    mon = GpuMonitor(nvml=fake)
    mon.sample(T0, (), None)
    fake.gpus[0].util, fake.gpus[0].used = 93, 5000 * MIB
    d = dev(mon.sample(T0 + 1, (), None), 0)
    assert d.util_percent == 93.0 and d.mem_used_mib == 5000.0


# -- processes ---------------------------------------------------------------------------


def test_unknown_pid_and_memory_not_available(dead_pid: int) -> None:
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [
        proc(dead_pid, None),
        proc(os.getpid(), pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value),
    ]
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    by_pid = {p.pid: p for p in dev(view, 0).processes}
    unknown = by_pid[dead_pid]
    assert unknown.kind == "unknown" and unknown.name is None and unknown.run_dir is None
    assert unknown.used_mib is None
    mine = by_pid[os.getpid()]
    assert mine.kind == "process"  # ours, no run
    assert mine.name == psutil.Process().name()
    assert mine.used_mib is None  # NVML_VALUE_NOT_AVAILABLE


def test_process_of_the_run_pid_itself(tmp_path: Path) -> None:
    fake = FakeNvml(gpus(2))
    fake.gpus[0].compute = [proc(os.getpid(), 2048 * MIB)]
    run = run_info(str(tmp_path / "r1"), os.getpid())
    view = GpuMonitor(nvml=fake).sample(T0, (run,), None)
    (p,) = dev(view, 0).processes
    assert p.kind == "run" and p.run_dir == run.run_dir and p.used_mib == 2048.0
    assert dev(view, 1).processes == ()


@pytest.mark.parametrize("state", ["completed", "failed", "dead", "unknown"])
def test_finished_runs_do_not_claim_processes(tmp_path: Path, state: str) -> None:
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [proc(os.getpid(), MIB)]
    run = run_info(str(tmp_path / "r1"), os.getpid(), state=state)
    (p,) = dev(GpuMonitor(nvml=fake).sample(T0, (run,), None), 0).processes
    assert p.kind == "process" and p.run_dir is None


def test_stalled_run_still_claims_its_processes(tmp_path: Path) -> None:
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [proc(os.getpid(), MIB)]
    run = run_info(str(tmp_path / "r1"), os.getpid(), state="stalled")
    (p,) = dev(GpuMonitor(nvml=fake).sample(T0, (run,), None), 0).processes
    assert p.kind == "run" and p.run_dir == run.run_dir


def test_child_of_the_run_pid_is_the_run(
    tmp_path: Path, child_of_parent, live_process: psutil.Process
) -> None:
    parent_pid, child_pid = child_of_parent
    fake = FakeNvml(gpus(2))
    fake.gpus[1].compute = [proc(child_pid, 512 * MIB)]
    run = run_info(str(tmp_path / "ddp"), parent_pid)
    other = run_info(str(tmp_path / "other"), live_process.pid)  # not an ancestor
    view = GpuMonitor(nvml=fake).sample(T0, (other, run), None)
    (p,) = dev(view, 1).processes
    assert p.pid == child_pid and p.name == "sleep"
    assert p.kind == "run" and p.run_dir == run.run_dir
    # without the run the same child is just a process of ours
    view = GpuMonitor(nvml=fake).sample(T0, (other,), None)
    (p,) = dev(view, 1).processes
    assert p.kind == "process" and p.run_dir is None


def test_compute_and_graphics_merged_by_pid(dead_pid: int) -> None:
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [proc(os.getpid(), 100 * MIB)]
    fake.gpus[0].graphics = [proc(os.getpid(), 300 * MIB), proc(dead_pid, 50 * MIB)]
    procs = dev(GpuMonitor(nvml=fake).sample(T0, (), None), 0).processes
    assert sorted(p.pid for p in procs) == sorted([os.getpid(), dead_pid])
    assert {p.pid: p.used_mib for p in procs}[os.getpid()] == 300.0


def test_other_user_by_username(monkeypatch) -> None:
    monkeypatch.setattr(gpu_procs, "_my_username", lambda: "someone-else-entirely")
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [proc(os.getpid(), MIB)]
    (p,) = dev(GpuMonitor(nvml=fake).sample(T0, (), None), 0).processes
    assert p.kind == "other-user" and p.name == psutil.Process().name()


def test_other_user_by_access_denied(monkeypatch) -> None:
    real = psutil.Process

    class Denied(real):
        def username(self):
            raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(gpu_procs.psutil, "Process", Denied)
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [proc(os.getpid(), MIB)]
    (p,) = dev(GpuMonitor(nvml=fake).sample(T0, (), None), 0).processes
    assert p.kind == "other-user"


def test_process_lookups_failing_never_raise(monkeypatch) -> None:
    def broken(pid):
        raise RuntimeError("psutil exploded")

    monkeypatch.setattr(gpu_procs.psutil, "Process", broken)
    fake = FakeNvml(gpus(1))
    fake.gpus[0].compute = [proc(4242, MIB)]
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert view.available
    assert dev(view, 0).processes[0].kind == "unknown"


# -- lost GPUs, no library, re-initialisation ------------------------------------------------


def test_gpu_lost_mid_run_others_keep_updating() -> None:
    fake = FakeNvml(gpus(3))
    mon = GpuMonitor(nvml=fake)
    first = mon.sample(T0, (), None)
    name1, uuid1 = dev(first, 1).name, dev(first, 1).uuid
    fake.gpus[1].lost = True
    fake.gpus[0].util, fake.gpus[2].util = 71, 72
    view = mon.sample(T0 + 1, (), None)
    lost = dev(view, 1)
    assert lost.state == "lost" and "lost" in lost.flags
    assert lost.name == name1 and lost.uuid == uuid1  # from the cache
    assert lost.util_percent is None and lost.mem_used_mib is None
    assert dev(view, 0).util_percent == 71.0 and dev(view, 0).state == "ok"
    assert dev(view, 2).util_percent == 72.0
    assert view.available
    # others keep updating on later refreshes; the lost one is not asked again for 60 s
    fake.gpus[0].util = 81
    asked = fake.calls[("nvmlDeviceGetUtilizationRates", 1)]
    view = mon.sample(T0 + 2, (), None)
    assert dev(view, 0).util_percent == 81.0 and dev(view, 1).state == "lost"
    assert fake.calls[("nvmlDeviceGetUtilizationRates", 1)] == asked
    assert fake.calls["nvmlShutdown"] == 0  # not every device is lost
    assert dev(view, 1).util_history == (50.0, None, None)
    # it comes back: asked again after 60 s
    fake.gpus[1].lost = False
    assert dev(mon.sample(T0 + 30, (), None), 1).state == "lost"
    back = dev(mon.sample(T0 + 1 + INIT_RETRY_S, (), None), 1)
    assert back.state == "ok" and back.flags == () and back.util_percent == 50.0


def test_gpu_lost_with_pynvml_unknown_error() -> None:
    class UnknownGpu(FakeNvml):
        def nvmlDeviceGetTemperature(self, h, sensor):
            if h[1] == 0:
                raise pynvml.NVMLError_Unknown()
            return super().nvmlDeviceGetTemperature(h, sensor)

    view = GpuMonitor(nvml=UnknownGpu(gpus(2))).sample(T0, (), None)
    assert dev(view, 0).state == "lost" and dev(view, 1).state == "ok"


def test_handle_error_is_a_lost_gpu() -> None:
    fake = FakeNvml(gpus(2))
    fake.gpus[0].no_handle = True
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert dev(view, 0).state == "lost" and dev(view, 0).flags == ("lost",)
    assert dev(view, 1).state == "ok"


def test_every_gpu_lost_shuts_down_and_restarts_after_60_s() -> None:
    fake = FakeNvml(gpus(2))
    mon = GpuMonitor(nvml=fake)
    mon.sample(T0, (), None)
    for g in fake.gpus:
        g.lost = True
    view = mon.sample(T0 + 1, (), None)
    assert [d.state for d in view.devices] == ["lost", "lost"]
    assert fake.calls["nvmlShutdown"] == 1
    # while waiting: still shown lost with their names, nothing asked of NVML
    before = fake.calls["nvmlDeviceGetUtilizationRates"]
    view = mon.sample(T0 + 30, (), None)
    assert [d.state for d in view.devices] == ["lost", "lost"]
    assert dev(view, 0).name == "NVIDIA H100 80GB HBM3"
    assert fake.calls["nvmlInit"] == 1
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == before
    # 60 s after giving up: started again, the boards answer again
    for g in fake.gpus:
        g.lost = False
    assert mon.sample(T0 + 60, (), None).devices[0].state == "lost"
    view = mon.sample(T0 + 1 + INIT_RETRY_S, (), None)
    assert fake.calls["nvmlInit"] == 2
    assert [d.state for d in view.devices] == ["ok", "ok"]
    assert fake.calls["nvmlDeviceGetName"] == 4  # read again after the restart


def test_uninitialised_nvml_restarts_later() -> None:
    fake = FakeNvml(gpus(1))
    mon = GpuMonitor(nvml=fake)
    assert mon.sample(T0, (), None).available
    fake.uninitialised_queries = True
    view = mon.sample(T0 + 5, (), None)
    assert view.available is False and "not initialised" in view.reason
    assert fake.calls["nvmlShutdown"] == 1
    fake.uninitialised_queries = False
    assert mon.sample(T0 + 30, (), None).available is False
    assert fake.calls["nvmlInit"] == 1
    assert mon.sample(T0 + 5 + INIT_RETRY_S, (), None).available is True
    assert fake.calls["nvmlInit"] == 2


@pytest.mark.parametrize(
    "error, words",
    [
        (pynvml.NVMLError_LibraryNotFound(), "NVIDIA driver not found"),
        (pynvml.NVMLError_DriverNotLoaded(), "NVIDIA driver not loaded"),
        (pynvml.NVMLError_NoPermission(), "No permission"),
        (OSError("libnvidia-ml.so.1: cannot open shared object file"), "NVML failed to start"),
    ],
)
def test_no_library_or_driver(error, words) -> None:
    fake = FakeNvml(gpus(1), init_error=error)
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert view.available is False and view.source == "nvml"
    assert view.devices == () and view.idle is False
    assert words in view.reason
    assert "\n" not in view.reason and view.reason.count(". ") == 0  # one sentence


def test_no_pynvml_module(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    view = GpuMonitor().sample(T0, (), None)
    assert view.available is False and view.source == "nvml"
    assert "nvidia-ml-py" in view.reason


def test_real_pynvml_without_driver_says_so() -> None:
    """This machine has no NVIDIA driver: the real module must give one clear sentence."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # pragma: no cover
        pynvml.nvmlShutdown()
        pytest.skip("an NVIDIA driver is present")
    mon = GpuMonitor()
    view = mon.sample(T0, (), None)
    mon.close()
    assert view.available is False
    assert view.reason.startswith("NVIDIA driver not")


def test_init_retried_at_most_every_60_s() -> None:
    fake = FakeNvml(gpus(1), init_error=pynvml.NVMLError_DriverNotLoaded())
    mon = GpuMonitor(nvml=fake)
    for _ in range(50):
        view = mon.sample(T0, (), None)  # frozen clock
    assert fake.calls["nvmlInit"] == 1 and view.available is False
    mon.sample(T0 + INIT_RETRY_S - 1, (), None)
    assert fake.calls["nvmlInit"] == 1
    fake.init_error = None
    view = mon.sample(T0 + INIT_RETRY_S, (), None)
    assert fake.calls["nvmlInit"] == 2 and view.available is True
    for k in range(5):
        mon.sample(T0 + INIT_RETRY_S + k, (), None)
    assert fake.calls["nvmlInit"] == 2


def test_no_gpus_seen() -> None:
    fake = FakeNvml([])
    mon = GpuMonitor(nvml=fake)
    view = mon.sample(T0, (), None)
    assert view.available is False and "no NVIDIA GPU" in view.reason
    assert fake.calls["nvmlShutdown"] == 1


def test_close_is_idempotent() -> None:
    fake = FakeNvml(gpus(1))
    mon = GpuMonitor(nvml=fake)
    mon.close()
    assert fake.calls["nvmlShutdown"] == 0  # never started
    mon.sample(T0, (), None)
    mon.close()
    mon.close()
    assert fake.calls["nvmlShutdown"] == 1


def test_sample_never_raises(monkeypatch) -> None:
    mon = GpuMonitor(nvml=FakeNvml(gpus(1)))

    def boom(*args):
        raise RuntimeError("bug")

    monkeypatch.setattr(mon._waste, "finish", boom)
    view = mon.sample(T0, (), None)
    assert view.available is False and "RuntimeError" in view.reason


def test_error_classes_without_codes_are_recognised() -> None:
    """A pynvml-like module whose errors carry no `.value`: classified by class name."""

    class NVMLError(Exception):
        pass

    class NVMLError_GpuIsLost(NVMLError):  # noqa: N801
        pass

    class Lost(FakeNvml):
        def nvmlDeviceGetMemoryInfo(self, h):
            if h[1] == 1:
                raise NVMLError_GpuIsLost()
            return super().nvmlDeviceGetMemoryInfo(h)

    fake = Lost(gpus(2))
    fake.NVMLError_GpuIsLost = NVMLError_GpuIsLost
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert dev(view, 1).state == "lost" and dev(view, 0).state == "ok"


# -- history -----------------------------------------------------------------------------------


def test_history_capped_and_oldest_first() -> None:
    fake = FakeNvml(gpus(2))
    mon = GpuMonitor(nvml=fake, interval=2.0, history_seconds=10.0)  # 5 samples
    for k in range(12):
        fake.gpus[0].util = k
        fake.gpus[0].used = k * MIB
        view = mon.sample(T0 + 2 * k, (), None)
    d0 = dev(view, 0)
    assert d0.util_history == (7.0, 8.0, 9.0, 10.0, 11.0)
    assert d0.mem_history == (7.0, 8.0, 9.0, 10.0, 11.0)
    assert len(dev(view, 1).util_history) == 5


def test_history_grows_one_sample_per_call() -> None:
    mon = GpuMonitor(nvml=FakeNvml(gpus(1)))
    for k in range(3):
        view = mon.sample(T0, (), None)  # even with a frozen clock
        assert len(dev(view, 0).util_history) == k + 1


# -- straggler ---------------------------------------------------------------------------------


def test_find_stragglers_pure() -> None:
    assert find_stragglers({0: 95, 1: 95, 2: 95, 3: 41}) == [(3, 41, 95)]
    assert find_stragglers({0: 95, 1: 95, 2: 95, 3: 67}) == []  # 67 >= 0.7 * 95 = 66.5
    assert find_stragglers({0: 95, 1: 66}) == [(1, 66, 95)]
    assert find_stragglers({0: 95}) == []  # one GPU: nothing to compare with
    assert find_stragglers({0: 10, 1: 2}) == []  # the others are idle themselves


def test_window_mean_pure() -> None:
    samples = [(T0 - 100, 0.0), (T0 - 50, 60.0), (T0 - 10, None), (T0, 80.0)]
    assert window_mean(samples, T0, 60.0) == (70.0, 50.0)
    assert window_mean([], T0, 60.0) == (None, 0.0)


def _straggler_setup(tmp_path: Path, utils: list[int]):
    fake = FakeNvml(gpus(len(utils)))
    for g, u in zip(fake.gpus, utils, strict=True):
        g.util = u
        g.compute = [proc(os.getpid(), 4000 * MIB)]
    run = run_info(str(tmp_path / "exp7"), os.getpid(), name="exp7")
    return fake, run


def test_straggler_flagged_and_warned(tmp_path: Path) -> None:
    fake, run = _straggler_setup(tmp_path, [95, 95, 95, 41])
    mon = GpuMonitor(nvml=fake)
    view = None
    for k in range(61):
        view = mon.sample(T0 + k, (run,), 20.0)
    assert "straggler" in dev(view, 3).flags
    assert all("straggler" not in dev(view, i).flags for i in range(3))
    assert "GPU 3 straggling in run exp7: 41% vs 95% on its other GPUs" in view.warnings


def test_straggler_needs_history_then_recovers(tmp_path: Path) -> None:
    fake, run = _straggler_setup(tmp_path, [95, 95, 41])
    mon = GpuMonitor(nvml=fake)
    view = mon.sample(T0, (run,), None)
    assert view.warnings == ()  # one reading is not a 60-second mean
    for k in range(1, 31):
        view = mon.sample(T0 + k, (run,), None)
    assert "straggler" in dev(view, 2).flags
    fake.gpus[2].util = 95  # it catches up: the 60-s mean climbs back
    for k in range(31, 100):
        view = mon.sample(T0 + k, (run,), None)
    assert view.warnings == () and "straggler" not in dev(view, 2).flags


def test_no_straggler_when_balanced_or_not_running(tmp_path: Path) -> None:
    fake, run = _straggler_setup(tmp_path, [95, 93, 94, 90])
    mon = GpuMonitor(nvml=fake)
    for k in range(61):
        view = mon.sample(T0 + k, (run,), None)
    assert view.warnings == () and all(d.flags == () for d in view.devices)
    fake, run = _straggler_setup(tmp_path, [95, 95, 95, 41])
    stalled = run_info(run.run_dir, run.pid, state="stalled")
    mon = GpuMonitor(nvml=fake)
    for k in range(61):
        view = mon.sample(T0 + k, (stalled,), None)
    assert not any("straggling" in w for w in view.warnings)


def test_straggler_only_among_the_runs_own_gpus(tmp_path: Path, dead_pid: int) -> None:
    fake, run = _straggler_setup(tmp_path, [95, 95, 10])
    fake.gpus[2].compute = [proc(dead_pid, MIB)]  # GPU 2 is not this run's
    mon = GpuMonitor(nvml=fake)
    for k in range(61):
        view = mon.sample(T0 + k, (run,), None)
    assert view.warnings == ()


# -- starved -----------------------------------------------------------------------------------


def _starved_setup(tmp_path: Path, util: int = 30):
    fake = FakeNvml(gpus(2, util=util))
    for g in fake.gpus:
        g.compute = [proc(os.getpid(), 4000 * MIB)]
    run_dir = tmp_path / "slow"
    run_dir.mkdir()
    return fake, run_info(str(run_dir), os.getpid(), name="slow")


def test_starved_after_two_minutes_with_busy_cpu(tmp_path: Path) -> None:
    fake, run = _starved_setup(tmp_path)
    mon = GpuMonitor(nvml=fake)
    for k in range(120):
        view = mon.sample(T0 + k, (run,), 95.0)
        assert "starved" not in dev(view, 0).flags, k
    view = mon.sample(T0 + 120, (run,), 95.0)
    assert [d.flags for d in view.devices] == [("starved",), ("starved",)]
    assert view.warnings == (STARVED_GUESS,)  # no profile_summary.json: the guess
    # the CPU calms down: no longer the data loader's fault
    view = mon.sample(T0 + 121, (run,), 60.0)
    assert view.warnings == () and dev(view, 0).flags == ()


def test_starved_needs_continuous_low_utilisation(tmp_path: Path) -> None:
    fake, run = _starved_setup(tmp_path)
    mon = GpuMonitor(nvml=fake)
    for k in range(100):
        mon.sample(T0 + k, (run,), 95.0)
    fake.gpus[0].util = fake.gpus[1].util = 90  # one good sample resets the stretch
    mon.sample(T0 + 100, (run,), 95.0)
    fake.gpus[0].util = fake.gpus[1].util = 30
    for k in range(101, 221):
        view = mon.sample(T0 + k, (run,), 95.0)
        assert view.warnings == (), k
    view = mon.sample(T0 + 221, (run,), 95.0)
    assert view.warnings == (STARVED_GUESS,)


def test_not_starved_when_cpu_is_quiet_or_unknown(tmp_path: Path) -> None:
    fake, run = _starved_setup(tmp_path)
    mon = GpuMonitor(nvml=fake)
    for k in range(200):
        view = mon.sample(T0 + k, (run,), 50.0 if k % 2 else None)
    assert view.warnings == () and all(d.flags == () for d in view.devices)


def test_not_starved_when_gpus_busy(tmp_path: Path) -> None:
    fake, run = _starved_setup(tmp_path, util=60)
    mon = GpuMonitor(nvml=fake)
    for k in range(200):
        view = mon.sample(T0 + k, (run,), 99.0)
    assert view.warnings == ()


def test_starved_shows_the_profiler_verdict(tmp_path: Path) -> None:
    fake, run = _starved_setup(tmp_path)
    summary = {
        "real": {"step_ms": 120.0, "dataload_frac": 0.35},
        "bound": "dataloader",
        "bound_why": "the GPU waits on input data (~35% of the step)",
    }
    Path(run.run_dir, "profile_summary.json").write_text(json.dumps(summary, indent=2))
    mon = GpuMonitor(nvml=fake)
    for k in range(121):
        view = mon.sample(T0 + k, (run,), 95.0)
    assert view.warnings == (
        "GPU starved — profiler verdict: data-loader bound: "
        "the GPU waits on input data (~35% of the step)",
    )
    assert "starved" in dev(view, 1).flags


@pytest.mark.parametrize(
    "content", ["{not json", "[1, 2]", json.dumps({"bound": 3}), json.dumps({"real": {}}), ""]
)
def test_starved_malformed_profile_falls_back_to_the_guess(tmp_path: Path, content) -> None:
    fake, run = _starved_setup(tmp_path)
    Path(run.run_dir, "profile_summary.json").write_text(content)
    mon = GpuMonitor(nvml=fake)
    for k in range(121):
        view = mon.sample(T0 + k, (run,), 95.0)
    assert view.warnings == (STARVED_GUESS,)


def test_profile_summary_helpers(tmp_path: Path) -> None:
    assert read_profile_verdict(str(tmp_path / "missing")) is None
    assert parse_profile_summary({"bound": "compute"}) == (
        "GPU starved — profiler verdict: compute bound"
    )
    assert parse_profile_summary({"bound": "weird", "bound_why": "a\nb"}) == (
        "GPU starved — profiler verdict: weird: a b"
    )
    assert parse_profile_summary(None) is None


def test_profile_summary_fifo_never_blocks(tmp_path: Path) -> None:
    """A FIFO named profile_summary.json (no writer) is refused, not opened for reading
    (a plain open() would wait for a writer forever)."""
    import threading

    os.mkfifo(tmp_path / "profile_summary.json")
    got = []
    reader = threading.Thread(target=lambda: got.append(read_profile_verdict(str(tmp_path))))
    reader.daemon = True  # before the fix it never returns; the test must still end
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive() and got == [None]


# -- idle ----------------------------------------------------------------------------------------


def test_idle(tmp_path: Path) -> None:
    """The monitor says whether the GPUs idle; how long is the idle clock's (core.picture.idle,
    test_idle_clock.py)."""
    fake = FakeNvml(gpus(2, util=1))
    fake.gpus[1].util = 4
    mon = GpuMonitor(nvml=fake)
    done = run_info(str(tmp_path / "done"), None, state="completed")
    view = mon.sample(T0, (done,), 5.0)
    assert view.idle is True and view.idle_seconds is None  # the Collector sets it
    assert [d.flags for d in view.devices] == [("idle",), ("idle",)]
    fake.gpus[1].util = 5  # 5% is not under 5%
    view = mon.sample(T0 + 301, (done,), 5.0)
    assert view.idle is False
    assert all("idle" not in d.flags for d in view.devices)


def test_not_idle_while_a_run_is_running(tmp_path: Path) -> None:
    fake = FakeNvml(gpus(2, util=0))
    running = run_info(str(tmp_path / "r"), os.getpid())
    mon = GpuMonitor(nvml=fake)
    view = mon.sample(T0, (running,), 5.0)
    assert view.idle is False
    assert all("idle" not in d.flags for d in view.devices)
    stalled = run_info(str(tmp_path / "r"), os.getpid(), state="stalled")
    assert mon.sample(T0 + 1, (stalled,), 5.0).idle is True  # paying for a stuck run


def test_idle_ignores_devices_without_utilisation_and_lost_ones() -> None:
    fake = FakeNvml(gpus(3, util=2))
    fake.gpus[1].unsupported = {"nvmlDeviceGetUtilizationRates"}
    fake.gpus[2].lost = True
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert view.idle is True
    assert dev(view, 0).flags == ("idle",) and dev(view, 1).flags == ("idle",)
    assert dev(view, 2).flags == ("lost",)


def test_is_idle_pure() -> None:
    ok = GpuDevice(index=0, name=None, uuid=None, state="ok", util_percent=1.0)
    blind = GpuDevice(index=1, name=None, uuid=None, state="ok", util_percent=None)
    busy = GpuDevice(index=2, name=None, uuid=None, state="ok", util_percent=50.0)
    assert is_idle([ok, blind], []) is True
    assert is_idle([ok, busy], []) is False
    assert is_idle([blind], []) is False  # nothing measured: nothing claimed
    assert is_idle([], []) is False


# -- simulated GPUs ------------------------------------------------------------------------------


def test_fake_gpus_are_deterministic(tmp_path: Path) -> None:
    runs = (run_info(str(tmp_path / "a"), 111), run_info(str(tmp_path / "b"), 222))
    a, b = GpuMonitor(4), GpuMonitor(4)
    for k in range(5):
        va = a.sample(T0 + k, runs, 40.0)
        vb = b.sample(T0 + k, runs, 40.0)
        assert va == vb
    assert va.source == "fake" and va.available and va.driver_version == "simulated"
    assert [d.uuid for d in va.devices] == [f"GPU-fake-0000-{i:04d}" for i in range(4)]
    assert all(d.name == "RTX 4090" for d in va.devices)
    # different phases per device
    assert len({d.util_percent for d in va.devices}) > 1


def test_fake_busy_when_a_run_is_running(tmp_path: Path) -> None:
    runs = (run_info(str(tmp_path / "a"), 111), run_info(str(tmp_path / "b"), 222))
    mon = GpuMonitor(3)
    mems = set()
    for k in range(0, 200, 7):
        view = mon.sample(T0 + k, runs, 40.0)
        mems.add(view.devices[0].mem_used_mib)
        for d in view.devices:
            assert 80 <= d.util_percent <= 98
            assert 0.6 * 24564 - 1 <= d.mem_used_mib <= 0.8 * 24564 + 1
            assert d.mem_total_mib == 24564
            assert 55 <= d.temperature_c <= 80
            assert 250 <= d.power_w <= 430 and d.power_limit_w == 450
            assert 40 <= d.fan_percent <= 70 and d.pstate == "P2"
        assert view.idle is False and view.warnings == ()
    assert len(mems) > 10  # memory moves smoothly, not in 10% steps
    # round robin over the running runs (sorted by run_dir)
    pids = [d.processes[0].pid for d in view.devices]
    assert pids == [111, 222, 111]
    assert all(d.processes[0].kind == "run" for d in view.devices)
    assert view.devices[1].processes[0].run_dir == runs[1].run_dir


def test_fake_idle_when_nothing_runs(tmp_path: Path) -> None:
    done = run_info(str(tmp_path / "a"), 111, state="completed")
    mon = GpuMonitor(2)
    view = mon.sample(T0, (done,), 3.0)
    for d in view.devices:
        assert 0 <= d.util_percent <= 2 and d.processes == ()
        assert d.pstate == "P8" and d.mem_used_mib == 400
        assert d.flags == ("idle",)
    assert view.idle and mon.sample(T0 + 10, (done,), 3.0).idle


def test_fake_lose(tmp_path: Path) -> None:
    runs = (run_info(str(tmp_path / "a"), 111),)
    mon = GpuMonitor(4, fake_lose={1: 30.0, 3: 90.0})
    view = mon.sample(T0 + 1000, runs, None)  # the clock starts at the first sample
    assert all(d.state == "ok" for d in view.devices)
    view = mon.sample(T0 + 1029, runs, None)
    assert dev(view, 1).state == "ok"
    view = mon.sample(T0 + 1030, runs, None)
    assert dev(view, 1).state == "lost" and dev(view, 1).flags == ("lost",)
    assert dev(view, 1).name == "RTX 4090" and dev(view, 1).uuid == "GPU-fake-0000-0001"
    assert dev(view, 1).util_percent is None
    assert dev(view, 3).state == "ok" and dev(view, 0).util_percent is not None
    view = mon.sample(T0 + 1090, runs, None)
    assert [d.state for d in view.devices] == ["ok", "lost", "ok", "lost"]
    assert dev(view, 1).util_history[-1] is None


def test_fake_never_touches_nvml() -> None:
    fake = FakeNvml(gpus(1))
    mon = GpuMonitor(2, nvml=fake)
    mon.sample(T0, (), None)
    mon.close()
    assert sum(fake.calls.values()) == 0


# -- fake_gpus_from_env ----------------------------------------------------------------------------


def test_fake_gpus_from_env() -> None:
    assert fake_gpus_from_env({}) == (None, None)
    assert fake_gpus_from_env({"RGPU_FAKE_GPUS": ""}) == (None, None)
    assert fake_gpus_from_env({"RGPU_FAKE_GPUS": " 4 "}) == (4, None)
    assert fake_gpus_from_env({"RGPU_FAKE_GPUS": "0"}) == (0, None)
    env = {"RGPU_FAKE_GPUS": "4", "RGPU_FAKE_GPU_LOSE": "1@30, 3@90.5,"}
    assert fake_gpus_from_env(env) == (4, {1: 30.0, 3: 90.5})
    # --fake-gpus may give N on the command line
    assert fake_gpus_from_env({"RGPU_FAKE_GPU_LOSE": "7@1"}) == (None, {7: 1.0})


@pytest.mark.parametrize(
    "env, words",
    [
        ({"RGPU_FAKE_GPUS": "four"}, "RGPU_FAKE_GPUS"),
        ({"RGPU_FAKE_GPUS": "-1"}, "RGPU_FAKE_GPUS"),
        ({"RGPU_FAKE_GPUS": "1000"}, "RGPU_FAKE_GPUS"),
        ({"RGPU_FAKE_GPUS": "2.5"}, "RGPU_FAKE_GPUS"),
        ({"RGPU_FAKE_GPU_LOSE": "1"}, "index@seconds"),
        ({"RGPU_FAKE_GPU_LOSE": "a@3"}, "index@seconds"),
        ({"RGPU_FAKE_GPU_LOSE": "1@soon"}, "index@seconds"),
        ({"RGPU_FAKE_GPU_LOSE": "-1@3"}, "index@seconds"),
        ({"RGPU_FAKE_GPU_LOSE": "1@-3"}, "index@seconds"),
        ({"RGPU_FAKE_GPU_LOSE": "1@nan"}, "index@seconds"),
        ({"RGPU_FAKE_GPU_LOSE": "1@3,1@4"}, "twice"),
        ({"RGPU_FAKE_GPUS": "2", "RGPU_FAKE_GPU_LOSE": "2@3"}, "GPUs 0 to 1"),
    ],
)
def test_fake_gpus_from_env_errors(env, words) -> None:
    with pytest.raises(ValueError) as info:
        fake_gpus_from_env(env)
    message = str(info.value)
    assert words in message and "\n" not in message
