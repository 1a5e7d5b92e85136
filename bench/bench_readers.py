#!/usr/bin/env python
"""Per-refresh cost of rgpu-tui's readers against libreyolo's own monitor readers.

Builds one live-looking libreyolo run directory (status.json saying "running"
with this process's pid, metrics.jsonl with --rows realistic epoch rows,
train.log of --log-gib GiB of real bytes), then, in one process:

* rgpu-tui: ``RunsWatcher(root).refresh(now, selected=run_dir)``; the first
  refresh (which parses the whole history once) is timed on its own, then
  --iterations refreshes with nothing appended ("idle"), then --iterations
  refreshes each after appending one metrics row, 10 log lines and an atomic
  status.json rewrite, as a live run does after every epoch (the appending is
  not timed).
* libreyolo: what its monitor (``libreyolo/ui/train_monitor.py``) does per
  poll: ``_read_status`` + ``_read_metrics`` (re-parses the whole history) +
  ``_read_log_tail`` (the last 200 KB), --lib-iterations times after the same
  kind of append. The JSON encoding of its HTTP response is not counted, which
  flatters libreyolo.

It prints a table, the ratio (libreyolo median / rgpu-tui median) and whether
the goals (>= 100x faster, <= 2 ms per refresh) are met. It asserts nothing.

    .venv/bin/python bench/bench_readers.py                 # full size, temp dir
    .venv/bin/python bench/bench_readers.py --dir /tmp/rgpu-bench-fixture --keep
    .venv/bin/python bench/bench_readers.py --rows 2000 --log-gib 0.01 --json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import benchlib
from benchlib import METRIC_KEYS, METRIC_KEYS_2, add_speed_and_lr, log, utc_iso

REPO = Path(__file__).resolve().parents[1]
MARKER = "bench_fixture.json"
FIXTURE_VERSION = 1
RUN_NAME = "run1"
ROW_BYTES_ESTIMATE = 1500
LOG_BLOCK_BYTES = 4 * 1024 * 1024
LOG_LINES_PER_REFRESH = 10
GOAL_RATIO = 100.0
GOAL_MS = 2.0

# Column order and kinds of a real libreyolo 1.6 metrics.jsonl row (yolo9, detect).
LOSS_KEYS = ("train/loss", "train/box_loss", "train/cls_loss", "train/dfl_loss")
# -- fixture ------------------------------------------------------------------


class RowMaker:
    """Realistic, varied metrics rows: losses fall, mAPs rise, all with noise."""

    def __init__(self, seed: int, total_epochs: int):
        self.rng = random.Random(seed)
        self.total = max(total_epochs, 1)
        self.best = -1.0
        self.best_epoch = 0

    def row(self, epoch: int) -> dict:
        r = self.rng
        frac = min(epoch / self.total, 1.0)
        quality = 0.55 * (1.0 - math.exp(-6.0 * frac))
        m = max(0.0, quality + r.gauss(0.0, 0.01))
        is_best = m >= self.best
        if is_best:
            self.best, self.best_epoch = m, epoch
        row: dict = {
            "epoch": epoch,
            "time": 58.0 + r.random() * 6.0,
        }
        base = 2.0 + 18.0 * math.exp(-5.0 * frac)
        row["train/loss"] = base + r.gauss(0.0, 0.2)
        row.update(
            {
                "validated": True,
                "is_best": is_best,
                "current_metric": m,
                "current_metric_name": "metrics/mAP50-95",
                "best_metric": self.best,
                "best_metric_name": "metrics/mAP50-95",
                "best_epoch": self.best_epoch,
            }
        )
        for key, share in zip(LOSS_KEYS[1:], (0.40, 0.32, 0.28), strict=True):
            row[key] = base * share + r.gauss(0.0, 0.05)
        for i, key in enumerate(METRIC_KEYS):
            row[key] = min(1.0, max(0.0, quality * (1.0 + 0.05 * i) + r.gauss(0.0, 0.01)))
        row["metrics/max_det"] = 100.0
        for key in METRIC_KEYS_2:
            row[key] = min(1.0, max(0.0, quality * 1.3 + r.gauss(0.0, 0.02)))
        add_speed_and_lr(row, r, frac)
        return row

    def line(self, epoch: int) -> bytes:
        return (json.dumps(self.row(epoch)) + "\n").encode()


def log_lines(epoch: int, ts: float, rng: random.Random) -> list[str]:
    """The lines libreyolo's train.log gets for one epoch (its real format)."""
    stamp = datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    loss = 2.0 + rng.random() * 18.0
    m50, m = rng.random() * 0.8, rng.random() * 0.55
    lines = [
        f"Epoch {epoch} - Average loss: {loss:.4f}",
        f"Running validation for epoch {epoch}",
        "Loading 5000 YOLO annotations from labels/val...",
        "Loaded 5000 YOLO annotations from labels/val in 0.41s",
        "Building COCO API for 5000 images...",
        "  Loaded 36781 annotations across 5000 images",
        "COCO eval backend: pycocotools ?",
        f"Validation - mAP50: {m50:.4f}, mAP50-95: {m:.4f}",
        f"New best model saved - Epoch {epoch}: metrics/mAP50-95={m:.4f}",
        "Checkpoint saved: /root/runs/run1/weights/last.pt",
    ]
    return [f"{stamp} | {'INFO':<8} | {text}\n" for text in lines]


