"""system.SystemMonitor: CPU, memory, disk, checkpoints, warnings, disk-full projection."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rgpu_tui.core.base.formatting import fmt_bytes
from rgpu_tui.core.machine import system
from rgpu_tui.core.machine.system import SystemMonitor, existing_path
from rgpu_tui.core.model.snapshot import RunInfo, SystemView
from rgpu_tui.core.model.snapshot_json import system_to_json

GB = 1_000_000_000
T0 = 1_700_000_000.0


class Machine:
    """What the faked psutil / os / shutil calls report; a healthy box by default."""

    def __init__(self) -> None:
        self.per_core: list[float] = [5.0, 15.0]
        self.load = (0.5, 0.4, 0.3)
        self.mem_total = 64 * GB
        self.mem_available = 48 * GB
        self.swap_total = 8 * GB
        self.swap_used = 0
        self.disk_total = 1000 * GB
        self.disk_free = 600 * GB
        self.disk_used: int | None = None  # None: total - free
        self.fail: set[str] = set()
        self.cpu_calls: list[dict] = []
        self.disk_paths: list[str] = []

    def cpu_percent(self, interval=None, percpu=False):
        self.cpu_calls.append({"interval": interval, "percpu": percpu})
        if "cpu" in self.fail:
            raise RuntimeError("cpu_percent broke")
        assert percpu, "the monitor asks per core"
        return list(self.per_core)

    def getloadavg(self):
        if "load" in self.fail:
            raise OSError("load average unobtainable")
        return self.load

    def virtual_memory(self):
        if "mem" in self.fail:
            raise PermissionError("no /proc/meminfo")
        return SimpleNamespace(
            total=self.mem_total,
            available=self.mem_available,
            used=12345,  # psutil's own "used" differs; the monitor must not take it
        )

    def swap_memory(self):
        if "swap" in self.fail:
            raise RuntimeError("swap_memory broke")
        return SimpleNamespace(total=self.swap_total, used=self.swap_used)

    def disk_usage(self, path):
        self.disk_paths.append(str(path))
        if "disk" in self.fail:
            raise OSError("statvfs failed")
        used = self.disk_total - self.disk_free if self.disk_used is None else self.disk_used
        return SimpleNamespace(total=self.disk_total, used=used, free=self.disk_free)


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Machine:
    m = Machine()
    monkeypatch.setattr(system.psutil, "cpu_percent", m.cpu_percent)
    monkeypatch.setattr(system.psutil, "virtual_memory", m.virtual_memory)
    monkeypatch.setattr(system.psutil, "swap_memory", m.swap_memory)
    monkeypatch.setattr(system.os, "getloadavg", m.getloadavg)
    monkeypatch.setattr(system.shutil, "disk_usage", m.disk_usage)
    return m


def run_info(run_dir: Path) -> RunInfo:
    return RunInfo(
        run_dir=str(run_dir),
        name=run_dir.name,
        state="running",
        status_state="running",
    )


def checkpoint(path: Path, size: int, age_s: float | None = 3600) -> Path:
    """A sparse file of `size` bytes; `age_s` back-dates its mtime (None: now)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    if age_s is not None:
        old = time.time() - age_s
        os.utime(path, (old, old))
    return path


def age(path: Path, seconds: float = 3600) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def mon(tmp_path: Path, **kw) -> SystemMonitor:
    return SystemMonitor(str(tmp_path), **kw)


# -- CPU ----------------------------------------------------------------------


