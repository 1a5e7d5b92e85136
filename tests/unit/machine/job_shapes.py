"""Real process shapes of multi-GPU training jobs, for the rank-attribution tests.

Run as a script (stdlib only; the tests start it with the venv's python):

    python job_shapes.py libreyolo CONFIG   # train -> coordinator -> mp.spawn()ed ranks
    python job_shapes.py mpspawn CONFIG     # train -> mp.spawn()ed ranks (no coordinator)
    python .../torchrun CONFIG              # agent -> ranks (TORCHRUN_SOURCE at that path)
    python job_shapes.py machine CONFIG     # several of the above and unrelated processes,
                                            # then runs the commands it reads on stdin

The shapes are libreyolo's: `libreyolo train device=0,1,...` starts its private DDP
coordinator (`sys.executable .../libreyolo/training/_ddp_coordinator.py JOB_DIR`, in a new
session) which mp.spawn()s one process per rank; rank 0 writes status.json with its own
pid. The coordinator here is a file at a path ending in libreyolo/training/_ddp_coordinator.py
(the config names it). Each rank holds open the files the config lists for it (the
/dev/nvidiaN of a private /dev in the container test), forks one "data-loader worker"
(which inherits them, as a DataLoader worker does) and waits to be killed. When every rank
is up, the job prints one JSON line: {"job": NAME, "launcher": pid, "coordinator": pid,
"ranks": [pid, ...], "workers": [pid, ...]}.

CONFIG is a JSON file: {"name", "ranks": N, "nodes": [[path, ...] per rank],
"run_dir": dir or null (rank 0 writes status.json there), "coordinator_path": path}.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))


def _config(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def _forever() -> None:
    while True:
        signal.pause()


def _write_status(run_dir: str) -> None:
    now = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    status = {
        "schema_version": 1,
        "pid": os.getpid(),
        "state": "running",
        "started_at": now,
        "updated_at": now,
        "total_epochs": 10,
        "completed_epochs": 0,
        "current_epoch": 1,
        "save_dir": run_dir,
        "model_family": "yolo9",
        "model_size": "t",
    }
    os.makedirs(run_dir, exist_ok=True)
    tmp = os.path.join(run_dir, ".status.json.tmp")
    with open(tmp, "w") as f:
        json.dump(status, f)
    os.replace(tmp, os.path.join(run_dir, "status.json"))


def rank_main(rank: int, cfg: dict, report) -> None:
    """One rank: hold its nodes, fork a worker, rank 0 writes status.json, report."""
    held = [os.open(path, os.O_RDONLY) for path in cfg["nodes"][rank]]  # noqa: F841
    worker = os.fork()
    if worker == 0:
        _forever()
    if rank == 0 and cfg.get("run_dir"):
        _write_status(cfg["run_dir"])
        # libreyolo's rank 0 keeps the run's train.log open while it trains (the run's
        # process works in its run directory: core.run.run_process)
        log = open(os.path.join(cfg["run_dir"], "train.log"), "a")  # noqa: F841, SIM115
    report(rank, os.getpid(), worker)
    _forever()


def _spawn_rank(rank: int, cfg: dict, queue) -> None:
    rank_main(rank, cfg, lambda r, pid, w: queue.put((r, pid, w)))


def spawn_ranks(cfg: dict) -> tuple[list[int], list[int]]:
    """mp.spawn()-style ranks of this process: (rank pids, worker pids) once all are up."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_spawn_rank, args=(r, cfg, queue)) for r in range(cfg["ranks"])]
    for p in procs:
        p.start()
    got = sorted(queue.get(timeout=60) for _ in procs)
    return [pid for _r, pid, _w in got], [w for _r, _pid, w in got]