def log_block(target: int, rng: random.Random) -> bytes:
    out: list[str] = []
    size = 0
    epoch = 1
    ts = time.time() - 86400.0
    while size < target:
        for line in log_lines(epoch, ts, rng):
            out.append(line)
            size += len(line)
        epoch += 1
        ts += 60.0
    return "".join(out).encode()


def running_status(run_dir: Path, epoch: int, total: int, started: float) -> dict:
    """A status.json as libreyolo writes it after an epoch, pid = this process."""
    return {
        "schema_version": 1,
        "pid": os.getpid(),
        "model_family": "yolo9",
        "model_size": "t",
        "task": "detect",
        "save_dir": str(run_dir),
        "total_epochs": total,
        "start_epoch": 1,
        "started_at": utc_iso(started),
        "state": "running",
        "current_epoch": epoch,
        "completed_epochs": epoch,
        "epoch_seconds": 61.2,
        "mean_epoch_seconds": 60.4,
        "eta_seconds": 60.4 * max(total - epoch, 0),
        "train_loss": 3.1,
        "metrics": {"mAP50-95": 0.41, "mAP50": 0.58, "precision": 0.62, "recall": 0.51},
        "validated": True,
        "current_metric": 0.41,
        "current_metric_name": "metrics/mAP50-95",
        "best_metric": 0.42,
        "best_metric_name": "metrics/mAP50-95",
        "best_epoch": max(epoch - 3, 1),
        "elapsed_seconds": round(time.time() - started, 3),
        "progress": epoch / total,
        "updated_at": utc_iso(),
    }


def write_status(run_dir: Path, epoch: int, total: int, started: float) -> None:
    """Atomic rewrite (new inode), as libreyolo does after every epoch."""
    path = run_dir / "status.json"
    tmp = run_dir / ".status.json.tmp"
    tmp.write_text(json.dumps(running_status(run_dir, epoch, total, started), indent=2))
    os.replace(tmp, path)


def needed_bytes(rows: int, log_bytes: int) -> int:
    return log_bytes + rows * ROW_BYTES_ESTIMATE + 64 * 1024 * 1024


def check_disk(where: Path, need: int) -> None:
    probe = where
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        sys.exit(
            f"Not enough disk space for the fixture under {probe}: it needs about "
            f"{need / 2**30:.2f} GiB and {free / 2**30:.2f} GiB is free. "
            "Use --dir on a larger disk, or a smaller --log-gib / --rows."
        )
    log(f"disk: {free / 2**30:.1f} GiB free under {probe}, fixture needs ~{need / 2**30:.2f} GiB")