def test_first_cpu_sample_is_none_then_a_value(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    first = m.sample(T0, ())
    assert first.cpu_percent is None and first.cpu_max_percent is None
    machine.per_core = [20.0, 40.0]
    second = m.sample(T0 + 1, ())
    assert second.cpu_percent == pytest.approx(30.0)
    assert second.cpu_max_percent == pytest.approx(40.0)
    # non-blocking: psutil measures since the previous call, never sleeps
    assert machine.cpu_calls == [{"interval": None, "percpu": True}] * 2


def test_busiest_core(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    m.sample(T0, ())
    machine.per_core = [10.0, 90.0, 20.0, 40.0]
    view = m.sample(T0 + 1, ())
    assert view.cpu_percent == pytest.approx(40.0)
    assert view.cpu_max_percent == pytest.approx(90.0)


def test_failed_first_cpu_call_does_not_count_as_the_priming_one(
    machine: Machine, tmp_path: Path
) -> None:
    m = mon(tmp_path)
    machine.fail = {"cpu"}
    assert m.sample(T0, ()).cpu_percent is None
    machine.fail = set()
    assert m.sample(T0 + 1, ()).cpu_percent is None  # the first real measurement primes
    assert m.sample(T0 + 2, ()).cpu_percent == pytest.approx(10.0)


# -- load, memory, swap ----------------------------------------------------------


def test_load_memory_swap_and_a_healthy_machine(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    m.sample(T0, ())
    view = m.sample(T0 + 1, ())
    assert view.load_avg == (0.5, 0.4, 0.3)
    assert view.mem_total_bytes == 64 * GB
    assert view.mem_used_bytes == 16 * GB  # total - available, not psutil's "used"
    assert (view.swap_used_bytes, view.swap_total_bytes) == (0, 8 * GB)
    assert view.disk is not None
    assert (view.disk.total_bytes, view.disk.used_bytes, view.disk.free_bytes) == (
        1000 * GB,
        400 * GB,
        600 * GB,
    )
    assert view.disk.path == str(tmp_path)
    assert view.largest_checkpoint_bytes is None
    assert view.disk_full_in_hours is None
    assert view.warnings == ()
    system_to_json(view)  # serialisable as it stands


def test_disk_used_is_taken_from_disk_usage(machine: Machine, tmp_path: Path) -> None:
    machine.disk_used = 390 * GB  # reserved blocks: used + free != total, as on ext4
    view = mon(tmp_path).sample(T0, ())
    assert view.disk is not None and view.disk.used_bytes == 390 * GB


@pytest.mark.parametrize(
    ("broken", "none_fields"),
    [
        ("load", ["load_avg"]),
        ("mem", ["mem_used_bytes", "mem_total_bytes"]),
        ("swap", ["swap_used_bytes", "swap_total_bytes"]),
        ("cpu", ["cpu_percent", "cpu_max_percent"]),
        ("disk", ["disk"]),
    ],
)
def test_a_failing_call_gives_none_and_leaves_the_rest(
    machine: Machine, tmp_path: Path, broken: str, none_fields: list[str]
) -> None:
    m = mon(tmp_path)
    m.sample(T0, ())
    machine.fail = {broken}
    view = m.sample(T0 + 1, ())
    fields = [
        "cpu_percent",
        "cpu_max_percent",
        "load_avg",
        "mem_used_bytes",
        "mem_total_bytes",
        "swap_used_bytes",
        "swap_total_bytes",
        "disk",
    ]
    for name in fields:
        if name in none_fields:
            assert getattr(view, name) is None, name
        else:
            assert getattr(view, name) is not None, name
    assert view.warnings == ()


def test_getloadavg_missing_on_this_platform(
    machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(system.os, "getloadavg")
    view = mon(tmp_path).sample(T0, ())
    assert view.load_avg is None
    assert view.mem_total_bytes == 64 * GB


def test_every_call_failing_still_returns_a_view(machine: Machine, tmp_path: Path) -> None:
    machine.fail = {"cpu", "load", "mem", "swap", "disk"}
    m = mon(tmp_path)
    for i in range(3):
        view = m.sample(T0 + 100 * i, (run_info(tmp_path / "nope"),))
    assert view == SystemView(None, None, None, None, None, None, None, None)


def test_an_unexpected_error_becomes_a_warning(
    machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(path: str) -> str:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(system, "existing_path", boom)
    view = mon(tmp_path).sample(T0, ())
    assert view.disk is None
    assert view.warnings == ("System readings failed: RuntimeError: unexpected",)


def test_ram_available_warning_both_sides(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    machine.mem_available = int(3.3 * GB)  # 5.2% of 64 GB
    assert m.sample(T0, ()).warnings == ()
    machine.mem_available = int(3.1 * GB)  # 4.8%
    assert m.sample(T0 + 1, ()).warnings == (
        "Only 3.1 GB of 64.0 GB RAM available: a trainer may be OOM-killed",
    )


def test_swap_warning_both_sides(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    machine.swap_used = 4 * GB  # exactly half: not above
    assert m.sample(T0, ()).warnings == ()
    machine.swap_used = int(4.4 * GB)
    assert m.sample(T0 + 1, ()).warnings == (
        "Swap 55% used (4.4 GB of 8.0 GB): a trainer may be OOM-killed",
    )
    machine.swap_total = machine.swap_used = 0  # no swap at all: nothing to say
    assert m.sample(T0 + 2, ()).warnings == ()


# -- the disk ---------------------------------------------------------------------


def test_missing_root_uses_the_nearest_existing_parent(machine: Machine, tmp_path: Path) -> None:
    root = tmp_path / "runs" / "not" / "yet"
    (tmp_path / "runs").mkdir()
    view = SystemMonitor(str(root)).sample(T0, ())
    assert view.disk is not None
    assert view.disk.path == str(tmp_path / "runs")
    assert machine.disk_paths == [str(tmp_path / "runs")]
    root.mkdir(parents=True)  # the first run creates it
    assert SystemMonitor(str(root)).sample(T0, ()).disk.path == str(root)


def test_existing_path() -> None:
    assert existing_path("/") == "/"
    assert existing_path("/definitely/not/here/at/all") == "/"
    assert existing_path("relative-missing-dir") == os.getcwd()


def test_disk_nearly_full_warning_both_sides(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    machine.disk_total = 177 * GB
    machine.disk_free = int(17.8 * GB)  # 10.06%
    assert m.sample(T0, ()).warnings == ()
    machine.disk_free = int(12.4 * GB)  # 7%
    assert m.sample(T0, ()).warnings == (f"Disk 93% full: 12.4 GB free on {tmp_path}",)


def test_sizes_in_warnings() -> None:  # core.base.formatting.fmt_bytes, as everywhere
    assert fmt_bytes(12_449_999_999) == "12.4 GB"
    assert fmt_bytes(7_100_000_000) == "7.1 GB"
    assert fmt_bytes(0) == "0 B"


# -- checkpoints --------------------------------------------------------------------


def test_largest_checkpoint_across_runs(machine: Machine, tmp_path: Path) -> None:
    r1, r2, r3 = tmp_path / "r1", tmp_path / "r2", tmp_path / "r3"
    checkpoint(r1 / "weights" / "best.pt", 2 * GB)
    checkpoint(r1 / "weights" / "last.pt", int(7.1 * GB))
    checkpoint(r1 / "weights" / "huge.bin", 20 * GB)  # not a checkpoint
    (r1 / "weights" / "dir.pt").mkdir()  # not a file
    checkpoint(r1 / "other" / "big.pt", 30 * GB)  # not under weights/
    checkpoint(r2 / "weights" / "epoch_3.pt", 3 * GB)
    r3.mkdir()  # no weights yet
    runs = (run_info(r1), run_info(r2), run_info(r3))
    view = mon(tmp_path).sample(T0, runs)
    assert view.largest_checkpoint_bytes == int(7.1 * GB)
    assert mon(tmp_path).sample(T0, (run_info(r2), run_info(r3))).largest_checkpoint_bytes == (
        3 * GB
    )
    assert mon(tmp_path).sample(T0, (run_info(r3),)).largest_checkpoint_bytes is None
    assert mon(tmp_path).sample(T0, ()).largest_checkpoint_bytes is None


def test_checkpoint_warning_both_sides(machine: Machine, tmp_path: Path) -> None:
    run = tmp_path / "r1"
    checkpoint(run / "weights" / "last.pt", int(7.1 * GB))
    m = mon(tmp_path)
    machine.disk_total = 100 * GB  # free stays above 10%
    machine.disk_free = int(14.3 * GB)
    assert m.sample(T0, (run_info(run),)).warnings == ()
    machine.disk_free = int(12.4 * GB)
    assert m.sample(T0, (run_info(run),)).warnings == (
        "12.4 GB free is less than twice the largest checkpoint (7.1 GB): the next save may fail",
    )
    # without the run (nothing to save) there is nothing to warn about
    assert m.sample(T0, ()).warnings == ()


class ScandirCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = os.scandir

        def counting(path=".", *a, **kw):
            self.paths.append(os.fspath(path))
            return real(path, *a, **kw)

        monkeypatch.setattr(system.os, "scandir", counting)

    def count(self, path: Path) -> int:
        return self.paths.count(str(path))


def test_weights_dir_is_listed_again_only_when_its_mtime_changes(
    machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "r1"
    wdir = run / "weights"
    checkpoint(wdir / "best.pt", 1 * GB)
    age(wdir, 3600)
    scans = ScandirCounter(monkeypatch)
    m = mon(tmp_path)
    runs = (run_info(run),)
    assert m.sample(T0, runs).largest_checkpoint_bytes == 1 * GB
    assert scans.count(wdir) == 1
    for i in range(5):
        assert m.sample(T0 + i, runs).largest_checkpoint_bytes == 1 * GB
    assert scans.count(wdir) == 1  # unchanged directory: not listed again

    checkpoint(wdir / "last.pt", 2 * GB)  # a new entry changes the mtime
    age(wdir, 1800)
    assert m.sample(T0 + 10, runs).largest_checkpoint_bytes == 2 * GB
    assert scans.count(wdir) == 2
    m.sample(T0 + 11, runs)
    assert scans.count(wdir) == 2

    (wdir / "last.pt").unlink()
    age(wdir, 900)
    assert m.sample(T0 + 12, runs).largest_checkpoint_bytes == 1 * GB
    assert scans.count(wdir) == 3


def test_a_fresh_weights_dir_is_listed_until_its_mtime_settles(
    machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing made right after a change may miss a second change in the same tick."""
    run = tmp_path / "r1"
    wdir = run / "weights"
    checkpoint(wdir / "best.pt", 1 * GB)  # the directory's mtime is now
    scans = ScandirCounter(monkeypatch)
    m = mon(tmp_path)
    m.sample(T0, (run_info(run),))
    m.sample(T0 + 1, (run_info(run),))
    assert scans.count(wdir) == 2
    age(wdir, 3600)
    m.sample(T0 + 2, (run_info(run),))
    m.sample(T0 + 3, (run_info(run),))
    assert scans.count(wdir) == 3  # listed once more after it settled, then cached


def test_a_checkpoint_still_being_written_is_restated_not_relisted(
    machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.save writes in place: the file grows, the directory's mtime does not move."""
    run = tmp_path / "r1"
    wdir = run / "weights"
    ck = checkpoint(wdir / "last.pt", 1 * GB, age_s=None)  # being written right now
    age(wdir, 3600)
    scans = ScandirCounter(monkeypatch)
    m = mon(tmp_path)
    assert m.sample(T0, (run_info(run),)).largest_checkpoint_bytes == 1 * GB
    with open(ck, "r+b") as f:
        f.truncate(5 * GB)
    assert m.sample(T0 + 1, (run_info(run),)).largest_checkpoint_bytes == 5 * GB
    assert scans.count(wdir) == 1

    # once settled, a file is not looked at again until the directory changes
    age(ck, 3600)
    m.sample(T0 + 2, (run_info(run),))  # sees it settled
    with open(ck, "r+b") as f:
        f.truncate(6 * GB)
    age(ck, 3600)
    assert m.sample(T0 + 3, (run_info(run),)).largest_checkpoint_bytes == 5 * GB
    assert scans.count(wdir) == 1


def test_weights_cache_forgets_runs_that_are_gone(machine: Machine, tmp_path: Path) -> None:
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    checkpoint(r1 / "weights" / "a.pt", 1 * GB)
    checkpoint(r2 / "weights" / "b.pt", 2 * GB)
    m = mon(tmp_path)
    assert m.sample(T0, (run_info(r1), run_info(r2))).largest_checkpoint_bytes == 2 * GB
    assert m.sample(T0, (run_info(r1),)).largest_checkpoint_bytes == 1 * GB
    assert set(m._weights) == {str(r1 / "weights")}


# -- disk-full projection ----------------------------------------------------------------


def feed(m: SystemMonitor, machine: Machine, points: list[tuple[float, float]]) -> list[SystemView]:
    """Sample at each (seconds after T0, free bytes); total stays fixed."""
    views = []
    for t, free in points:
        machine.disk_free = int(free)
        views.append(m.sample(T0 + t, ()))
    return views


def test_projection_when_the_disk_grows(machine: Machine, tmp_path: Path) -> None:
    machine.disk_total = 30 * GB
    rate = 1.1 * GB / 3600  # bytes per second
    end = 600
    points = [(t, 3.52 * GB + rate * (end - t)) for t in range(0, end + 1, 10)]
    view = feed(mon(tmp_path), machine, points)[-1]
    assert view.disk_full_in_hours == pytest.approx(3.2, rel=1e-3)
    assert view.warnings == ("Disk full in ~3.2 h at the current rate (1.1 GB/h)",)


def test_projection_beyond_a_day_is_a_number_but_no_warning(
    machine: Machine, tmp_path: Path
) -> None:
    machine.disk_total = 100 * GB
    rate = 1 * GB / 3600
    points = [(t, 30 * GB + rate * (600 - t)) for t in range(0, 601, 10)]
    view = feed(mon(tmp_path), machine, points)[-1]
    assert view.disk_full_in_hours == pytest.approx(30.0, rel=1e-3)
    assert view.warnings == ()
    points = [(t, 23 * GB + rate * (600 - t)) for t in range(0, 601, 10)]
    view = feed(mon(tmp_path), machine, points)[-1]
    assert view.disk_full_in_hours == pytest.approx(23.0, rel=1e-3)
    assert view.warnings == ("Disk full in ~23.0 h at the current rate (1.0 GB/h)",)


def test_projection_under_an_hour_in_minutes(machine: Machine, tmp_path: Path) -> None:
    machine.disk_total = 40 * GB
    rate = 10 * GB / 3600
    points = [(t, 5 * GB + rate * (600 - t)) for t in range(0, 601, 10)]
    view = feed(mon(tmp_path), machine, points)[-1]
    assert view.disk_full_in_hours == pytest.approx(0.5, rel=1e-3)
    assert view.warnings == ("Disk full in ~30 min at the current rate (10.0 GB/h)",)


@pytest.mark.parametrize("slope", [0.0, -1.0])
def test_no_projection_when_flat_or_shrinking(
    machine: Machine, tmp_path: Path, slope: float
) -> None:
    rate = slope * GB / 3600
    points = [(t, 500 * GB + rate * (600 - t)) for t in range(0, 601, 10)]
    views = feed(mon(tmp_path), machine, points)
    assert all(v.disk_full_in_hours is None for v in views)
    assert all(v.warnings == () for v in views)


def test_no_projection_with_less_than_a_minute_of_data(machine: Machine, tmp_path: Path) -> None:
    rate = 100 * GB / 3600  # fast enough to warn as soon as it is known
    m = mon(tmp_path)
    views = feed(m, machine, [(t, 200 * GB - rate * t) for t in range(0, 51, 10)])
    assert all(v.disk_full_in_hours is None for v in views)
    assert all(v.warnings == () for v in views)
    (view,) = feed(m, machine, [(60, 200 * GB - rate * 60)])
    assert view.disk_full_in_hours == pytest.approx((200 * GB - rate * 60) / rate / 3600)
    assert view.warnings == ("Disk full in ~2.0 h at the current rate (100.0 GB/h)",)


def test_projection_fits_every_sample_between_the_subsampled_points(
    machine: Machine, tmp_path: Path
) -> None:
    """Samples once a second: the growth deque keeps one point per 10 s, still bounded."""
    rate = 2 * GB / 3600
    m = mon(tmp_path, growth_window_s=600)
    views = feed(m, machine, [(t, 500 * GB - rate * t) for t in range(0, 3601)])
    assert views[-1].disk_full_in_hours == pytest.approx(498 * GB / rate / 3600, rel=1e-6)
    assert len(m._growth) <= 600 / 10 + 2
    assert m._growth[0][0] >= T0 + 3600 - 600  # nothing older than the window


def test_old_growth_leaves_the_window(machine: Machine, tmp_path: Path) -> None:
    """A burst of writes an hour ago says nothing about the next hours."""
    m = mon(tmp_path, growth_window_s=1800)
    burst = [(t, 500 * GB - 10 * GB * t / 600) for t in range(0, 601, 10)]
    assert feed(m, machine, burst)[-1].disk_full_in_hours is not None
    flat = [(t, 490 * GB) for t in range(610, 600 + 1800 + 11, 10)]
    views = feed(m, machine, flat)
    assert views[0].disk_full_in_hours is not None  # the burst is still in the window
    assert views[-1].disk_full_in_hours is None


def test_projection_restarts_when_the_clock_goes_back(machine: Machine, tmp_path: Path) -> None:
    rate = 1 * GB / 3600
    m = mon(tmp_path)
    assert feed(m, machine, [(t, 50 * GB - rate * t) for t in range(0, 601, 10)])[-1].warnings
    (view,) = feed(m, machine, [(-1000, 50 * GB)])
    assert view.disk_full_in_hours is None


def test_projection_survives_a_failing_disk_call(machine: Machine, tmp_path: Path) -> None:
    m = mon(tmp_path)
    rate = 1 * GB / 3600
    feed(m, machine, [(t, 50 * GB - rate * t) for t in range(0, 601, 10)])
    machine.fail = {"disk"}
    view = m.sample(T0 + 610, ())
    assert view.disk is None and view.disk_full_in_hours is None and view.warnings == ()
    machine.fail = set()  # a passing failure does not throw the history away
    (view,) = feed(m, machine, [(620, 50 * GB - rate * 620)])
    assert view.disk_full_in_hours == pytest.approx((50 * GB - rate * 620) / rate / 3600)


def test_projection_uses_the_freshest_value_between_kept_points(
    machine: Machine, tmp_path: Path
) -> None:
    m = mon(tmp_path)
    assert (
        feed(m, machine, [(t, 500 * GB) for t in range(0, 61, 10)])[-1].disk_full_in_hours is None
    )
    (view,) = feed(m, machine, [(65, 499 * GB)])  # not kept (5 s after the last point), but fitted
    assert view.disk_full_in_hours is not None


def test_the_real_machine(tmp_path: Path) -> None:
    """No fakes: the psutil, os and shutil calls as this machine answers them."""
    m = SystemMonitor(str(tmp_path / "runs"))
    m.sample(time.time(), ())
    time.sleep(0.05)
    view = m.sample(time.time(), ())
    assert view.cpu_percent is not None and 0 <= view.cpu_percent <= 100
    assert view.cpu_max_percent is not None and view.cpu_max_percent >= view.cpu_percent
    assert view.mem_total_bytes and 0 < view.mem_used_bytes <= view.mem_total_bytes
    assert view.swap_total_bytes is not None and view.swap_used_bytes is not None
    assert view.disk is not None and view.disk.path == str(tmp_path)
    assert view.disk.total_bytes > 0 and 0 <= view.disk.free_bytes <= view.disk.total_bytes
    system_to_json(view)
