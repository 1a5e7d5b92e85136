"""Checkpoint files for the push, pull, autostop and fleet tests."""

from __future__ import annotations

import io
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