def prepare_fixture(root: Path, rows: int, log_bytes: int, seed: int) -> dict:
    """Build the fixture under `root`, or reuse it (cut back to its built size)."""
    run_dir = root / RUN_NAME
    marker_path = root / MARKER
    wanted = {"version": FIXTURE_VERSION, "rows": rows, "log_target": log_bytes, "seed": seed}
    if marker_path.exists():
        try:
            marker = json.loads(marker_path.read_text())
        except (OSError, ValueError):
            marker = {}
        same = all(marker.get(k) == v for k, v in wanted.items())
        metrics, logf = run_dir / "metrics.jsonl", run_dir / "train.log"
        if (
            same
            and metrics.exists()
            and logf.exists()
            and metrics.stat().st_size >= marker["metrics_bytes"]
            and logf.stat().st_size >= marker["log_bytes"]
        ):
            # earlier runs appended rows and lines: cut back to the built size
            os.truncate(metrics, marker["metrics_bytes"])
            os.truncate(logf, marker["log_bytes"])
            log(f"reusing the fixture in {root}")
            return marker
        log(f"fixture in {root} does not match the options: rebuilding it")
        shutil.rmtree(run_dir, ignore_errors=True)
        marker_path.unlink()
    elif root.exists() and any(root.iterdir()):
        sys.exit(f"{root} is not empty and holds no {MARKER}: refusing to write there.")

    check_disk(root, needed_bytes(rows, log_bytes))
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    t0 = time.perf_counter()
    maker = RowMaker(seed, total_epochs=rows)
    with open(run_dir / "metrics.jsonl", "wb") as f:
        batch = 5000
        for start in range(1, rows + 1, batch):
            f.write(b"".join(maker.line(e) for e in range(start, min(start + batch, rows + 1))))
    t1 = time.perf_counter()
    log(f"metrics.jsonl: {rows:,} rows in {t1 - t0:.1f} s")

    block = log_block(LOG_BLOCK_BYTES, random.Random(seed + 1))
    written = 0
    with open(run_dir / "train.log", "wb") as f:
        while written + len(block) <= log_bytes:
            f.write(block)
            written += len(block)
        rest = block[: log_bytes - written]
        rest = rest[: rest.rfind(b"\n") + 1]  # whole lines only
        f.write(rest)
        written += len(rest)
    t2 = time.perf_counter()
    log(f"train.log: {written / 2**30:.3f} GiB in {t2 - t1:.1f} s")

    write_status(run_dir, rows, rows * 2, started)
    marker = dict(wanted)
    marker["metrics_bytes"] = (run_dir / "metrics.jsonl").stat().st_size
    marker["log_bytes"] = written
    marker_path.write_text(json.dumps(marker, indent=2))
    return marker


class LiveRun:
    """Appends what a training run appends after one epoch."""

    def __init__(self, run_dir: Path, rows: int, seed: int):
        self.run_dir = run_dir
        self.epoch = rows
        self.total = rows * 2
        self.started = time.time()
        self.maker = RowMaker(seed + 2, total_epochs=rows)  # on the curve's plateau
        self.rng = random.Random(seed + 3)
        write_status(run_dir, self.epoch, self.total, self.started)

    def append_epoch(self) -> None:
        self.epoch += 1
        with open(self.run_dir / "metrics.jsonl", "ab") as f:
            f.write(self.maker.line(self.epoch))
        lines = log_lines(self.epoch, time.time(), self.rng)[:LOG_LINES_PER_REFRESH]
        with open(self.run_dir / "train.log", "ab") as f:
            f.write("".join(lines).encode())
        write_status(self.run_dir, self.epoch, self.total, self.started)


# -- measuring ------------------------------------------------------------------


def ms_stats(samples: list[float]) -> dict:
    ordered = sorted(samples)
    n = len(ordered)
    if not n:
        return {"n": 0, "median_ms": None, "p95_ms": None, "min_ms": None, "max_ms": None}
    p95 = ordered[max(math.ceil(0.95 * n) - 1, 0)]
    return {
        "n": n,
        "median_ms": statistics.median(ordered) * 1e3,
        "p95_ms": p95 * 1e3,
        "min_ms": ordered[0] * 1e3,
        "max_ms": ordered[-1] * 1e3,
    }


def peak_rss_mib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / 1024.0 if sys.platform != "darwin" else kib / 2**20


