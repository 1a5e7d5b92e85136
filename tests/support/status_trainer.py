"""A trainer process that writes its run's files with libreyolo's own writer (1.6.0's
TrainingStatusCallback: status.json, metrics.jsonl, train.log held open) and no model: its
epochs take EPOCH_S each; SIGINT raises KeyboardInterrupt, written as libreyolo writes it
(state failed, completed_epochs dropped). Fast and real-shaped: a python process started
as libreyolo is (`... project=P name=N`, cwd P), for the tests that need a live trainer.

    python status_trainer.py RUN_DIR EPOCHS TOTAL [START_EPOCH]

It says "ready EPOCH" on stdout after each epoch, then keeps running (a last epoch that
never ends) until signalled; with EPOCHS == TOTAL it completes and exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

EPOCH_S = 0.05


def start(run_dir: Path, epochs: int, total: int, start_epoch: int = 1) -> subprocess.Popen:
    """Start it as libreyolo is started (cwd the project, argv `project=P name=N`), and
    return once its last epoch is written."""
    project = run_dir.parent
    project.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        __file__,
        str(run_dir),
        str(epochs),
        str(total),
        str(start_epoch),
        f"project={project}",
        f"name={run_dir.name}",
    ]
    proc = subprocess.Popen(
        argv, cwd=project, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    for _ in range(epochs - start_epoch + 1):
        line = proc.stdout.readline()
        if not line.startswith("ready"):
            proc.kill()
            raise RuntimeError(f"status_trainer ended early: {line!r}")
    return proc


def _libreyolo_writer():
    """libreyolo/training/artifacts.py and callbacks.py, the very files, without the
    package's __init__ (which imports torch: seconds and hundreds of MB)."""
    import importlib
    import importlib.util
    import types

    spec = importlib.util.find_spec("libreyolo")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("libreyolo is not installed")
    package = types.ModuleType("_libreyolo_training")
    package.__path__ = [os.path.join(spec.submodule_search_locations[0], "training")]
    sys.modules["_libreyolo_training"] = package
    return (
        importlib.import_module("_libreyolo_training.artifacts"),
        importlib.import_module("_libreyolo_training.callbacks"),
    )


def main(run_dir: str, epochs: int, total: int, start_epoch: int) -> None:
    artifacts, callbacks = _libreyolo_writer()
    TrainingStatusCallback = artifacts.TrainingStatusCallback
    TrainEndEvent, TrainEpochEvent = callbacks.TrainEndEvent, callbacks.TrainEpochEvent
    TrainExceptionEvent, TrainStartEvent = callbacks.TrainExceptionEvent, callbacks.TrainStartEvent

    ctx = dict(model_family="yolo9", model_size="t", task="detect", save_dir=run_dir)
    writer = TrainingStatusCallback()
    t0 = time.time()
    writer.on_train_start(TrainStartEvent(start_epoch=start_epoch, total_epochs=total, **ctx))
    epoch = start_epoch - 1
    try:
        for epoch in range(start_epoch, epochs + 1):
            time.sleep(EPOCH_S)
            metric = 0.01 * epoch
            writer.on_train_epoch_end(
                TrainEpochEvent(
                    epoch=epoch,
                    total_epochs=total,
                    train_loss=10.0 / epoch,
                    train_loss_items={"box_loss": 4.0 / epoch},
                    lr={"group0": 0.01},
                    val_metrics={"metrics/mAP50-95": metric},
                    validated=True,
                    is_best=True,
                    current_metric=metric,
                    current_metric_name="metrics/mAP50-95",
                    best_metric=metric,
                    best_metric_name="metrics/mAP50-95",
                    best_epoch=epoch,
                    epoch_seconds=EPOCH_S,
                    **ctx,
                )
            )
            print(f"ready {epoch}", flush=True)
        if epochs >= total:
            writer.on_train_end(
                TrainEndEvent(
                    total_epochs=total,
                    completed_epochs=epochs,
                    final_loss=10.0 / max(epochs, 1),
                    best_metric=0.01 * epochs,
                    best_epoch=epochs,
                    total_seconds=time.time() - t0,
                    results={},
                    **ctx,
                )
            )
            return
        while True:  # the next epoch, which never ends
            time.sleep(60)
    except BaseException as exc:
        writer.on_train_exception(
            TrainExceptionEvent(
                epoch=epoch + 1,
                total_epochs=total,
                exception=exc,
                exception_type=type(exc).__name__,
                exception_message=str(exc),
                elapsed_seconds=time.time() - t0,
                **ctx,
            )
        )
        raise


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if "=" not in a]
    os.makedirs(args[0], exist_ok=True)
    try:
        main(args[0], int(args[1]), int(args[2]), int(args[3]) if len(args) > 3 else 1)
    except KeyboardInterrupt:
        sys.exit(130)
