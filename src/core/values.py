"""Values read from JSON files (status.json, metrics rows, records): numbers or nothing."""

from __future__ import annotations

import math


def num(value) -> float | None:
    """A finite float for an int or float; None for bools, NaN, infinities and anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def int_or_none(value) -> int | None:
    n = num(value)
    return int(n) if n is not None else None
