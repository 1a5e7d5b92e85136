"""How numbers, times and money read on the screen and in text output.

Shared by the widgets, the text output (core.picture.snapshot_text, core.picture.cost), the events
and the JSON's timestamps: one way to write a duration, a price, a metric, a time.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def fmt_duration(seconds: float | None) -> str:
    """12s, 4m05s, 3h07m, 2d04h; '?' when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = int(round(max(seconds, 0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def fmt_money(value: float | None) -> str:
    """Dollars to the cent; '?' when unknown."""
    if value is None or not math.isfinite(value):
        return "?"
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def fmt_rate(per_hour: float | None) -> str:
    """A price per hour: to the cent from $1/h, to 4 decimals under it."""
    if per_hour is None or not math.isfinite(per_hour):
        return "?/h"
    return f"${per_hour:.4f}/h" if abs(per_hour) < 1 else f"${per_hour:,.2f}/h"


def fmt_number(value: float | None) -> str:
    """Compact, fixed-ish width number; '-' when unknown."""
    if value is None or not math.isfinite(value):
        return "-"
    a = abs(value)
    if a == 0:
        return "0"
    if a >= 1e5 or a < 1e-3:
        return f"{value:.2e}"
    if a >= 100:
        return f"{value:.1f}"
    return f"{value:.4g}"


def fmt_gpu_indices(indices) -> str:
    """GPU indices as compact ranges: (0, 1, 2, 3) -> "0-3", (0, 2, 3) -> "0,2-3"."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(indices)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def fmt_bytes(n: int | None) -> str:
    """A file size: 0 B, 812 B, 4.1 kB, 34.9 MB, 1.20 GB (decimal units); '?' when unknown."""
    if n is None or n < 0:
        return "?"
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1e3:.1f} kB"
    if n < 1_000_000_000:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e9:.2f} GB"