class RgpuBytes:
    """Bytes rgpu-tui's readers read (their counters; status.json when re-read)."""

    def __init__(self, watcher, run_dir: Path):
        self.watcher = watcher
        self.run_dir = str(run_dir)
        self.last = self._now()

    def _now(self) -> tuple[int, int, int] | None:
        try:
            run = self.watcher._runs[self.run_dir]
            metrics = run.metrics._file.bytes_read
            logb = self.watcher._logs[self.run_dir][0].bytes_read
            return metrics, logb, run.status.generation
        except (AttributeError, KeyError, IndexError, TypeError):
            return None  # the readers' internals changed: no byte counts

    def delta(self) -> int | None:
        now = self._now()
        prev, self.last = self.last, now
        if now is None or prev is None:
            return None
        total = (now[0] - prev[0]) + (now[1] - prev[1])
        if now[2] != prev[2]:
            total += os.stat(os.path.join(self.run_dir, "status.json")).st_size
        return total


def bench_rgpu(root: Path, run_dir: Path, live: LiveRun, iterations: int, profile: bool) -> dict:
    from rgpu_tui.core.picture.watch import RunsWatcher

    watcher = RunsWatcher(str(root))
    t0 = time.perf_counter()
    snap = watcher.refresh(time.time(), selected=str(run_dir))
    first = time.perf_counter() - t0
    counter = RgpuBytes(watcher, run_dir)
    first_bytes = None
    if counter.last is not None:
        first_bytes = counter.last[0] + counter.last[1] + (run_dir / "status.json").stat().st_size
    sel = snap.selected
    state = snap.runs[0].state if snap.runs else None
    rows_seen = sel.metrics.rows if sel else None
    log(f"rgpu-tui first read: {first * 1e3:.0f} ms ({rows_seen:,} rows, run state {state!r})")
    profiles = {}
    if profile:
        # a second watcher, profiled: the timed first read above stays clean
        log("profiling a first read...")
        prof = cProfile.Profile()
        prof.runcall(RunsWatcher(str(root)).refresh, time.time(), selected=str(run_dir))
        profiles["first_read"] = _profile_text(prof)

    idle, idle_bytes = [], []
    for _ in range(iterations):
        t0 = time.perf_counter()
        watcher.refresh(time.time(), selected=str(run_dir))
        idle.append(time.perf_counter() - t0)
        idle_bytes.append(counter.delta())

    times, read_bytes = [], []
    for _ in range(iterations):
        live.append_epoch()  # not timed
        now = time.time()
        t0 = time.perf_counter()
        snap = watcher.refresh(now, selected=str(run_dir))
        times.append(time.perf_counter() - t0)
        read_bytes.append(counter.delta())
    if profile:
        # extra refreshes under the profiler, after the timed ones (its overhead
        # would distort the timings)
        prof = cProfile.Profile()
        for _ in range(iterations):
            live.append_epoch()
            prof.runcall(watcher.refresh, time.time(), selected=str(run_dir))
        profiles["append"] = _profile_text(prof)
        snap = watcher.refresh(time.time(), selected=str(run_dir))
    sel = snap.selected
    check = {
        "rows": sel.metrics.rows if sel else None,
        "expected_rows": live.epoch,
        "state": snap.runs[0].state if snap.runs else None,
        "last_log_line": sel.log.lines[-1] if sel and sel.log.lines else None,
    }
    out = {
        "first_read_ms": first * 1e3,
        "first_read_bytes": first_bytes,
        "idle": ms_stats(idle),
        "idle_bytes_per_refresh": _median_or_none(idle_bytes),
        "append": ms_stats(times),
        "append_bytes_per_refresh": _median_or_none(read_bytes),
        "check": check,
    }
    if profiles:
        out["profile"] = profiles
    return out


def _profile_text(prof: cProfile.Profile, limit: int = 25) -> str:
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats(limit)
    stats.sort_stats("tottime").print_stats(limit)
    return buf.getvalue()


def _median_or_none(values: list) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return statistics.median(values)


