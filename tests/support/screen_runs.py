"""A runs root that looks like the first minutes of a real run, for the tests of the screen
in a real terminal: libreyolo's files as it writes them.

* `yolo9t-coco8`: running (its pid is a live trainer's, `trainer_pid`, whose command line
  names the run, and its started_at is that process's start, so the liveness check passes
  for real; PID 1 by default, for the in-process tests whose conftest gives PID 1 the run:
  tests/tui/conftest.py), epoch 6 of 50, every column libreyolo writes for a
  yolo9 (38 metrics, taken from the completed fixture run), a short log (a run that just
  started) with one line longer than an 80-column screen;
* `sample_done`: the completed fixture run (3 epochs, the same 38 metrics, 24 log lines);
* `failed_oom`: failed with a CUDA OOM.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from support.run_dir import iso

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
LIVE = "yolo9t-coco8"
LONG_LINE = (
    "Loaded 128 YOLO annotations from /data/coco8/labels/val in 0.02s; 4 images without "
    "labels are kept as backgrounds (see the dataset docs)"
)
LIVE_EPOCH = 6
LIVE_TOTAL = 50


def _log_line(ts: float, message: str, level: str = "INFO") -> str:
    stamp = datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp} | {level:<8} | {message}\n"


def _live_rows(template: dict, epochs: int) -> list[dict]:
    rows = []
    for e in range(1, epochs + 1):
        row = {}
        for key, value in template.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                row[key] = value
            elif key.startswith("train/"):
                row[key] = round(value * (1.0 - 0.06 * e), 4)
            elif key.startswith("metrics/") and key != "metrics/max_det":
                row[key] = round(0.04 * e + value, 4)
            else:
                row[key] = value
        row.update(epoch=e, time=61.5, is_best=True, best_epoch=e, validated=True)
        row.update(best_metric=round(0.04 * e, 4), current_metric=round(0.04 * e, 4))
        rows.append(row)
    return rows


def start_trainer(base: Path) -> subprocess.Popen:
    """A live process standing for yolo9t-coco8's trainer under `base`: its command line
    names the run (core.run.run_process). The caller kills it."""
    run = str(base / "runs" / LIVE)
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", run])


def build_screen_root(base: Path, trainer_pid: int = 1) -> Path:
    """The runs root under `base` (made here); returns it."""
    now = time.time()
    t0 = float(int(psutil.Process(trainer_pid).create_time()))
    root = base / "runs"
    root.mkdir(parents=True)

    done = root / "sample_done"
    shutil.copytree(FIXTURE, done, ignore=shutil.ignore_patterns("weights", "val"))
    for p in [done, *done.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)

    failed = root / "failed_oom"
    failed.mkdir()
    (failed / "train.log").write_text(
        _log_line(now - 7200, "Epoch 4 - Average loss: 5.0000")
        + _log_line(now - 7195, "CUDA out of memory while allocating 2.00 GiB", "ERROR")
    )
    (failed / "status.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "pid": 4242,
                "model_family": "yolo9",
                "model_size": "s",
                "total_epochs": 10,
                "started_at": iso(now - 7500),
                "state": "failed",
                "current_epoch": 5,
                "completed_epochs": 4,
                "elapsed_seconds": 300.0,
                "error": {"type": "OutOfMemoryError", "message": "CUDA out of memory"},
                "progress": 0.4,
                "updated_at": iso(now - 7195),
            }
        )
    )

    live = root / LIVE
    live.mkdir()
    template = json.loads((FIXTURE / "metrics.jsonl").read_text().splitlines()[0])
    rows = _live_rows(template, LIVE_EPOCH)
    (live / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    start = now - LIVE_EPOCH * 61.5
    log = [
        _log_line(start, "Training yolo9-t on coco8.yaml for 50 epochs, batch 16, imgsz 640"),
        _log_line(start + 1, LONG_LINE),
    ]
    for e in range(LIVE_EPOCH - 1, LIVE_EPOCH + 1):
        loss = rows[e - 1]["train/loss"]
        log.append(_log_line(start + e * 61.5, f"Epoch {e} - Average loss: {loss:.4f}"))
        log.append(_log_line(start + e * 61.5, f"Running validation for epoch {e}"))
    (live / "train.log").write_text("".join(log))
    (live / "status.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "pid": trainer_pid,
                "model_family": "yolo9",
                "model_size": "t",
                "save_dir": str(live),
                "total_epochs": LIVE_TOTAL,
                "start_epoch": 1,
                "started_at": iso(t0),
                "state": "running",
                "current_epoch": LIVE_EPOCH + 1,
                "completed_epochs": LIVE_EPOCH,
                "mean_epoch_seconds": 61.5,
                "eta_seconds": (LIVE_TOTAL - LIVE_EPOCH) * 61.5,
                "best_metric": rows[-1]["best_metric"],
                "best_metric_name": "metrics/mAP50-95",
                "best_epoch": LIVE_EPOCH,
                "progress": LIVE_EPOCH / LIVE_TOTAL,
                "updated_at": iso(now),
            }
        )
    )
    return root


def append_log(root: Path, lines: list[str]) -> None:
    """More lines in the live run's train.log, as libreyolo appends them."""
    with open(root / LIVE / "train.log", "a") as f:
        for line in lines:
            f.write(_log_line(time.time(), line))
