"""What GPU process attribution costs per refresh, on the host and in a container.

Builds a real process tree shaped like a multi-GPU job: one "launcher" process, R ranks
(its children; each opens F regular files, as a CUDA process holds many descriptors) and
W data-loader workers per rank (forked: they inherit the descriptors). Then times
`ProcessAttributor.attribute` on R GPUs:

- host: each GPU lists a rank's pid (NVML's pids are this machine's): the run's claim and
  one ancestor walk per GPU process;
- container: each GPU lists a host pid that does not exist here, so the run's processes
  are enumerated and their fd tables read (`cold`: the first refresh; `cached`: the next
  refreshes, within CONTAINER_RESCAN_S; `rescan`: a refresh after it, which reads the
  process tree and the fd tables again, since none holds a /dev/nvidia* here);
- the one pass over /proc/*/stat that finds the run's descendants where the kernel has no
  /proc/PID/task/*/children, alone, with the number of processes on this machine.

No /dev/nvidiaN is opened: the files are regular files, so the cost is the same as with
GPU nodes (a readlink per descriptor) but nothing is attributed. Prints a table (ms).

    .venv/bin/python bench/bench_gpu_procs.py [--ranks 8] [--workers 4] [--fds 64] [-k 200]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time

import benchlib

from rgpu_tui.core.machine import gpu_procs
from rgpu_tui.core.machine.gpu_procs import DeviceReading, ProcessAttributor
from rgpu_tui.core.model.snapshot import GpuDevice, RunInfo


def _forever() -> None:
    while True:
        signal.pause()


def build_job(ranks: int, workers: int, fds: int, tmp: str) -> tuple[int, list[int], int]:
    """(launcher pid, rank pids, every pid) of a job forked from this process."""
    r, w = os.pipe()
    launcher = os.fork()
    if launcher == 0:
        os.close(r)
        pids = []
        for rank in range(ranks):
            pid = os.fork()
            if pid == 0:
                held = [  # noqa: F841
                    os.open(os.path.join(tmp, f"r{rank}-{i}"), os.O_RDWR | os.O_CREAT)
                    for i in range(fds)
                ]
                kids = []
                for _ in range(workers):
                    kid = os.fork()
                    if kid == 0:
                        _forever()
                    kids.append(kid)
                os.write(w, (json.dumps([os.getpid(), kids]) + "\n").encode())
                _forever()
            pids.append(pid)
        _forever()
    os.close(w)
    with os.fdopen(r) as f:
        got = [json.loads(f.readline()) for _ in range(ranks)]
    rank_pids = sorted(pid for pid, _kids in got)
    every = [launcher, *rank_pids, *(k for _pid, kids in got for k in kids)]
    return launcher, rank_pids, every


def timed(fn, k: int) -> tuple[float, float]:
    times = []
    for _ in range(k):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def run_info(run_dir: str, pid: int) -> RunInfo:
    return RunInfo(run_dir, "bench", "running", "running", pid, True, *([None] * 11))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--fds", type=int, default=64)
    ap.add_argument("-k", "--iterations", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rgpu-bench-procs-") as tmp:
        launcher, ranks, every = build_job(args.ranks, args.workers, args.fds, tmp)
        try:
            return measure(args, launcher, ranks, every)
        finally:
            for pid in every:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            os.waitpid(launcher, 0)


def measure(args, launcher: int, ranks: list[int], every: list[int]) -> int:
    runs = (run_info("/bench/run", launcher),)
    host = [
        DeviceReading(GpuDevice(i, "GPU", None, "ok", minor=i), ((pid, 1000.0),))
        for i, pid in enumerate(ranks)
    ]
    unseen = 10**7  # over any pid_max: a host pid no process here has
    container = [
        DeviceReading(GpuDevice(i, "GPU", None, "ok", minor=i), ((unseen + i, 1000.0),))
        for i in range(len(ranks))
    ]
    rows = []

    local = ProcessAttributor(initial_pidns=True)
    now = [1000.0]
    med, p95 = timed(lambda: local.attribute(now[0], runs, host), args.iterations)
    devices, _ns = local.attribute(now[0], runs, host)
    assert all(d.runs == ("/bench/run",) for d in devices)
    rows.append(("host: ancestor walk, every refresh", med, p95))

    inside = ProcessAttributor(initial_pidns=False, dev_ctl="/nonexistent")
    t = time.perf_counter()
    inside.attribute(now[0], runs, container)
    rows.append(("container: cold (tree + fd tables)", (time.perf_counter() - t) * 1000, None))
    med, p95 = timed(lambda: inside.attribute(now[0], runs, container), args.iterations)
    rows.append(("container: cached (within 5 s)", med, p95))

    def rescan() -> None:
        now[0] += gpu_procs.CONTAINER_RESCAN_S + 1
        inside.attribute(now[0], runs, container)

    med, p95 = timed(rescan, max(args.iterations // 10, 5))
    rows.append(("container: rescan (every 5 s)", med, p95))
    med, p95 = timed(lambda: inside._children_map(), max(args.iterations // 10, 5))
    n_procs = sum(1 for name in os.listdir("/proc") if name.isdigit())
    rows.append((f"/proc/*/stat pass alone ({n_procs} processes)", med, p95))

    children_files = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    print(
        f"job: 1 launcher, {len(ranks)} ranks x {args.fds} fds, {args.workers} workers each "
        f"({len(every)} processes); /proc/PID/task/*/children: "
        f"{'yes' if children_files else 'no (the /proc/*/stat pass is used)'}"
    )
    print(f"{'case':<46} {'median ms':>10} {'p95 ms':>8}")
    for name, med, p95 in rows:
        p95_text = f"{p95:8.3f}" if p95 is not None else "       -"
        print(f"{name:<46} {med:10.3f} {p95_text}")
    period = gpu_procs.CONTAINER_RESCAN_S
    amortised = (rows[3][1] + rows[2][1] * (period - 1)) / period
    print(f"container refresh, amortised over {period:g} s at 1 Hz: {amortised:.3f} ms")
    print(json.dumps({"machine": benchlib.machine()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