def _say(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def coordinator_main(config_path: str) -> None:
    cfg = _config(config_path)
    ranks, workers = spawn_ranks(cfg)
    _say(job=cfg["name"], launcher=os.getppid(), coordinator=os.getpid(), ranks=ranks,
         workers=workers)  # fmt: skip
    _forever()


def libreyolo_train(config_path: str) -> None:
    """libreyolo's `train` process: start the coordinator with sys.executable, in a new
    session (launch_coordinator does), and wait for it."""
    cfg = _config(config_path)
    proc = subprocess.Popen(
        [sys.executable, cfg["coordinator_path"], config_path], start_new_session=True
    )
    proc.wait()


def mpspawn_train(config_path: str) -> None:
    cfg = _config(config_path)
    ranks, workers = spawn_ranks(cfg)
    _say(job=cfg["name"], launcher=os.getpid(), coordinator=None, ranks=ranks, workers=workers)
    _forever()


def torchrun_agent(config_path: str) -> None:
    """A torchrun-shaped agent: each rank a subprocess of its own (`python job_shapes.py
    rank CONFIG R`), which says it is up on its stdout."""
    cfg = _config(config_path)
    procs = [
        subprocess.Popen(
            [sys.executable, os.path.join(HERE, "job_shapes.py"), "rank", config_path, str(r)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for r in range(cfg["ranks"])
    ]
    got = sorted(tuple(json.loads(p.stdout.readline())) for p in procs)
    _say(job=cfg["name"], launcher=None, coordinator=os.getpid(),
         ranks=[pid for _r, pid, _w in got], workers=[w for _r, _pid, w in got])  # fmt: skip
    _forever()


def torchrun_rank(config_path: str, rank: int) -> None:
    rank_main(rank, _config(config_path), lambda r, pid, w: _say_list([r, pid, w]))


def _say_list(items: list) -> None:
    sys.stdout.write(json.dumps(items) + "\n")
    sys.stdout.flush()


def _read_json_line(proc: subprocess.Popen, deadline: float) -> dict:
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"process {proc.pid} ended before saying it was up")
    if time.monotonic() > deadline:
        raise RuntimeError("too slow")
    return json.loads(line)


def machine_main(config_path: str) -> None:
    """A machine (a container's pid 1, say): the jobs in CONFIG["jobs"] (each the argv
    that starts it), and "strangers": plain `python` processes holding the files listed, started
    by this plain parent like the jobs' launchers. Prints {"jobs": [...], "strangers":
    [...], "machine": pid}; then for each line on stdin, a JSON {"argv": [...], "out":
    path}, runs argv with stdout to `out` and prints {"rc": code}."""
    cfg = _config(config_path)
    deadline = time.monotonic() + 120
    jobs, children = [], []
    for argv in cfg["jobs"]:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        children.append(proc)
        jobs.append({**_read_json_line(proc, deadline), "train": proc.pid})
    strangers = []
    for paths in cfg.get("strangers", []):
        code = (
            "import os, signal, sys\n"
            "held = [os.open(p, os.O_RDONLY) for p in sys.argv[1:]]\n"
            "print('up', flush=True)\n"
            "signal.pause()\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code, *paths], stdout=subprocess.PIPE)
        proc.stdout.readline()
        strangers.append(proc.pid)
        children.append(proc)
    _say(jobs=jobs, strangers=strangers, machine=os.getpid())
    for line in sys.stdin:
        request = json.loads(line)
        with open(request["out"], "w") as out:
            rc = subprocess.run(request["argv"], stdout=out, stderr=subprocess.STDOUT).returncode
        _say(rc=rc)


def main(argv: list[str]) -> None:
    sys.path.insert(0, HERE)
    shape, config_path = argv[0], argv[1]
    if shape == "libreyolo":
        libreyolo_train(config_path)
    elif shape == "mpspawn":
        mpspawn_train(config_path)
    elif shape == "torchrun":
        torchrun_agent(config_path)
    elif shape == "rank":
        torchrun_rank(config_path, int(argv[2]))
    elif shape == "machine":
        machine_main(config_path)
    else:
        raise SystemExit(f"unknown shape {shape!r}")


COORDINATOR_SOURCE = f"""\
# a stand-in for libreyolo/training/_ddp_coordinator.py: same path, same process shape
import sys
sys.path.insert(0, {HERE!r})
from job_shapes import coordinator_main

if __name__ == "__main__":
    coordinator_main(sys.argv[1])
"""

TORCHRUN_SOURCE = f"""\
# a stand-in for torch's `torchrun` script: same name, same process shape
import sys
sys.path.insert(0, {HERE!r})
from job_shapes import torchrun_agent

torchrun_agent(sys.argv[1])
"""


if __name__ == "__main__":
    main(sys.argv[1:])
