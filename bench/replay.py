#!/usr/bin/env python
"""Replay a live libreyolo training run: write a run directory at a set pace.

The files are the ones libreyolo 1.6 writes, in its formats:

* ``status.json``: rewritten atomically (``tempfile.mkstemp`` in the run
  directory, mode 0600, ``json.dump(indent=2, sort_keys=True)``, ``os.replace``)
  at the start and after every epoch, with the keys of libreyolo's
  ``TrainingStatusCallback`` (``pid`` is the replayer's own pid, so the run is
  alive while the replayer runs); ``state: completed`` when it stops.
* ``metrics.jsonl``: one row per epoch with the columns of a real row (the
  structure of ``tests/fixtures/run_completed/metrics.jsonl``): losses fall,
  mAPs rise, the learning rate follows a cosine, all with noise.
* ``train.log``: ``2026-12-02 15:19:30 | INFO     | message`` lines at a
  constant rate: the per-epoch lines libreyolo logs (average loss, validation,
  best model, checkpoint) and, between them, iteration progress lines.

It stops by itself after ``--duration`` seconds, after ``--epochs`` epochs, or on
SIGTERM/SIGINT, and then marks the run ``completed`` (as libreyolo's
``on_train_end`` does).

    .venv/bin/python bench/replay.py /tmp/runs/run1 --epoch-seconds 2 \\
        --log-lines-per-second 10 --epochs 1000 --duration 120
    .venv/bin/python bench/replay.py /tmp/runs/run1 --prefill-epochs 200   # a resumed run

Importable: ``Replayer(run_dir, clock=...)`` with ``start(now)``, ``advance(now)``
(writes everything due up to ``now``; usable with a simulated clock, and then
``touch_mtime=True`` sets the files' mtimes to the simulated time too) and
``finish(now)``; ``Replayer.run(duration, stop_event)`` is the real-time loop.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from datetime import datetime
from pathlib import Path

from benchlib import METRIC_KEYS, METRIC_KEYS_2, add_speed_and_lr, utc_iso

STATUS = "status.json"
METRICS = "metrics.jsonl"
LOG = "train.log"
ITERS_PER_EPOCH = 500
METRIC_NAME = "metrics/mAP50-95"

# The column order of a real libreyolo 1.6 metrics.jsonl row (yolo9, detect).
LOSS_PARTS = (("train/box_loss", 0.40), ("train/cls_loss", 0.32), ("train/dfl_loss", 0.28))
# how much of the "quality" each metric gets (mAP50 above mAP50-95, AR above mAP...)
METRIC_SCALE = {
    "metrics/precision": 1.15,
    "metrics/recall": 1.05,
    "metrics/mAP50-95": 1.0,
    "metrics/mAP50": 1.45,
    "metrics/mAP75": 1.08,
    "metrics/precision(B)": 1.15,
    "metrics/recall(B)": 1.05,
    "metrics/mAP50(B)": 1.45,
    "metrics/mAP50-95(B)": 1.0,
    "metrics/mAP_small": 0.45,
    "metrics/mAP_medium": 1.05,
    "metrics/mAP_large": 1.3,
    "metrics/AR1": 0.6,
    "metrics/AR10": 1.15,
    "metrics/AR100": 1.25,
    "metrics/AR_max_det": 1.25,
    "metrics/AR_small": 0.7,
    "metrics/AR_medium": 1.3,
    "metrics/AR_large": 1.5,
    "metrics/best_conf": 0.6,
    "metrics/best_conf_f1": 1.2,
}


def log_stamp(ts: float) -> str:
    # libreyolo's log handler uses local time, second resolution
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def atomic_write_json(path: Path, value: dict) -> None:
    """As libreyolo's ``_atomic_write_json``: temp file (0600) + ``os.replace``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent, text=True)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, allow_nan=False, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class Replayer:
    """Writes a libreyolo run directory as if a training ran at a set pace.

    ``clock`` gives "now" to ``run``; ``start``/``advance``/``finish`` take ``now``
    explicitly, so a simulated clock can drive them (one hour in seconds).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        *,
        epoch_seconds: float = 2.0,
        log_lines_per_second: float = 10.0,
        epochs: int = 1000,
        seed: int = 0,
        model_family: str = "yolo9",
        model_size: str = "t",
        task: str = "detect",
        clock=time.time,
        pid: int | None = None,
        touch_mtime: bool = False,
    ) -> None:
        if epoch_seconds <= 0:
            raise ValueError("epoch_seconds must be > 0")
        if log_lines_per_second < 0:
            raise ValueError("log_lines_per_second must be >= 0")
        if epochs < 1:
            raise ValueError("epochs must be >= 1")
        self.run_dir = Path(run_dir)
        self.epoch_seconds = float(epoch_seconds)
        self.rate = float(log_lines_per_second)
        self.total = int(epochs)
        self.rng = random.Random(seed)
        self.clock = clock
        self.pid = os.getpid() if pid is None else pid
        self.touch_mtime = touch_mtime
        self.base = {
            "schema_version": 1,
            "pid": self.pid,
            "model_family": model_family,
            "model_size": model_size,
            "task": task,
            "save_dir": str(self.run_dir),
            "total_epochs": self.total,
            "start_epoch": 1,
        }
        self.t0: float | None = None  # when this process's training started
        self.start_epoch = 1
        self.epochs_done = 0
        self.lines_written = 0
        self.epoch_time_sum = 0.0
        self.best = -1.0
        self.best_epoch = 0
        self.last_row: dict | None = None
        self.pending: deque[tuple[str, str]] = deque()  # (level, text) due next in the log
        self.finished = False
        self._log = None

    # -- lifecycle --------------------------------------------------------------

    def start(self, now: float | None = None, history_epochs: int = 0) -> None:
        """libreyolo's on_train_start: truncate the files, write status ``running``.

        ``history_epochs`` > 0: the run already trained that many epochs in an
        earlier process (their metrics rows and log lines are written at once,
        with past timestamps) and this one resumes it, as ``libreyolo train
        resume=True`` does: ``start_epoch`` is the next epoch, ``started_at`` and
        ``mean_epoch_seconds`` are this process's own, and the files are kept.
        A backdated ``started_at`` would make the run look DEAD: its pid would
        belong to a process younger than the run.
        """
        now = self.clock() if now is None else now
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / METRICS).write_bytes(b"")
        self._log = open(self.run_dir / LOG, "w", encoding="utf-8")  # noqa: SIM115
        history = min(max(int(history_epochs), 0), self.total - 1)
        if history:
            # the earlier process: epochs 1..history, ending now
            self.t0 = now - history * self.epoch_seconds
            self.pending.append(("INFO", f"Training {self.total} epochs, logging to {LOG}"))
            self.advance(now)
            # ... and this one resumes after them
            self.start_epoch = history + 1
            self.lines_written = 0
            self.epoch_time_sum = 0.0
            self.pending.append(
                ("INFO", f"Resumed from {self.run_dir / 'weights' / 'last.pt'} at epoch {history}")
            )
        else:
            self.pending.append(("INFO", f"Training {self.total} epochs, logging to {LOG}"))
        self.t0 = now
        self.base["start_epoch"] = self.start_epoch
        self.base["started_at"] = utc_iso(now)
        self._write_status(
            now,
            state="running",
            completed_epochs=self.start_epoch - 1,
            current_epoch=None,
        )
        self.advance(now)

    def advance(self, now: float) -> bool:
        """Write every epoch and log line due up to ``now``; False once all epochs are done."""
        if self.t0 is None:
            raise RuntimeError("start() first")
        if self.finished:
            return False
        before = self.start_epoch - 1
        due_epochs = min(before + int((now - self.t0) // self.epoch_seconds), self.total)
        wrote_epoch = False
        while self.epochs_done < due_epochs:
            epoch = self.epochs_done + 1
            t_end = self.t0 + (epoch - before) * self.epoch_seconds
            self._write_lines_until(t_end)
            self._append_epoch(epoch, t_end)
            wrote_epoch = True
        self._write_lines_until(now)
        if self._log is not None:
            self._log.flush()
        if wrote_epoch and "started_at" in self.base:  # not while writing the history
            t_last = self.t0 + (self.epochs_done - before) * self.epoch_seconds
            self._write_status(t_last, **self._epoch_fields())
        if self.touch_mtime:
            for name in (METRICS, LOG) + ((STATUS,) if wrote_epoch else ()):
                try:
                    os.utime(self.run_dir / name, (now, now))
                except OSError:
                    pass
        return self.epochs_done < self.total

    def finish(self, now: float | None = None, state: str = "completed") -> None:
        """libreyolo's on_train_end: status ``completed`` (or ``state``), the last log line."""
        if self.finished or self.t0 is None:
            return
        now = self.clock() if now is None else now
        self.advance(now)
        total_seconds = now - self.t0
        if state == "completed":
            self._log_line(now, "INFO", f"Training complete in {total_seconds / 3600:.2f} hours")
        if self._log is not None:
            self._log.close()
            self._log = None
        row = self.last_row or {}
        fields = {
            "state": state,
            "completed_epochs": self.epochs_done,
            "total_seconds": total_seconds,
            "train_loss": row.get("train/loss"),
            "best_metric": self.best if self.best_epoch else None,
            "best_epoch": self.best_epoch or None,
        }
        if state == "completed":
            weights = self.run_dir / "weights"
            fields["checkpoints"] = {
                "best": str(weights / "best.pt"),
                "last": str(weights / "last.pt"),
            }
        self._write_status(now, **fields)
        if self.touch_mtime:
            for name in (METRICS, LOG, STATUS):
                try:
                    os.utime(self.run_dir / name, (now, now))
                except OSError:
                    pass
        self.finished = True

    def run(
        self, duration: float | None = None, stop: threading.Event | None = None, tick: float = 0.1
    ) -> None:
        """Real time: start, advance every ``tick`` s until done, ``duration`` or ``stop``."""
        stop = stop or threading.Event()
        if self.t0 is None:
            self.start()
        began = self.clock()
        try:
            while not stop.is_set():
                now = self.clock()
                if duration is not None and now - began >= duration:
                    break
                if not self.advance(now):
                    break
                stop.wait(tick)
        finally:
            self.finish()

    # -- writing ------------------------------------------------------------------

    def _write_status(self, now: float, **fields) -> None:
        payload = dict(self.base)
        payload.update(fields)
        payload.setdefault("elapsed_seconds", round(now - (self.t0 or now), 3))
        payload["progress"] = (payload.get("completed_epochs") or 0) / self.total
        payload["updated_at"] = utc_iso(now)
        atomic_write_json(self.run_dir / STATUS, payload)

    def _epoch_fields(self) -> dict:
        row = self.last_row or {}
        done = self.epochs_done
        mean = self.epoch_time_sum / max(done - (self.start_epoch - 1), 1)
        return {
            "state": "running",
            "current_epoch": done,
            "completed_epochs": done,
            "epoch_seconds": row.get("time"),
            "mean_epoch_seconds": mean,
            "eta_seconds": mean * max(self.total - done, 0),
            "train_loss": row.get("train/loss"),
            "metrics": {
                k.removeprefix("metrics/"): v for k, v in row.items() if k.startswith("metrics/")
            },
            "validated": True,
            "current_metric": row.get("current_metric"),
            "current_metric_name": METRIC_NAME,
            "best_metric": self.best,
            "best_metric_name": METRIC_NAME,
            "best_epoch": self.best_epoch,
        }

    def _append_epoch(self, epoch: int, t_end: float) -> None:
        row = self._row(epoch)
        with open(self.run_dir / METRICS, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, allow_nan=False) + "\n")
        self.last_row = row
        self.epochs_done = epoch
        self.epoch_time_sum += row["time"]
        m = row["current_metric"]
        self.pending.append(("INFO", f"Epoch {epoch} - Average loss: {row['train/loss']:.4f}"))
        self.pending.append(("INFO", f"Running validation for epoch {epoch}"))
        if self.rng.random() < 0.05:
            self.pending.append(("WARNING", "No predictions to evaluate"))
        mAP50 = row["metrics/mAP50"]
        self.pending.append(("INFO", f"Validation - mAP50: {mAP50:.4f}, mAP50-95: {m:.4f}"))
        if row["is_best"]:
            self.pending.append(
                ("INFO", f"New best model saved - Epoch {epoch}: {METRIC_NAME}={m:.4f}")
            )
        self.pending.append(("INFO", f"Checkpoint saved: {self.run_dir / 'weights' / 'last.pt'}"))

    def _row(self, epoch: int) -> dict:
        """A row with the columns, order and kinds of a real metrics.jsonl row."""
        r = self.rng
        frac = min(epoch / self.total, 1.0)
        quality = 0.55 * (1.0 - math.exp(-6.0 * frac))
        m = max(0.0, quality + r.gauss(0.0, 0.008))
        is_best = m > self.best
        if is_best:
            self.best, self.best_epoch = m, epoch
        base = 2.0 + 18.0 * math.exp(-5.0 * frac)
        loss = base + r.gauss(0.0, 0.15)
        row: dict = {
            "epoch": epoch,
            "time": self.epoch_seconds * (0.97 + 0.06 * r.random()),
            "train/loss": loss,
            "validated": True,
            "is_best": is_best,
            "current_metric": m,
            "current_metric_name": METRIC_NAME,
            "best_metric": self.best,
            "best_metric_name": METRIC_NAME,
            "best_epoch": self.best_epoch,
        }
        for key, share in LOSS_PARTS:
            row[key] = loss * share + r.gauss(0.0, 0.03)
        for key in METRIC_KEYS:
            value = m if key == METRIC_NAME else quality * METRIC_SCALE[key] + r.gauss(0.0, 0.01)
            row[key] = min(1.0, max(0.0, value))
        row["metrics/max_det"] = 100.0
        for key in METRIC_KEYS_2:
            row[key] = min(1.0, max(0.0, quality * METRIC_SCALE[key] + r.gauss(0.0, 0.015)))
        add_speed_and_lr(row, r, frac)
        return row

    def _write_lines_until(self, t: float) -> None:
        if self.rate <= 0 or self.t0 is None:
            return
        due = int((t - self.t0) * self.rate)
        while self.lines_written < due:
            ts = self.t0 + self.lines_written / self.rate
            if self.pending:
                level, text = self.pending.popleft()
            else:
                level, text = "INFO", self._progress_text(ts)
            self._log_line(ts, level, text)

    def _progress_text(self, ts: float) -> str:
        epoch = min(self.epochs_done + 1, self.total)
        into = (ts - (self.t0 or ts)) % self.epoch_seconds / self.epoch_seconds
        it = int(into * ITERS_PER_EPOCH) + 1
        frac = epoch / self.total
        loss = 2.0 + 18.0 * math.exp(-5.0 * frac) + self.rng.gauss(0.0, 0.3)
        lr = 0.0001 + 0.0099 * 0.5 * (1.0 + math.cos(math.pi * frac))
        return f"Epoch {epoch}/{self.total} [{it}/{ITERS_PER_EPOCH}] loss: {loss:.4f} lr: {lr:.6f}"

    def _log_line(self, ts: float, level: str, text: str) -> None:
        if self._log is not None:
            self._log.write(f"{log_stamp(ts)} | {level:<8} | {text}\n")
        self.lines_written += 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="the run directory to write (created; its files are replaced)")
    p.add_argument("--epoch-seconds", type=float, default=2.0, help="seconds per epoch (2)")
    p.add_argument("--log-lines-per-second", type=float, default=10.0, help="train.log rate (10)")
    p.add_argument("--epochs", type=int, default=1000, help="total epochs (1000)")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    p.add_argument(
        "--prefill-epochs",
        type=int,
        default=0,
        help="start as a resumed run with this many epochs of history already written",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tick", type=float, default=0.1, help="seconds between writes (0.1)")
    args = p.parse_args(argv)

    rep = Replayer(
        args.dir,
        epoch_seconds=args.epoch_seconds,
        log_lines_per_second=args.log_lines_per_second,
        epochs=args.epochs,
        seed=args.seed,
    )
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    rep.start(history_epochs=args.prefill_epochs)
    rep.run(duration=args.duration, stop=stop, tick=args.tick)
    print(
        f"replay: {rep.epochs_done}/{rep.total} epochs, {rep.lines_written} log lines, "
        f"state completed, in {args.dir}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
