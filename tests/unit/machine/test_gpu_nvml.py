"""core.machine.nvml_source against a stand-in pynvml: older drivers (v3 -> v2 -> v1 process
queries), functions a driver lacks, MIG devices, a driver/library mismatch, lost GPUs."""

from __future__ import annotations

import os

import pynvml
import pytest

from rgpu_tui.core.machine.gpu import GpuMonitor
from rgpu_tui.core.machine.nvml_source import INIT_RETRY_S, MISMATCH_REASON, NvmlSource

from ..gpu_fakes import MIB, T0, FakeGpu, FakeMig, FakeNvml, dev, gpus, proc

COMPUTE = "nvmlDeviceGetComputeRunningProcesses"
GRAPHICS = "nvmlDeviceGetGraphicsRunningProcesses"


def _with_processes(driver_has) -> FakeNvml:
    fake = FakeNvml(gpus(2), driver_has=driver_has)
    fake.gpus[0].compute = [proc(os.getpid(), 3000 * MIB)]
    fake.gpus[1].graphics = [proc(os.getpid(), 700 * MIB)]
    return fake


@pytest.mark.parametrize(
    "driver_has, used",
    [
        (("v3", "v2", "v1"), "v3"),
        (("v2", "v1"), "v2"),  # a driver without the _v3 functions pynvml calls by default
        (("v1",), "v1"),  # without _v2 either: the unversioned C function through ctypes
    ],
)
def test_process_queries_fall_back_to_what_the_driver_has(driver_has, used) -> None:
    fake = _with_processes(driver_has)
    mon = GpuMonitor(nvml=fake)
    for k in range(3):
        view = mon.sample(T0 + k, (), None)
        assert [(p.pid, p.used_mib) for p in dev(view, 0).processes] == [(os.getpid(), 3000.0)]
        assert [(p.pid, p.used_mib) for p in dev(view, 1).processes] == [(os.getpid(), 700.0)]
    # the version found is kept: newer ones are asked once, not every refresh
    for version in ("v3", "v2"):
        if version != used:
            assert fake.calls[(COMPUTE, version)] <= 1, version
    assert fake.calls[(COMPUTE, used)] >= 3 * 2  # three refreshes, two GPUs (v1: twice)


def test_no_process_query_in_the_driver_leaves_the_gpu_readable() -> None:
    fake = _with_processes(())
    mon = GpuMonitor(nvml=fake)
    for k in range(3):
        d = dev(mon.sample(T0 + k, (), None), 0)
        assert d.state == "ok" and d.processes == () and d.util_percent == 50.0
    assert fake.calls[(COMPUTE, "v3")] == 1  # given up after the first refresh


def test_v1_memory_not_available_is_none(dead_pid: int) -> None:
    fake = FakeNvml(gpus(1), driver_has=("v1",))
    fake.gpus[0].compute = [proc(dead_pid, pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value)]
    (p,) = dev(GpuMonitor(nvml=fake).sample(T0, (), None), 0).processes
    assert p.pid == dead_pid and p.used_mib is None


def test_not_supported_process_query_does_not_try_older_versions() -> None:
    fake = _with_processes(("v3", "v2", "v1"))
    fake.gpus[0].unsupported = {COMPUTE}
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert dev(view, 0).processes == ()
    assert fake.calls[(COMPUTE, "v2")] == 0 and fake.calls[(COMPUTE, "v1")] == 0


@pytest.mark.parametrize(
    "fname, field",
    [
        ("nvmlDeviceGetPerformanceState", "pstate"),
        ("nvmlDeviceGetFanSpeed", "fan_percent"),
        ("nvmlDeviceGetMigMode", "mig_mode"),
        ("nvmlDeviceGetMinorNumber", "minor"),
    ],
)
def test_a_function_the_driver_lacks_is_na(fname, field) -> None:
    fake = FakeNvml(gpus(2))
    fake.gpus[1].missing = {fname}
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert getattr(dev(view, 1), field) is None
    assert getattr(dev(view, 0), field) is not None
    assert dev(view, 1).state == "ok" and dev(view, 1).util_percent == 50.0


def test_minor_numbers_read_once_per_start() -> None:
    fake = FakeNvml([FakeGpu(minor=3), FakeGpu(minor=0)])
    mon = GpuMonitor(nvml=fake)
    for k in range(4):
        view = mon.sample(T0 + k, (), None)
    assert [d.minor for d in view.devices] == [3, 0]
    assert fake.calls["nvmlDeviceGetMinorNumber"] == 2


