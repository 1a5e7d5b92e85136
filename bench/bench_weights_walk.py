"""What autostop's walk of a root costs (core.run.weights_finder): the first walk, and a walk
with nothing changed (one stat a folder), for a root of RUNS runs (each with a weights folder
of best.pt, last.pt and a few epoch_N.pt) beside a tree of EXTRA folders (a dataset, a
cache). It prints milliseconds per walk and folders walked; asserts nothing.

    .venv/bin/python bench/bench_weights_walk.py                  # 200 runs, 10,000 more folders
    .venv/bin/python bench/bench_weights_walk.py --runs 1000 --extra 45000 --repeat 20
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchlib import log, machine

from rgpu_tui.core.run.weights_finder import WeightsFinder


def build(base: Path, runs: int, extra: int) -> Path:
    root = base / "runs"
    for i in range(runs):
        weights = root / f"exp{i}" / "weights"
        weights.mkdir(parents=True)
        for name in ("best.pt", "last.pt", "epoch_10.pt", "epoch_20.pt"):
            (weights / name).write_bytes(b"x")
    per = 100  # folders per level of the extra tree
    for i in range(extra):
        (root / "data" / f"d{i // per}" / f"e{i % per}").mkdir(parents=True, exist_ok=True)
    return root


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--extra", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rgpu-walk-"))
    try:
        root = build(base, args.runs, args.extra)
        time.sleep(2.5)  # past the racily-clean window: the cache holds from the next walk
        finder = WeightsFinder(str(root))
        t = time.perf_counter()
        scan = finder.scan()
        first_ms = (time.perf_counter() - t) * 1000
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            again = finder.scan()
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        out = {
            "machine": machine(),
            "runs": args.runs,
            "folders_walked": scan.dirs,
            "weights_folders": len(scan.folders),
            "first_walk_ms": round(first_ms, 1),
            "cached_walk_ms_median": round(times[len(times) // 2], 1),
            "cached_walk_listed": finder.listed,
            "doubts": list(again.doubts),
        }
        if args.json:
            print(json.dumps(out))
        else:
            for key, value in out.items():
                log(f"{key}: {value}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
