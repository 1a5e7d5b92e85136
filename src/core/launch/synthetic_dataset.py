"""A deterministic synthetic YOLO dataset: coloured rectangles (3 classes) on a flat
background, small enough that libreyolo trains an epoch on the CPU in seconds. The demo
trains on it; the tests use the same generator.

The PNG files are written here (zlib, no PIL), so making the dataset needs nothing from the
training environment: rgpu-tui installed on its own (pipx, uv tool) makes it too.
"""

from __future__ import annotations

import itertools
import os
import random
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

CLASS_NAMES = ("red", "green", "blue")
_CLASS_COLOURS = ((220, 40, 40), (40, 200, 60), (50, 70, 230))
LIGHT_BG = (90, 160)  # the tests' dataset (the same pixels as before)
DARK_BG = (10, 50)  # the demo's
BALANCED_MARK = "# rgpu-tui synthetic dataset: balanced classes\n"


class _Image:
    """An RGB image filled with one colour, on which rectangles are painted."""

    def __init__(self, size: int, colour: tuple[int, ...]) -> None:
        self.size = size
        self.rows = [bytearray(bytes(colour) * size) for _ in range(size)]

    def rectangle(self, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, ...]) -> None:
        """Fill x0..x1, y0..y1 (both inclusive)."""
        span = bytes(colour) * (x1 - x0 + 1)
        for row in self.rows[y0 : y1 + 1]:
            row[3 * x0 : 3 * (x1 + 1)] = span

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(row) for row in self.rows)  # filter 0 on each row
        header = struct.pack(">IIBBBBB", self.size, self.size, 8, 2, 0, 0, 0)  # 8-bit RGB
        return (
            b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b"")
        )


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _draw_image(
    rng: random.Random, imgsz: int, background: tuple[int, int], turns: Iterator[int] | None
):
    """turns: the classes in turn (a balanced dataset, 2 or 3 boxes an image); None: a
    random class for each of 1 to 3 boxes."""
    bg = tuple(rng.randint(*background) for _ in range(3))
    img = _Image(imgsz, bg)
    labels: list[str] = []
    min_side = max(8, imgsz // 8)
    max_side = max(min_side + 1, imgsz // 2)
    for _ in range(rng.randint(1, 3) if turns is None else rng.randint(2, 3)):
        cls = rng.randrange(len(CLASS_NAMES)) if turns is None else next(turns)
        w = rng.randint(min_side, max_side)
        h = rng.randint(min_side, max_side)
        x0 = rng.randint(0, imgsz - w)
        y0 = rng.randint(0, imgsz - h)
        img.rectangle(x0, y0, x0 + w - 1, y0 + h - 1, _CLASS_COLOURS[cls])
        xc = (x0 + w / 2) / imgsz
        yc = (y0 + h / 2) / imgsz
        labels.append(f"{cls} {xc:.6f} {yc:.6f} {w / imgsz:.6f} {h / imgsz:.6f}")
    return img, labels


def make_dataset(
    root: Path | str,
    n_train: int = 16,
    n_val: int = 8,
    imgsz: int = 128,
    seed: int = 0,
    *,
    background: tuple[int, int] = LIGHT_BG,
    balanced: bool = False,
) -> Path:
    """Write a YOLO-format dataset under ``root`` and return the absolute data.yaml path.

    Layout: images/{train,val}/*.png, labels/{train,val}/*.txt, data.yaml.
    The same arguments always produce byte-identical label files and images.
    background: the range of each channel of the flat background colour.
    balanced: the classes take turns, 2 or 3 boxes an image, so that each class has about
    a third of the boxes of each split (16 training images: at least 10 each, what
    `libreyolo doctor` asks before it stops warning "fewer than 10 training instances");
    data.yaml then starts with BALANCED_MARK.
    """
    root = Path(root).resolve()
    rng = random.Random(seed)
    for split, count in (("train", n_train), ("val", n_val)):
        turns = itertools.cycle(range(len(CLASS_NAMES))) if balanced else None
        img_dir = root / "images" / split
        lbl_dir = root / "labels" / split
        img_dir.mkdir(parents=True, exist_ok=True)
        lbl_dir.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            img, labels = _draw_image(rng, imgsz, background, turns)
            stem = f"{split}_{i:04d}"
            (img_dir / f"{stem}.png").write_bytes(img.png())
            (lbl_dir / f"{stem}.txt").write_text("\n".join(labels) + "\n")
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(CLASS_NAMES))
    data_yaml = root / "data.yaml"
    text = (
        f"{BALANCED_MARK if balanced else ''}"
        f"path: {root}\ntrain: images/train\nval: images/val\nnc: {len(CLASS_NAMES)}\n"
        f"names:\n{names}\n"
    )
    tmp = data_yaml.with_name(f".data.yaml.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, data_yaml)  # written last: its presence means the dataset is whole
    return data_yaml