def bench_libreyolo(run_dir: Path, live: LiveRun, iterations: int) -> dict:
    from libreyolo.ui.train_monitor import _read_log_tail, _read_metrics, _read_status

    def one() -> tuple[float, int]:
        t0 = time.perf_counter()
        _read_status(run_dir)
        metrics = _read_metrics(run_dir)
        _read_log_tail(run_dir)
        elapsed = time.perf_counter() - t0
        return elapsed, len(metrics["rows"])

    def bytes_touched() -> int:
        status = (run_dir / "status.json").stat().st_size
        metrics = (run_dir / "metrics.jsonl").stat().st_size
        logb = min((run_dir / "train.log").stat().st_size, 200_000)
        return status + metrics + logb

    first, rows = one()
    log(f"libreyolo first read: {first * 1e3:.0f} ms ({rows:,} rows)")
    times, read_bytes = [], []
    for _ in range(iterations):
        live.append_epoch()  # not timed
        read_bytes.append(bytes_touched())
        elapsed, rows = one()
        times.append(elapsed)
    return {
        "first_read_ms": first * 1e3,
        "append": ms_stats(times),
        "append_bytes_per_refresh": _median_or_none(read_bytes),
        "check": {"rows": rows, "expected_rows": live.epoch},
    }


# -- output ---------------------------------------------------------------------


def machine() -> dict:
    return {
        **benchlib.machine(),
        "implementation": platform.python_implementation(),
        "libreyolo": benchlib.package_version("libreyolo"),
    }


def fmt_ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.3f}" if v < 10 else f"{v:,.1f}"


def fmt_bytes(v: float | None) -> str:
    if v is None:
        return "-"
    if v < 10 * 1024:
        return f"{v:,.0f} B"
    if v < 10 * 2**20:
        return f"{v / 1024:,.1f} KiB"
    return f"{v / 2**20:,.1f} MiB"


