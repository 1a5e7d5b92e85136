"""Peak memory of `rgpu-tui snapshot --json` and `rgpu-tui chart --json` over a run whose
metrics.jsonl holds 1,000 and 1,000,000 rows (issue 34 item 3: memory grew with the rows,
~240 bytes a row; the goal is 1M rows within a small constant of 1k rows).

Builds one completed run per size (status.json, metrics.jsonl of short rows: epoch, time,
a train loss and mAP50-95, ~90 bytes a row; every 50,000th epoch written twice, a resume
from an earlier checkpoint), then runs each command in a subprocess and reads its peak
resident memory from the kernel (os.wait4's ru_maxrss) and its wall time. Prints a table
and the machine. Asserts nothing.

    .venv/bin/python bench/bench_metrics_memory.py                    # 1k and 1M rows
    .venv/bin/python bench/bench_metrics_memory.py --rows 1000 3000000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import log, machine, utc_iso

RGPU_TUI = Path(sys.executable).parent / "rgpu-tui"


def build_run(run: Path, rows: int) -> int:
    run.mkdir(parents=True)
    status = {
        "state": "completed",
        "started_at": utc_iso(time.time() - 3600),
        "updated_at": utc_iso(),
        "completed_epochs": rows,
        "total_epochs": rows,
        "best_metric_name": "metrics/mAP50-95",
    }
    (run / "status.json").write_text(json.dumps(status))
    with open(run / "metrics.jsonl", "w") as f:
        epoch = 0
        for i in range(rows):
            epoch += 1
            if i and i % 50_000 == 0:
                epoch -= 10  # a resume from ten epochs back: those epochs are written again
            loss = 20.0 / (1 + i * 0.001)
            f.write(
                f'{{"epoch": {epoch}, "time": 1.5, "train/loss": {loss:.6f}, '
                f'"metrics/mAP50-95": {0.5 - loss / 100:.6f}, "validated": true}}\n'
            )
    return (run / "metrics.jsonl").stat().st_size


def measure(argv: list[str], env: dict) -> dict:
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage: its peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{argv[1]} exited {proc.returncode}: {err.read()[-500:]!r}")
    return {"peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "wall_s": round(wall, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1000, 1_000_000])
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rgpu-bench-metrics-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RGPU_", "HF_"))}
    env.update(HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "home" / ".config"))
    results = []
    try:
        for rows in args.rows:
            root = base / f"root{rows}"
            run = root / "run"
            log(f"{rows:,} rows ...")
            size = build_run(run, rows)
            snap = measure([str(RGPU_TUI), "snapshot", "--json", str(root)], env)
            chart = measure([str(RGPU_TUI), "chart", "--json", str(run)], env)
            results.append(
                {"rows": rows, "file_mb": round(size / 1e6, 1), "snapshot": snap, "chart": chart}
            )
            shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    info = {"results": results, "load_avg": os.getloadavg(), "machine": machine()}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{'rows':>10} {'file MB':>8} {'snapshot MB':>12} {'s':>6} {'chart MB':>9} {'s':>6}")
    for r in results:
        s, c = r["snapshot"], r["chart"]
        print(
            f"{r['rows']:>10,} {r['file_mb']:>8.1f} {s['peak_rss_mb']:>12.1f} {s['wall_s']:>6.2f} "
            f"{c['peak_rss_mb']:>9.1f} {c['wall_s']:>6.2f}"
        )
    mach = info["machine"]
    load = ", ".join(f"{x:.2f}" for x in info["load_avg"])
    print(f"machine: {mach['nproc']} CPUs, {mach['cpu']}, Python {mach['python']}; load {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
