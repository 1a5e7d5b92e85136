"""What the bench scripts share: logging, timestamps, the machine, libreyolo's columns.

The scripts run as `python bench/NAME.py`, so this folder is on sys.path and they
import this module by its plain name.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from datetime import datetime, timezone

# The metric columns of a real libreyolo 1.6 metrics.jsonl row (yolo9, detect), in order:
# METRIC_KEYS come before the speed columns, METRIC_KEYS_2 after them.
METRIC_KEYS = (
    "metrics/precision",
    "metrics/recall",
    "metrics/mAP50-95",
    "metrics/mAP50",
    "metrics/mAP75",
    "metrics/precision(B)",
    "metrics/recall(B)",
    "metrics/mAP50(B)",
    "metrics/mAP50-95(B)",
    "metrics/mAP_small",
    "metrics/mAP_medium",
    "metrics/mAP_large",
    "metrics/AR1",
    "metrics/AR10",
    "metrics/AR100",
    "metrics/AR_max_det",
)
METRIC_KEYS_2 = (
    "metrics/AR_small",
    "metrics/AR_medium",
    "metrics/AR_large",
    "metrics/best_conf",
    "metrics/best_conf_f1",
)
LR_KEYS = ("lr/group0", "lr/group1", "lr/group2")


def add_speed_and_lr(row: dict, rng, frac: float) -> None:
    """The speed and learning-rate columns that end a row, `frac` of the way through
    training (cosine schedule)."""
    pre, inf, post = 0.05 + rng.random() * 0.02, 11.0 + rng.random(), 0.1 + rng.random() * 0.05
    row["speed/preprocess_ms"] = pre
    row["speed/inference_ms"] = inf
    row["speed/postprocess_ms"] = post
    row["speed/total_ms"] = pre + inf + post + rng.random()
    row["speed/total_s"] = 0.1 + rng.random() * 0.01
    row["speed/images_seen"] = 5000.0
    lr = 0.0001 + 0.0099 * 0.5 * (1.0 + math.cos(math.pi * frac))
    for key in LR_KEYS:
        row[key] = lr


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def utc_iso(ts: float | None = None) -> str:
    """libreyolo's status.json times: UTC, whole seconds (now when ts is None)."""
    dt = datetime.fromtimestamp(ts if ts is not None else time.time(), timezone.utc)
    return dt.isoformat(timespec="seconds")


def package_version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def machine() -> dict:
    """CPU model, usable CPUs, Python and the platform; callers add what they need."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "nproc": usable,
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
