"""Run directories as libreyolo writes them, for every test that needs one: one `iso`, one
`write_status`, one run builder (status.json, metrics rows, train.log, weights,
train_config.yaml), and one free TCP port.

The files are written the way libreyolo writes them: status.json atomically (a new inode
each time), metrics.jsonl one JSON object a line, times in ISO-8601 with an offset and whole
seconds. A test that needs a hostile file writes it itself, over what this builds.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path


def iso(ts: float) -> str:
    """ISO-8601 with an offset, whole seconds, as libreyolo writes it."""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).isoformat()


def write_status(run: Path, doc: Mapping, mtime: float | None = None) -> Path:
    """status.json written atomically, as libreyolo does (a new inode each time); `mtime`
    sets its modification time. Makes the run directory if needed; returns the run."""
    run.mkdir(parents=True, exist_ok=True)
    tmp = run / ".status.json.tmp"
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, run / "status.json")
    if mtime is not None:
        os.utime(run / "status.json", (mtime, mtime))
    return run


def metric_row(epoch: int) -> dict:
    """One metrics.jsonl row whose loss falls and whose mAP rises with the epoch."""
    return {
        "epoch": epoch,
        "train/loss": round(10.0 / epoch, 4),
        "metrics/mAP50-95": round(0.05 * epoch, 4),
        "best_metric": round(0.05 * epoch, 4),
        "best_metric_name": "metrics/mAP50-95",
        "best_epoch": epoch,
    }


def write_metrics(run: Path, rows: Iterable[Mapping]) -> Path:
    """metrics.jsonl holding `rows`, one JSON object a line."""
    path = run / "metrics.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def make_run(
    root: Path,
    name: str,
    *,
    status: Mapping | None = None,
    epochs: int = 0,
    rows: Iterable[Mapping] | None = None,
    log: Iterable[str] | None = None,
    weights: Mapping[str, bytes] | None = None,
    train_config: str | None = None,
) -> Path:
    """`root/name` with the files asked for: status.json (`status`), metrics.jsonl (`rows`,
    or `epochs` rows of `metric_row`), train.log (`log`, one line each), weights/<name>
    (`weights`) and train_config.yaml (`train_config`, its text)."""
    run = root / name
    run.mkdir(parents=True, exist_ok=True)
    if status is not None:
        write_status(run, status)
    if rows is None and epochs:
        rows = [metric_row(e) for e in range(1, epochs + 1)]
    if rows is not None:
        write_metrics(run, rows)
    if log is not None:
        (run / "train.log").write_text("".join(line + "\n" for line in log))
    if weights:
        (run / "weights").mkdir(exist_ok=True)
        for file_name, data in weights.items():
            (run / "weights" / file_name).write_bytes(data)
    if train_config is not None:
        (run / "train_config.yaml").write_text(train_config)
    return run


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
