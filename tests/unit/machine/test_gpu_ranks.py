"""Every rank of a multi-GPU job is its run's, on the host and inside a container.

The process shapes are real processes (tests/unit/job_shapes.py): libreyolo's `train` ->
coordinator (at a path ending in libreyolo/training/_ddp_coordinator.py, in its own
session) -> mp.spawn()ed ranks, rank 0 writing status.json; a torchrun-shaped agent ->
rank subprocesses; mp.spawn() straight from `train`; plain processes started by the same
plain parent. The GPUs are a recording (--gpu-replay) that lists those processes' pids.

The container test runs the machine in new pid and mount namespaces (`unshare`), with a
tmpfs on /dev in that mount namespace only: there the ranks hold /dev/nvidiaN open, and
the recording lists their host pids, which do not exist inside.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rgpu_tui.core.machine.gpu import GpuMonitor
from rgpu_tui.core.machine.gpu_procs import (
    in_initial_pid_namespace,
    is_coordinator,
    is_mp_spawn_child,
    is_torchrun,
    node_minors,
)
from rgpu_tui.core.machine.gpu_replay import load_recording
from rgpu_tui.core.picture.collect import Collector

HARNESS = Path(__file__).with_name("job_shapes.py")
UP_TIMEOUT_S = 120.0
UNSEEN_HOST_PID = 4_000_001  # a host pid of another container: no process here has it


def _unused_pid() -> int:
    pid = UNSEEN_HOST_PID
    while psutil.pid_exists(pid):
        pid += 1
    return pid


# -- the machine ----------------------------------------------------------------------


def _sources() -> tuple[str, str]:
    sys.path.insert(0, str(HARNESS.parent))
    try:
        from job_shapes import COORDINATOR_SOURCE, TORCHRUN_SOURCE
    finally:
        sys.path.remove(str(HARNESS.parent))
    return COORDINATOR_SOURCE, TORCHRUN_SOURCE


def _job(base: Path, shape: str, name: str, ranks: int, nodes, run_dir: Path | None) -> list:
    """The argv that starts one job of `shape` ("libreyolo", "mpspawn", "torchrun")."""
    coordinator, torchrun = _sources()
    coordinator_path = base / "site-packages" / "libreyolo" / "training" / "_ddp_coordinator.py"
    coordinator_path.parent.mkdir(parents=True, exist_ok=True)
    coordinator_path.write_text(coordinator)
    cfg = {
        "name": name,
        "ranks": ranks,
        "nodes": nodes,
        "run_dir": str(run_dir) if run_dir else None,
        "coordinator_path": str(coordinator_path),
    }
    path = base / f"{name}.json"
    path.write_text(json.dumps(cfg))
    if shape == "torchrun":
        agent = base / "bin" / "torchrun"
        agent.parent.mkdir(exist_ok=True)
        agent.write_text(torchrun)
        return [sys.executable, str(agent), str(path)]
    return [sys.executable, str(HARNESS), shape, str(path)]


def _clean_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RGPU_")}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    return env


class Machine:
    """`job_shapes.py machine` (optionally as pid 1 of new pid and mount namespaces);
    every process it started is killed on close."""

    def __init__(self, base: Path, jobs: list[list], strangers=(), namespace: list[str] = ()):
        cfg = base / "machine.json"
        cfg.write_text(json.dumps({"jobs": jobs, "strangers": list(strangers)}))
        argv = [sys.executable, str(HARNESS), "machine", str(cfg)]
        if namespace:
            argv = [*namespace, "sh", "-c", _NS_SETUP, "sh", *argv]
        self.namespaced = bool(namespace)
        self.base = base
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_clean_env(base),
        )
        self.pids: set[int] = set()
        try:
            self.info = self._line()
        except BaseException:
            self.close()
            raise
        for job in self.info["jobs"]:
            for key in ("train", "launcher", "coordinator"):
                if job.get(key):
                    self.pids.add(job[key])
            self.pids.update(job["ranks"] + job["workers"])
        self.pids.update(self.info["strangers"])

    def _line(self) -> dict:
        ready, _w, _x = select.select([self.proc.stdout], [], [], UP_TIMEOUT_S)
        if not ready:
            raise AssertionError("the machine did not come up in time")
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the machine ended (rc {self.proc.wait()})")
        return json.loads(line)

    def job(self, name: str) -> dict:
        (job,) = [j for j in self.info["jobs"] if j["job"] == name]
        return job

    def host_pids(self) -> dict[int, int]:
        """{pid inside the namespace: host pid} of every process the machine started."""
        out = {}
        for p in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("NSpid:"):
                            ids = [int(x) for x in line.split()[1:]]
                            out[ids[-1]] = ids[0]
            except OSError:
                continue
        return out

    def run(self, argv: list[str]) -> str:
        out = self.base / f"out-{time.monotonic_ns()}.txt"
        self.proc.stdin.write(json.dumps({"argv": argv, "out": str(out)}) + "\n")
        self.proc.stdin.flush()
        assert self._line()["rc"] == 0, out.read_text()
        return out.read_text()

    def close(self) -> None:
        if self.namespaced:
            # the namespace's pid 1 (the machine): when it dies every process in it dies
            for p in psutil.Process(self.proc.pid).children():
                p.kill()
        else:
            tree = set(self.pids)
            try:
                tree.update(p.pid for p in psutil.Process(self.proc.pid).children(recursive=True))
            except psutil.Error:
                pass
            for pid in tree:
                try:
                    psutil.Process(pid).kill()
                except psutil.Error:
                    pass
        self.proc.kill()
        self.proc.wait(timeout=30)


# a tmpfs on /dev inside the new mount namespace only, with /dev/nvidia0-7, then the machine
_NS_SETUP = """set -e
mount -t tmpfs -o mode=755 rgpu-test-dev /dev
mkdir -m 1777 /dev/shm
mknod -m 666 /dev/null c 1 3 || true
for i in 0 1 2 3 4 5 6 7; do : > /dev/nvidia$i; done
: > /dev/nvidiactl
exec "$@"
"""


def _recording(path: Path, devices: dict[int, list[int]]) -> Path:
    sample = {
        "t": 0.0,
        "driver_version": "550.54.15",
        "devices": [
            {
                "index": i,
                "minor": i,
                "uuid": f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd",
                "name": "NVIDIA H100 80GB HBM3",
                "util_percent": 90 + i,
                "mem_used_mib": 20000 + i,
                "mem_total_mib": 81559,
                "processes": [{"pid": pid, "used_mib": 1000 + pid % 997} for pid in pids],
            }
            for i, pids in sorted(devices.items())
        ],
    }
    path.write_text(json.dumps(sample) + "\n")
    return path


def _by_index(snapshot: dict) -> dict[int, dict]:
    return {d["index"]: d for d in snapshot["gpus"]["devices"]}


def _runs(snapshot: dict) -> dict[str, dict]:
    return {os.path.basename(r["run_dir"]): r for r in snapshot["runs"]}


# -- on the host ----------------------------------------------------------------------


def test_libreyolo_multi_gpu_job_every_rank_is_the_runs(tmp_path: Path, dead_pid: int) -> None:
    """train -> coordinator -> 4 ranks (rank 0 in status.json): GPUs 0-3 are the run's;
    another run's job, a job without a run and a plain sibling of `train` are not."""
    runs = tmp_path / "runs"
    no_nodes = [[], [], [], []]
    jobs = [
        _job(tmp_path, "libreyolo", "a", 4, no_nodes, runs / "exp_a"),
        _job(tmp_path, "libreyolo", "b", 1, no_nodes, runs / "exp_b"),
        _job(tmp_path, "libreyolo", "nojob", 1, no_nodes, None),  # no status.json
    ]
    machine = Machine(tmp_path, jobs, strangers=[[]])
    try:
        a, b, other = machine.job("a"), machine.job("b"), machine.job("nojob")
        stranger = machine.info["strangers"][0]
        rec = _recording(
            tmp_path / "gpus.jsonl",
            {
                0: [a["ranks"][0], a["launcher"]],  # `train` keeps a CUDA context too
                1: [a["ranks"][1], a["workers"][1]],  # a data-loader worker of rank 1
                2: [a["ranks"][2]],
                3: [a["ranks"][3]],
                4: [b["ranks"][0]],
                5: [other["ranks"][0]],
                6: [stranger],  # a sibling of `train`, started by the same plain parent
                7: [dead_pid],
            },
        )
        proc = subprocess.run(
            [sys.executable, "-m", "rgpu_tui", "snapshot", "--json", "--gpu-replay", str(rec),
             str(runs)],
            capture_output=True, text=True, timeout=120, env=_clean_env(tmp_path),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        snap = json.loads(proc.stdout)
    finally:
        machine.close()
    gpus = _by_index(snap)
    assert snap["gpus"]["source"] == "replay" and snap["gpus"]["pid_namespace"] == "local"
    run_a, run_b = _runs(snap)["exp_a"], _runs(snap)["exp_b"]
    assert run_a["state"] == "running" and run_a["pid"] == a["ranks"][0]
    assert run_a["gpu_indices"] == [0, 1, 2, 3]
    assert run_b["gpu_indices"] == [4]
    for i in range(4):
        assert gpus[i]["runs"] == [run_a["run_dir"]], i
        assert {p["kind"] for p in gpus[i]["processes"]} == {"run"}
    assert gpus[4]["runs"] == [run_b["run_dir"]]
    for i in (5, 6, 7):
        assert gpus[i]["runs"] == [], i
        (p,) = gpus[i]["processes"]
        assert p["run_dir"] is None
    assert gpus[5]["processes"][0]["kind"] == "process"  # ours, another job
    assert gpus[6]["processes"][0]["kind"] == "process"
    assert gpus[7]["processes"][0]["kind"] == "unknown"


def test_torchrun_and_plain_mp_spawn_jobs(tmp_path: Path) -> None:
    """A torchrun-shaped agent's ranks, and ranks mp.spawn()ed straight from `train`
    (libreyolo's fallback), are their run's, and the straggler alert compares a job's ranks;
    the replay source object, in process."""
    runs = tmp_path / "runs"
    jobs = [
        _job(tmp_path, "torchrun", "tr", 2, [[], []], runs / "exp_tr"),
        _job(tmp_path, "mpspawn", "mp", 2, [[], []], runs / "exp_mp"),
    ]
    machine = Machine(tmp_path, jobs, strangers=[[]])
    try:
        tr, mp = machine.job("tr"), machine.job("mp")
        rec = _recording(
            tmp_path / "gpus.jsonl",
            {
                0: [tr["ranks"][0]],
                1: [tr["ranks"][1]],
                2: [mp["ranks"][0]],
                3: [mp["ranks"][1], mp["workers"][1]],
                4: [machine.info["strangers"][0]],
            },
        )
        collector = Collector(str(runs), gpu_replay=load_recording(str(rec)), one_shot=True)
        try:
            snap = collector.refresh(time.time())
        finally:
            collector.close()
        by_name = {r.name: r for r in snap.runs}
        assert by_name["exp_tr"].gpu_indices == (0, 1)
        assert by_name["exp_mp"].gpu_indices == (2, 3)
        devices = {d.index: d for d in snap.gpus.devices}
        assert devices[4].runs == () and devices[4].processes[0].kind == "process"
        # a minute in which rank 1 of the torchrun job lags: the straggler alert sees it
        samples = []
        for t in range(61):
            sample = json.loads(rec.read_text().splitlines()[0])
            sample["t"] = t
            sample["devices"][1]["util_percent"] = 30
            samples.append(json.dumps(sample))
        lagging = tmp_path / "lagging.jsonl"
        lagging.write_text("\n".join(samples) + "\n")
        monitor = GpuMonitor(replay=load_recording(str(lagging)))
        for t in range(61):
            view = monitor.sample(snap.generated_at + t, snap.runs, 20.0)
        monitor.close()
    finally:
        machine.close()
    assert "GPU 1 straggling in run exp_tr: 30% vs 90% on its other GPUs" in view.warnings
    assert "straggler" in [d for d in view.devices if d.index == 1][0].flags


# -- inside a container -----------------------------------------------------------------


def _namespace_prefix() -> list[str]:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare here")
    base = ["unshare", "--pid", "--fork", "--mount-proc", "--mount", "--propagation", "private"]
    tries = [base] if os.geteuid() == 0 else []
    tries.append(["unshare", "--user", "--map-root-user", *base[1:]])
    for prefix in tries:
        probe = subprocess.run(
            [*prefix, "sh", "-c", "mount -t tmpfs probe /dev && test ! -e /dev/nvidia0"],
            capture_output=True,
            timeout=30,
        )
        if probe.returncode == 0:
            return prefix
    pytest.skip("cannot make private pid and mount namespaces here (unshare refused)")


def test_container_host_pids_attributed_through_dev_nvidia(tmp_path: Path) -> None:
    """Inside new pid and mount namespaces NVML's (recorded) pids are host pids that do not
    exist; the runs' processes holding /dev/nvidiaN tell which run uses GPU N."""
    prefix = _namespace_prefix()
    assert not Path("/dev/nvidia0").exists()  # this machine's /dev stays as it is
    runs = tmp_path / "runs"
    dev = [f"/dev/nvidia{i}" for i in range(8)]
    jobs = [
        # each rank holds its own GPU's node: one host pid, one holder: paired
        _job(tmp_path, "libreyolo", "a", 2, [[dev[0]], [dev[1]]], runs / "exp_a"),
        # every rank sees both GPUs (CUDA opens every visible node): the run's, not paired
        _job(tmp_path, "torchrun", "b", 2, [[dev[2], dev[3]], [dev[2], dev[3]]], runs / "exp_b"),
        # two runs hold GPU 5's node: GPU 5 cannot be told; GPU 4 is c's
        _job(tmp_path, "mpspawn", "c", 1, [[dev[4], dev[5]]], runs / "exp_c"),
        _job(tmp_path, "mpspawn", "d", 1, [[dev[5]]], runs / "exp_d"),
    ]
    machine = Machine(tmp_path, jobs, strangers=[[dev[6]]], namespace=prefix)
    try:
        host = machine.host_pids()
        a, b, c, d = (machine.job(n) for n in "abcd")
        stranger = machine.info["strangers"][0]
        for pid in a["ranks"] + b["ranks"]:
            assert host[pid] != pid  # really another pid namespace
        unseen = _unused_pid()
        rec = _recording(
            tmp_path / "gpus.jsonl",
            {
                0: [host[a["ranks"][0]]],
                1: [host[a["ranks"][1]]],
                2: [host[b["ranks"][0]]],
                3: [host[b["ranks"][1]]],
                4: [host[c["ranks"][0]]],
                5: [host[d["ranks"][0]]],
                6: [host[stranger]],  # a process here, but no run's
                # another container's; and host pid 1, which here is another process (the
                # machine, holding no /dev/nvidia*): not taken for that process
                7: [unseen, 1],
            },
        )
        out = machine.run(
            [sys.executable, "-m", "rgpu_tui", "snapshot", "--json", "--gpu-replay", str(rec),
             str(runs)]
        )  # fmt: skip
        snap = json.loads(out)
    finally:
        machine.close()
    assert snap["gpus"]["pid_namespace"] == "host"
    gpus = _by_index(snap)
    named = _runs(snap)
    assert named["exp_a"]["state"] == "running" and named["exp_a"]["pid"] == a["ranks"][0]
    assert named["exp_a"]["gpu_indices"] == [0, 1]
    assert named["exp_b"]["gpu_indices"] == [2, 3]
    assert named["exp_c"]["gpu_indices"] == [4]
    assert named["exp_d"]["gpu_indices"] == []
    for i, rank in ((0, a["ranks"][0]), (1, a["ranks"][1])):
        (p,) = gpus[i]["processes"]
        assert p["host_pid"] is True and p["pid"] == host[rank]
        assert p["local_pid"] == rank and p["name"]  # paired: its name and memory show
        assert p["used_mib"] == 1000 + host[rank] % 997
        assert p["run_dir"] == named["exp_a"]["run_dir"] and p["kind"] == "run"
    for i in (2, 3):
        (p,) = gpus[i]["processes"]
        assert p["kind"] == "run" and p["local_pid"] is None
        assert sorted(p["local_candidates"]) == sorted(b["ranks"])  # workers are not counted
    assert gpus[4]["runs"] == [named["exp_c"]["run_dir"]]
    for i in (5, 6, 7):
        assert gpus[i]["runs"] == [], i
        for p in gpus[i]["processes"]:
            assert p["kind"] == "host" and p["run_dir"] is None and p["host_pid"] is True
    assert sorted(p["pid"] for p in gpus[7]["processes"]) == [1, unseen]
    assert sorted(gpus[5]["processes"][0]["local_candidates"]) == sorted(c["ranks"] + d["ranks"])
    assert gpus[6]["processes"][0]["local_candidates"] == []
    assert [p["local_candidates"] for p in gpus[7]["processes"]] == [[], []]


# -- the pieces --------------------------------------------------------------------------


def test_job_recognisers() -> None:
    py = "/venv/bin/python3"
    coord = "/venv/lib/python3.11/site-packages/libreyolo/training/_ddp_coordinator.py"
    assert is_coordinator([py, coord, "/tmp/libreyolo-ddp-job-x/job"])
    assert is_coordinator([py, "-u", coord, "/tmp/job"])
    assert is_coordinator([py, "-m", "libreyolo.training._ddp_coordinator", "/tmp/job"])
    assert not is_coordinator([py, "/home/me/_ddp_coordinator.py", "/tmp/job"])
    assert not is_coordinator(["bash", "-c", coord])
    assert not is_coordinator([py, "train.py", coord])
    assert is_torchrun(["/venv/bin/torchrun", "--nproc-per-node", "4", "train.py"])
    assert is_torchrun([py, "/venv/bin/torchrun", "--nproc-per-node", "4", "train.py"])
    assert is_torchrun([py, "-m", "torch.distributed.run", "train.py"])
    assert is_torchrun([py, "-X", "utf8", "-m", "torch.distributed.launch", "t.py"])
    assert not is_torchrun([py, "train.py", "torchrun"])
    assert not is_torchrun(["bash"])
    spawn = "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)"
    assert is_mp_spawn_child([py, "-c", spawn, "--multiprocessing-fork"])
    assert not is_mp_spawn_child([py, "-c", spawn])
    assert not is_mp_spawn_child([py, "train.py"])


def test_node_minors() -> None:
    nodes = {"nvidia0", "nvidia13", "nvidiactl", "nvidia-uvm", "nvidia-caps"}
    assert node_minors(nodes) == {0, 13}
    assert node_minors({"nvidia\u0663"}) == set()  # a non-ASCII digit is not a minor number


@pytest.mark.parametrize(
    "stat, initial",
    [
        ("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0", True),  # the host's namespace
        ("2 (python3) S 1 2 2 0 -1 4194560 0 0", False),  # a container's second process
        ("2 (kthreadd) S 7 2 2 0 -1 4194560 0 0", False),  # named so, but not the kernel's
        (None, False),  # no pid 2 here (a container whose pid 2 exited)
    ],
)
def test_initial_pid_namespace_from_pid_2(tmp_path: Path, stat, initial) -> None:
    if stat is not None:
        (tmp_path / "2").mkdir()
        (tmp_path / "2" / "stat").write_text(stat)
    assert in_initial_pid_namespace(str(tmp_path)) is initial


def test_container_reads_only_when_needed_and_only_the_runs_processes(
    tmp_path: Path, monkeypatch, live_process: psutil.Process, me: psutil.Process
) -> None:
    """The fd tables are read only when a GPU has host pids, at most every
    CONTAINER_RESCAN_S, and only for the runs' processes (not all of /proc)."""
    from rgpu_tui.core.machine import gpu_procs
    from rgpu_tui.core.machine.gpu_procs import DeviceReading, ProcessAttributor
    from rgpu_tui.core.model.snapshot import GpuDevice

    from ..gpu_fakes import run_info

    read: list[int] = []
    real = gpu_procs.nvidia_nodes
    monkeypatch.setattr(gpu_procs, "nvidia_nodes", lambda pid, root="/proc": read.append(pid)
                        or real(pid, root))  # fmt: skip
    runs = (run_info(str(tmp_path / "r"), live_process.pid),)
    unseen = _unused_pid()
    host = [DeviceReading(GpuDevice(0, "GPU", None, "ok", minor=0), ((unseen, 10.0),))]
    local = [DeviceReading(GpuDevice(0, "GPU", None, "ok", minor=0), ((me.pid, 10.0),))]

    on_host = ProcessAttributor(initial_pidns=True)
    for k in range(3):
        on_host.attribute(1000.0 + k, runs, host)
    assert on_host.scans == 0 and read == []  # the host's namespace: never

    inside = ProcessAttributor(initial_pidns=False, dev_ctl=str(tmp_path / "no-nvidiactl"))
    inside.attribute(1000.0, runs, local)
    assert inside.scans == 0  # NVML's pids are here: nothing to look at
    for t in (1000.0, 1001.0, 1004.9):
        devices, namespace = inside.attribute(t, runs, host)
    assert inside.scans == 1 and namespace == "host"
    assert devices[0].processes[0].kind == "host"  # the run holds no /dev/nvidia0
    assert set(read) == {live_process.pid}  # the run's process, nothing else
    inside.attribute(1000.0 + gpu_procs.CONTAINER_RESCAN_S + 0.1, runs, host)
    assert inside.scans == 2
