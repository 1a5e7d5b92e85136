"""What `rgpu-tui exporter` costs: a scrape with 50 runs and 8 GPUs (budget: 20 ms), and the
exporter idle at a 15 s scrape interval (budget: under 0.3% of one core).

Builds a root of 50 runs: 42 completed copies of the real libreyolo run in tests/fixtures
(each with a weights/best.pt and a push record, half of them stale), 6 running runs whose
trainers are sleeping processes (so the 8 simulated GPUs work for them) and 2 dead ones.
Starts the real command (`rgpu-tui exporter ROOT --listen 127.0.0.1:0 --fake-gpus 8
--price-per-hour 3.48`) and measures:

- **scrape, fresh**: GET /metrics more than a second after the last refresh, so the scrape
  waits for a new Snapshot (the refresh of 50 runs and 8 GPUs, the weights verdicts, the
  families and the text): wall time seen by the client on loopback;
- **scrape, cached**: GET /metrics within the same second (the text only);
- **idle CPU**: the process's CPU time (utime + stime from /proc, and schedstat) over
  `--seconds` while a scrape comes every `--scrape-interval` (15) seconds, in % of one core.

Prints median, p95 and max of each, the machine and its load. Asserts nothing.

    .venv/bin/python bench/bench_exporter.py                 # 40 scrapes each, 120 s idle
    .venv/bin/python bench/bench_exporter.py --scrapes 10 --seconds 60 --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_watch import schedstat, stat_ticks
from benchlib import log, machine, utc_iso

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "fixtures" / "run_completed"
RGPU_TUI = Path(sys.executable).parent / "rgpu-tui"
TICKS = os.sysconf("SC_CLK_TCK")


def build_root(base: Path, completed: int, running: int, dead: int):
    import psutil

    root = base / "runs"
    root.mkdir()
    for i in range(completed):
        run = root / f"done{i:02d}"
        shutil.copytree(SAMPLE, run)
        best = run / "weights" / "best.pt"
        best.write_bytes(os.urandom(4096))
        pushed = best.stat().st_mtime + (0 if i % 2 else -3600)  # half of them stale
        record = {"time": utc_iso(pushed), "file": "best.pt", "size": 4096, "outcome": "ok"}
        (run / ".rgpu").mkdir()
        (run / ".rgpu" / "pushes.jsonl").write_text(json.dumps(record) + "\n")
    trainers = []
    for i in range(running):
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(86400)"])
        trainers.append(proc)
        created = psutil.Process(proc.pid).create_time()
        run = root / f"live{i}"
        run.mkdir()
        status = {
            "state": "running",
            "pid": proc.pid,
            "started_at": utc_iso(int(created)),
            "updated_at": utc_iso(),
            "current_epoch": 4,
            "completed_epochs": 3,
            "total_epochs": 100,
            "mean_epoch_seconds": 3600.0,  # not stalled while the bench runs
            "best_metric": 0.3,
            "best_metric_name": "metrics/mAP50-95",
        }
        (run / "status.json").write_text(json.dumps(status))
        shutil.copy(SAMPLE / "metrics.jsonl", run / "metrics.jsonl")
    for i in range(dead):
        run = root / f"dead{i}"
        run.mkdir()
        status = {"state": "running", "pid": 4_000_000 + i, "total_epochs": 10}
        (run / "status.json").write_text(json.dumps(status))
    return root, trainers


def get(url: str) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as resp:
        body = resp.read()
    return (time.perf_counter() - t0) * 1000, body


def summary(ms: list[float]) -> dict:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p95_ms": round(p95, 2),
        "max_ms": round(ordered[-1], 2),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scrapes", type=int, default=40, help="scrapes of each kind (40)")
    p.add_argument("--seconds", type=float, default=120.0, help="idle window (120)")
    p.add_argument("--scrape-interval", type=float, default=15.0, help="idle scrapes (15 s)")
    p.add_argument("--completed", type=int, default=42)
    p.add_argument("--running", type=int, default=6)
    p.add_argument("--dead", type=int, default=2)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rgpu-bench-exporter-"))
    root, trainers = build_root(base, args.completed, args.running, args.dead)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RGPU_", "HF_"))}
    env.update(HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "home" / ".config"))
    argv = [str(RGPU_TUI), "exporter", str(root), "--listen", "127.0.0.1:0"]
    argv += ["--fake-gpus", "8", "--price-per-hour", "3.48"]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = re.search(r"serving (http://\S+)", line)
        if not m:
            raise SystemExit(f"the exporter did not start: {line}{proc.stderr.read()}")
        url = m.group(1)
        _, body = get(url)
        samples = sum(1 for x in body.splitlines() if x and not x.startswith(b"#"))
        fresh, cached = [], []
        log(f"{args.scrapes} fresh and {args.scrapes} cached scrapes ...")
        for _ in range(args.scrapes):
            time.sleep(1.05)  # the Snapshot is more than a second old: this scrape refreshes
            fresh.append(get(url)[0])
            cached.append(get(url)[0])
        log(f"idle: a scrape every {args.scrape_interval:g} s for {args.seconds:g} s ...")
        t0, ticks0, (ns0, wakes0) = time.monotonic(), stat_ticks(proc.pid), schedstat(proc.pid)
        next_at = t0
        while time.monotonic() - t0 < args.seconds:
            if time.monotonic() >= next_at:
                get(url)
                next_at += args.scrape_interval
            time.sleep(max(0.0, min(next_at, t0 + args.seconds) - time.monotonic()))
        wall = time.monotonic() - t0
        ticks1, (ns1, wakes1) = stat_ticks(proc.pid), schedstat(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        for t in trainers:
            t.kill()
            t.wait()
        shutil.rmtree(base, ignore_errors=True)
    info = {
        "runs": args.completed + args.running + args.dead,
        "gpus": 8,
        "samples_per_scrape": samples,
        "bytes_per_scrape": len(body),
        "scrape_fresh": summary(fresh),
        "scrape_cached": summary(cached),
        "idle": {
            "seconds": round(wall, 1),
            "scrape_interval_s": args.scrape_interval,
            "cpu_percent_stat": round((ticks1 - ticks0) / TICKS / wall * 100, 3),
            "cpu_percent_schedstat": round((ns1 - ns0) / 1e9 / wall * 100, 3),
            "wakes_per_s": round((wakes1 - wakes0) / wall, 2),
        },
        "exit_code": code,
        "load_avg": os.getloadavg(),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(
        f"rgpu-tui exporter: {info['runs']} runs, 8 simulated GPUs, "
        f"{samples} samples ({len(body)} bytes) a scrape"
    )
    print(f"{'scrape':>8} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}  (budget 20 ms)")
    for name in ("fresh", "cached"):
        s = info[f"scrape_{name}"]
        print(f"{name:>8} {s['median_ms']:>10.2f} {s['p95_ms']:>8.2f} {s['max_ms']:>8.2f}")
    i = info["idle"]
    print(
        f"idle, a scrape every {i['scrape_interval_s']:g} s over {i['seconds']:g} s: "
        f"{i['cpu_percent_stat']:.3f}% of a core (stat), {i['cpu_percent_schedstat']:.3f}% "
        f"(schedstat), {i['wakes_per_s']:.2f} wake-ups/s (budget 0.3%)"
    )
    mach = info["machine"]
    load = ", ".join(f"{x:.2f}" for x in info["load_avg"])
    print(f"machine: {mach['nproc']} CPUs, {mach['cpu']}, Python {mach['python']}; load {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
