"""Deterministic synthetic YOLO dataset: coloured rectangles on a flat background.

Used by the real-training tests; small enough that libreyolo trains an epoch on
the CPU in a few seconds. The generator lives in ``rgpu_tui.core.launch.synthetic_dataset``
(the demo uses it too); this module keeps the tests' import path.
"""

from __future__ import annotations

from rgpu_tui.core.launch.synthetic_dataset import CLASS_NAMES, make_dataset

__all__ = ["CLASS_NAMES", "make_dataset"]