def print_report(res: dict) -> None:
    m, fx, r, lib = res["machine"], res["fixture"], res["rgpu"], res.get("libreyolo")
    print(
        f"machine: {m['nproc']} CPUs ({m['cpu'] or '?'}), "
        f"{m['implementation']} {m['python']}, libreyolo {m['libreyolo'] or '?'}"
    )
    print(
        f"fixture: {fx['run_dir']}: metrics.jsonl {fx['rows']:,} rows "
        f"({fmt_bytes(fx['metrics_bytes'])}), train.log {fx['log_bytes'] / 2**30:.3f} GiB"
    )
    print(
        f"each 'append' refresh follows 1 metrics row + {LOG_LINES_PER_REFRESH} log lines "
        "+ an atomic status.json rewrite (not timed)"
    )
    print()
    head = (
        f"{'reader':<12} {'refresh':<10} {'n':>4} {'median ms':>11} {'p95 ms':>11} "
        f"{'bytes read':>12}"
    )
    print(head)
    print("-" * len(head))
    print(
        f"{'rgpu-tui':<12} {'first':<10} {1:>4} {fmt_ms(r['first_read_ms']):>11} "
        f"{'':>11} {fmt_bytes(r['first_read_bytes']):>12}"
    )
    for kind in ("idle", "append"):
        s = r[kind]
        print(
            f"{'rgpu-tui':<12} {kind:<10} {s['n']:>4} {fmt_ms(s['median_ms']):>11} "
            f"{fmt_ms(s['p95_ms']):>11} {fmt_bytes(r[kind + '_bytes_per_refresh']):>12}"
        )
    if lib:
        print(
            f"{'libreyolo':<12} {'first':<10} {1:>4} {fmt_ms(lib['first_read_ms']):>11} "
            f"{'':>11} {'':>12}"
        )
        s = lib["append"]
        print(
            f"{'libreyolo':<12} {'append':<10} {s['n']:>4} {fmt_ms(s['median_ms']):>11} "
            f"{fmt_ms(s['p95_ms']):>11} {fmt_bytes(lib['append_bytes_per_refresh']):>12}"
        )
    print()
    g = res["goals"]
    if g["ratio"] is not None:
        print(
            f"ratio (libreyolo median / rgpu-tui median, append refresh): {g['ratio']:,.0f}x  "
            f"goal >= {GOAL_RATIO:.0f}x: {'MET' if g['ratio_met'] else 'NOT MET'}"
        )
    print(
        f"rgpu-tui median per refresh: {fmt_ms(r['append']['median_ms'])} ms  "
        f"goal <= {GOAL_MS:g} ms: {'MET' if g['ms_met'] else 'NOT MET'}"
    )
    rss = res["peak_rss_mib"]
    print(
        "peak RSS (so far, MiB): after fixture {:.0f}, after rgpu-tui {:.0f}, at end {:.0f}".format(
            rss["after_fixture"], rss["after_rgpu"], rss["end"]
        )
    )
    c = r["check"]
    if c["rows"] != c["expected_rows"] or c["state"] != "running":
        print(
            f"WARNING: rgpu-tui saw {c['rows']} rows, state {c['state']!r}; expected "
            f"{c['expected_rows']} rows, 'running'"
        )
    for kind, text in (r.get("profile") or {}).items():
        print()
        print(f"cProfile of rgpu-tui, {kind.replace('_', ' ')} (separate, untimed calls):")
        print(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000, help="metrics.jsonl rows (100000)")
    ap.add_argument("--log-gib", type=float, default=1.0, help="train.log size in GiB (1.0)")
    ap.add_argument("--iterations", "-k", type=int, default=50, help="rgpu-tui refreshes (50)")
    ap.add_argument("--lib-iterations", type=int, default=5, help="libreyolo refreshes (5)")
    ap.add_argument("--dir", type=Path, help="fixture root: reused if already built, kept")
    ap.add_argument("--keep", action="store_true", help="keep the temporary fixture")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--profile", action="store_true", help="cProfile rgpu-tui's refreshes")
    ap.add_argument("--no-libreyolo", action="store_true", help="measure rgpu-tui only")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    try:
        import rgpu_tui.core.picture.watch  # noqa: F401
    except ImportError:
        sys.exit("rgpu_tui is not importable: run with the project's venv (pip install -e .)")

    log_bytes = int(args.log_gib * 2**30)
    if args.dir is not None:
        root = args.dir.resolve()
        if root == REPO or REPO in root.parents:
            sys.exit(f"--dir {root} is inside the repository: use a directory outside it")
        cleanup = False
    else:
        root = Path(tempfile.mkdtemp(prefix="rgpu-bench-"))
        cleanup = not args.keep
    try:
        marker = prepare_fixture(root, args.rows, log_bytes, args.seed)
        run_dir = root / RUN_NAME
        rss_fixture = peak_rss_mib()
        live = LiveRun(run_dir, args.rows, args.seed)
        rgpu = bench_rgpu(root, run_dir, live, args.iterations, args.profile)
        rss_rgpu = peak_rss_mib()
        lib = None if args.no_libreyolo else bench_libreyolo(run_dir, live, args.lib_iterations)
        rgpu_ms = rgpu["append"]["median_ms"]
        ratio = lib["append"]["median_ms"] / rgpu_ms if lib and rgpu_ms else None
        res = {
            "machine": machine(),
            "fixture": {
                "run_dir": str(run_dir),
                "rows": args.rows,
                "metrics_bytes": marker["metrics_bytes"],
                "log_bytes": marker["log_bytes"],
                "log_lines_per_refresh": LOG_LINES_PER_REFRESH,
            },
            "rgpu": rgpu,
            "libreyolo": lib,
            "goals": {
                "ratio": ratio,
                "ratio_goal": GOAL_RATIO,
                "ratio_met": ratio is not None and ratio >= GOAL_RATIO,
                "ms_goal": GOAL_MS,
                "ms_met": rgpu_ms is not None and rgpu_ms <= GOAL_MS,
            },
            "peak_rss_mib": {
                "after_fixture": rss_fixture,
                "after_rgpu": rss_rgpu,
                "end": peak_rss_mib(),
            },
        }
        if args.json:
            print(json.dumps(res, indent=2))
        else:
            print_report(res)
    finally:
        if cleanup:
            shutil.rmtree(root, ignore_errors=True)
        elif args.dir is None:
            log(f"fixture kept in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