def test_mig_enabled_gpu_lists_its_instances() -> None:
    a = FakeMig(uuid="MIG-a", gi=1, ci=0, used=512 * MIB, total=9856 * MIB)
    b = FakeMig(uuid="MIG-b", gi=2, ci=0, used=1024 * MIB, total=19968 * MIB)
    a.compute = [proc(os.getpid(), 400 * MIB)]
    fake = FakeNvml([FakeGpu(mig=(1, 1), migs=[a, None, b]), FakeGpu()])
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    d0 = dev(view, 0)
    assert d0.state == "ok" and d0.mig_mode == "enabled"
    assert d0.util_percent is None  # NVML has no utilisation for a MIG-enabled board
    assert d0.mem_used_mib == 1000.0  # the board's own readings stay
    assert [m.mig_index for m in d0.mig_instances] == [0, 2]  # slot 1 holds no instance
    m0, m2 = d0.mig_instances
    assert (m0.uuid, m0.gpu_instance_id, m0.compute_instance_id) == ("MIG-a", 1, 0)
    assert (m0.mem_used_mib, m0.mem_total_mib, m0.util_percent) == (512.0, 9856.0, None)
    assert (m2.uuid, m2.gpu_instance_id, m2.mem_total_mib) == ("MIG-b", 2, 19968.0)
    # a process on a MIG instance is the board's
    assert [(p.pid, p.used_mib) for p in d0.processes] == [(os.getpid(), 400.0)]
    assert dev(view, 1).mig_instances == () and dev(view, 1).util_percent == 50.0


def test_lost_mig_instance_loses_its_gpu_only() -> None:
    fake = FakeNvml([FakeGpu(mig=(1, 1), migs=[FakeMig(lost=True)]), FakeGpu()])
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert dev(view, 0).state == "lost" and dev(view, 1).state == "ok"


def test_driver_library_mismatch_at_start_is_one_sentence() -> None:
    fake = FakeNvml(gpus(1), init_error=pynvml.NVMLError_LibRmVersionMismatch())
    view = GpuMonitor(nvml=fake).sample(T0, (), None)
    assert view.available is False and view.reason == MISMATCH_REASON
    assert "\n" not in view.reason and view.reason.count(". ") == 0


def test_driver_replaced_under_a_running_monitor() -> None:
    """A driver upgrade without a reload: queries start to say LibRmVersionMismatch."""
    fake = FakeNvml(gpus(2))
    mon = GpuMonitor(nvml=fake)
    assert mon.sample(T0, (), None).available
    fake.mismatch_queries = True
    view = mon.sample(T0 + 1, (), None)
    assert view.available is False and view.reason == MISMATCH_REASON
    assert fake.calls["nvmlShutdown"] == 1
    assert mon.sample(T0 + 30, (), None).reason == MISMATCH_REASON  # not asked again yet
    assert fake.calls["nvmlInit"] == 1
    fake.mismatch_queries = False  # rebooted, say
    assert mon.sample(T0 + 1 + INIT_RETRY_S, (), None).available
    assert fake.calls["nvmlInit"] == 2


def test_counting_gpus_says_mismatch() -> None:
    class Mismatch(FakeNvml):
        def nvmlDeviceGetCount(self):
            raise pynvml.NVMLError_LibRmVersionMismatch()

    view = GpuMonitor(nvml=Mismatch(gpus(1))).sample(T0, (), None)
    assert view.reason == MISMATCH_REASON


def test_gpu_is_lost_in_the_process_query() -> None:
    class LostInQuery(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses_v3(self, h):
            if h[1] == 1:
                raise pynvml.NVMLError_GpuIsLost()
            return super().nvmlDeviceGetComputeRunningProcesses_v3(h)

    view = GpuMonitor(nvml=LostInQuery(gpus(2))).sample(T0, (), None)
    assert dev(view, 1).state == "lost" and dev(view, 0).state == "ok"


def test_source_alone_gives_raw_readings() -> None:
    """NvmlSource hands out NVML's own pids and MiB; attribution is done elsewhere."""
    fake = _with_processes(("v3",))
    source = NvmlSource(fake)
    readings = source.read(T0)
    assert source.driver_version == "550.54.15"
    assert readings[0].processes == ((os.getpid(), 3000.0),)
    assert readings[0].device.processes == () and readings[0].device.minor == 0
    source.close()
    assert fake.calls["nvmlShutdown"] == 1
