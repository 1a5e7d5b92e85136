"""Checkpoint files for the push, pull, autostop and fleet tests."""

from __future__ import annotations

import io
import pickle
import random
import zipfile


def checkpoint_bytes(size: int, seed: int) -> bytes:
    """A small torch-like checkpoint: a zip holding a data.pkl (what push's staging checks
    a checkpoint is) and `size` random bytes from `seed` (another seed, another file)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("best/data.pkl", b"\x80\x02pickle" + seed.to_bytes(4, "little"))
        archive.writestr("best/data/0", random.Random(seed).randbytes(size))
    return buf.getvalue()


def epoch_checkpoint(
    epoch: int | None, total: int | None = 5, *, archive: str = "last", size: int = 64
) -> bytes:
    """A checkpoint laid out as libreyolo's torch.save writes it (a stored zip with
    <archive>/data.pkl, <archive>/data/0, <archive>/version) whose data.pkl holds what
    libreyolo 1.6.0 stores about the run: `epoch` (0-based: `epoch` done means epoch - 1)
    and config.epochs. epoch None: no "epoch" key (released weights)."""
    doc: dict = {"model": {}, "config": {"epochs": total, "device": "cpu"}}
    if epoch is not None:
        doc["epoch"] = epoch - 1
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as out:
        out.writestr(f"{archive}/data.pkl", pickle.dumps(doc, protocol=2))
        out.writestr(f"{archive}/data/0", random.Random(epoch or 0).randbytes(size))
        out.writestr(f"{archive}/version", b"3\n")
    return buf.getvalue()
