"""What `rgpu-tui watch` costs while nothing happens (the budget: under 0.5% of one core).

Builds an idle runs root with a few runs (completed copies of the real libreyolo run in
tests/fixtures, one running run whose trainer is a sleeping process, one dead run), starts
`rgpu-tui watch ROOT --interval I` with a private HOME and state folder (and a notify
command, which idles), lets it settle, then reads its CPU time over N seconds:

- utime + stime from /proc/PID/stat (clock ticks, what `top` shows), and
- the sum of /proc/PID/task/*/schedstat (nanoseconds on a CPU, exact), with wake-ups.

It prints CPU % of one core for each interval asked, with the machine and its load (the
number is only as quiet as the machine). Asserts nothing.

    .venv/bin/python bench/bench_watch.py                       # 60 s at the default interval
    .venv/bin/python bench/bench_watch.py --seconds 30 --interval 1 --interval 2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import log, machine, utc_iso

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "fixtures" / "run_completed"
RGPU_TUI = Path(sys.executable).parent / "rgpu-tui"
TICKS = os.sysconf("SC_CLK_TCK")


def build_root(base: Path, completed: int) -> tuple[Path, subprocess.Popen]:
    root = base / "runs"
    root.mkdir()
    for i in range(completed):
        shutil.copytree(SAMPLE, root / f"done{i}", ignore=shutil.ignore_patterns("*.pt"))
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(86400)"])
    import psutil

    created = psutil.Process(trainer.pid).create_time()
    live = root / "live"
    live.mkdir()
    status = {
        "state": "running",
        "pid": trainer.pid,
        "started_at": utc_iso(int(created)),
        "updated_at": utc_iso(),
        "total_epochs": 100,
        "completed_epochs": 3,
        "mean_epoch_seconds": 3600.0,  # not stalled while the bench runs
    }
    (live / "status.json").write_text(json.dumps(status))
    dead = root / "dead"
    dead.mkdir()
    (dead / "status.json").write_text(json.dumps({**status, "pid": 4_000_000}))
    return root, trainer


def stat_ticks(pid: int) -> int:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def schedstat(pid: int) -> tuple[int, int]:
    ns = wakes = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue
        ns += int(fields[0])
        wakes += int(fields[2])
    return ns, wakes


def measure(root: Path, base: Path, interval: float | None, seconds: float, warmup: float):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RGPU_", "HF_"))}
    env.update(HOME=str(base / "home"), XDG_STATE_HOME=str(base / f"state-{interval}"))
    env["XDG_CONFIG_HOME"] = str(base / "home" / ".config")
    env["RGPU_NOTIFY_COMMAND"] = json.dumps([sys.executable, "-c", "pass", "{message}"])
    argv = [str(RGPU_TUI), "watch", str(root)]
    if interval is not None:
        argv += ["--interval", str(interval)]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stderr.readline()  # "watching ...": started
        if "watching" not in line:
            raise SystemExit(f"watch did not start: {line}{proc.stderr.read()}")
        time.sleep(warmup)  # imports done, first looks made, the first events sent
        t0, ticks0, (ns0, wakes0) = time.monotonic(), stat_ticks(proc.pid), schedstat(proc.pid)
        time.sleep(seconds)
        wall = time.monotonic() - t0
        ticks1, (ns1, wakes1) = stat_ticks(proc.pid), schedstat(proc.pid)
        rss_kb = 0
        for row in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if row.startswith("VmRSS:"):
                rss_kb = int(row.split()[1])
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    return {
        "interval_s": interval if interval is not None else "default",
        "seconds": round(wall, 1),
        "cpu_percent_stat": round((ticks1 - ticks0) / TICKS / wall * 100, 3),
        "cpu_percent_schedstat": round((ns1 - ns0) / 1e9 / wall * 100, 3),
        "wakes_per_s": round((wakes1 - wakes0) / wall, 2),
        "rss_mb": round(rss_kb / 1024, 1),
        "exit_code": code,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="measured window (60)")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring (5)")
    p.add_argument("--interval", type=float, action="append", help="watch --interval (repeatable)")
    p.add_argument("--completed", type=int, default=3, help="completed runs in the root (3)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    intervals = args.interval or [None]
    base = Path(tempfile.mkdtemp(prefix="rgpu-bench-watch-"))
    root, trainer = build_root(base, args.completed)
    try:
        rows = []
        for interval in intervals:
            log(f"watch --interval {interval or 'default'}: {args.seconds:g} s ...")
            rows.append(measure(root, base, interval, args.seconds, args.warmup))
    finally:
        trainer.kill()
        trainer.wait()
        shutil.rmtree(base, ignore_errors=True)
    info = {
        "runs": args.completed + 2,
        "load_avg": os.getloadavg(),
        "machine": machine(),
        "results": rows,
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"rgpu-tui watch on an idle root of {info['runs']} runs (budget: 0.5% of one core)")
    print(f"{'interval':>9} {'CPU% stat':>10} {'CPU% sched':>11} {'wakes/s':>8} {'RSS MB':>7}")
    for r in rows:
        print(
            f"{r['interval_s']!s:>9} {r['cpu_percent_stat']:>10.3f} "
            f"{r['cpu_percent_schedstat']:>11.3f} {r['wakes_per_s']:>8.2f} {r['rss_mb']:>7.1f}"
        )
    m = info["machine"]
    load = ", ".join(f"{x:.2f}" for x in info["load_avg"])
    print(f"machine: {m['nproc']} CPUs, {m['cpu']}, Python {m['python']}; load {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
