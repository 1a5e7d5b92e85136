"""A runs root of hostile run FILES: FIFOs where a run file should
be, values out of every range, JSON nested too deep, a BOM, a run too deep to be searched,
and sane runs beside them. `EXPECTED` says the one-line problem each run must show.
(support.hostile holds the hostile TEXT: escape sequences in names and fields.)"""

from __future__ import annotations

import json
from pathlib import Path

from rgpu_tui.core.run.discovery import MAX_DEPTH
from support.fifos import make_fifo

BIG = "9" * 400
DEEP = "[" * 1000 + "]" * 1000
MAP = "metrics/mAP50-95"


def rows(n: int) -> str:
    return "".join(
        json.dumps({"epoch": e, "train/loss": 3.0 / e, MAP: 0.1 * e}) + "\n"
        for e in range(1, n + 1)
    )


def write_run(root: Path, name: str, status=None, metrics: str | None = None) -> Path:
    run = root / name
    run.mkdir(parents=True, exist_ok=True)
    if status is not None:
        (run / "status.json").write_text(status if isinstance(status, str) else json.dumps(status))
    if metrics is not None:
        (run / "metrics.jsonl").write_text(metrics)
    return run


DONE = {"state": "completed", "total_epochs": 3, "completed_epochs": 3}

# name -> the problem its line must show (None: a sane run, shown whole)
EXPECTED = {
    "sane": None,
    "status_fifo": "status.json is not a regular file",
    "metrics_fifo": "metrics.jsonl is not a regular file",
    "csv_fifo": "results.csv is not a regular file",
    "log_fifo": "train.log is not a regular file",
    "push_fifo": None,
    "year_1": "status.json: started_at out of range (0001-01-01T00:00:00)",
    "deep_status": "status.json is not usable JSON (nested too deep)",
    "epoch_1e30": "metrics.jsonl: 1 epoch out of range",
    "epoch_2_63": "metrics.jsonl: 1 epoch out of range",
    "epoch_400_digits": "metrics.jsonl: 1 epoch out of range",
    "deep_metrics_line": None,  # skipped and counted as a malformed line
    "total_400_digits": "status.json: total_epochs out of range (400-digit number)",
    "infinite_map": "metrics.jsonl: 1 non-finite value skipped (metrics/mAP50-95)",
    "negative_epochs": "status.json: completed_epochs out of range (-5)",
    "bom_csv": None,
}


def hostile_root(root: Path) -> list[Path]:
    """Every case of EXPECTED under `root` (plus a launches.jsonl FIFO and a run too deep
    to be searched); returns the FIFOs."""
    fifos = [make_fifo(root / ".rgpu" / "launches.jsonl")]
    write_run(root, "sane", DONE, rows(3))
    fifos.append(make_fifo(root / "status_fifo" / "status.json"))
    fifos.append(make_fifo(write_run(root, "metrics_fifo", DONE) / "metrics.jsonl"))
    fifos.append(make_fifo(write_run(root, "csv_fifo", DONE) / "results.csv"))
    fifos.append(make_fifo(write_run(root, "log_fifo", DONE, rows(3)) / "train.log"))
    push = write_run(root, "push_fifo", DONE, rows(3))
    fifos.append(make_fifo(push / ".rgpu" / "pushes.jsonl"))
    write_run(
        root,
        "year_1",
        {**DONE, "started_at": "0001-01-01T00:00:00", "updated_at": "2026-01-01T00:00:00Z"},
    )
    write_run(root, "deep_status", DEEP)
    write_run(root, "epoch_1e30", DONE, rows(2) + '{"epoch": 1e30, "train/loss": 1.0}\n')
    write_run(root, "epoch_2_63", DONE, rows(2) + f'{{"epoch": {2**63}, "train/loss": 1.0}}\n')
    write_run(root, "epoch_400_digits", DONE, rows(2) + f'{{"epoch": {BIG}}}\n')
    write_run(root, "deep_metrics_line", DONE, rows(2) + f'{{"epoch": 3, "x": {DEEP}}}\n')
    write_run(root, "total_400_digits", f'{{"state": "completed", "total_epochs": {BIG}}}')
    write_run(root, "infinite_map", DONE, rows(2) + f'{{"epoch": 3, "{MAP}": Infinity}}\n')
    write_run(root, "negative_epochs", {**DONE, "total_epochs": 100, "completed_epochs": -5})
    (write_run(root, "bom_csv", DONE) / "results.csv").write_bytes(
        b"\xef\xbb\xbfepoch,train/loss\n1,0.5\n2,0.4\n"
    )
    deep = root.joinpath(*[f"level{i}" for i in range(1, MAX_DEPTH + 1)])
    write_run(deep, "too_deep", DONE)
    return fifos
