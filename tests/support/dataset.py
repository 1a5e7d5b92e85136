"""Deterministic synthetic YOLO dataset: coloured rectangles on a noisy background.

Used by the real-training tests; small enough that libreyolo trains an epoch on
the CPU in a few seconds.
"""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw

CLASS_NAMES = ("red", "green", "blue")
_CLASS_COLOURS = ((220, 40, 40), (40, 200, 60), (50, 70, 230))


def _draw_image(rng: random.Random, imgsz: int) -> tuple[Image.Image, list[str]]:
    bg = tuple(rng.randint(90, 160) for _ in range(3))
    img = Image.new("RGB", (imgsz, imgsz), bg)
    draw = ImageDraw.Draw(img)
    labels: list[str] = []
    min_side = max(8, imgsz // 8)
    max_side = max(min_side + 1, imgsz // 2)
    for _ in range(rng.randint(1, 3)):
        cls = rng.randrange(len(CLASS_NAMES))
        w = rng.randint(min_side, max_side)
        h = rng.randint(min_side, max_side)
        x0 = rng.randint(0, imgsz - w)
        y0 = rng.randint(0, imgsz - h)
        draw.rectangle((x0, y0, x0 + w - 1, y0 + h - 1), fill=_CLASS_COLOURS[cls])
        xc = (x0 + w / 2) / imgsz
        yc = (y0 + h / 2) / imgsz
        labels.append(f"{cls} {xc:.6f} {yc:.6f} {w / imgsz:.6f} {h / imgsz:.6f}")
    return img, labels


def make_dataset(
    root: Path, n_train: int = 16, n_val: int = 8, imgsz: int = 128, seed: int = 0
) -> Path:
    """Write a YOLO-format dataset under ``root`` and return the absolute data.yaml path.

    Layout: images/{train,val}/*.png, labels/{train,val}/*.txt, data.yaml.
    The same arguments always produce byte-identical label files and images.
    """
    root = Path(root).resolve()
    rng = random.Random(seed)
    for split, count in (("train", n_train), ("val", n_val)):
        img_dir = root / "images" / split
        lbl_dir = root / "labels" / split
        img_dir.mkdir(parents=True, exist_ok=True)
        lbl_dir.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            img, labels = _draw_image(rng, imgsz)
            stem = f"{split}_{i:04d}"
            img.save(img_dir / f"{stem}.png")
            (lbl_dir / f"{stem}.txt").write_text("\n".join(labels) + "\n")
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(CLASS_NAMES))
    data_yaml = root / "data.yaml"
    data_yaml.write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnc: {len(CLASS_NAMES)}\n"
        f"names:\n{names}\n"
    )
    return data_yaml
