"""How numbers, times, money and sizes read on the screen and in text output.

Shared by the widgets, the text output (core.render.snapshot_text, core.picture.cost), the events
and the JSON's timestamps: one way to write a duration, an amount, a price per something, a
metric, a size in bytes, a time. A disk's free space reads the same in the GPU pane's header,
a warning and `snapshot` (fmt_bytes: decimal units, as disks and the Hub count them).
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


def fmt_eta(eta: float | None, overdue: float | None = None, unknown: str = "?") -> str:
    """A run's ETA: '4m05s', 'overdue 1m05s' when its last epoch is later than its
    estimate (RunInfo.eta_overdue_seconds: never 'ETA 0s' while it runs), else `unknown`."""
    if overdue is not None and math.isfinite(overdue):
        return f"overdue {fmt_duration(overdue)}"
    if eta is None or not math.isfinite(eta):
        return unknown
    return fmt_duration(eta)


def fmt_money(value: float | None) -> str:
    """Dollars to the cent; '?' when unknown."""
    if value is None or not math.isfinite(value):
        return "?"
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


PRICE_DIGITS = 3  # under $1 a price keeps 3 significant digits
PRICE_MAX_DECIMALS = 10


def fmt_price(value: float | None, per: str) -> str:
    """A price per something ("h", "epoch"): to the cent from $1, else 3 significant
    digits, trailing zeros dropped down to the cents ($0.0694/h, $0.058/epoch, $0.35/epoch,
    $0.0012/epoch: a cheap epoch is not "$0.00"); '?/per' when unknown."""
    if value is None or not math.isfinite(value):
        return f"?/{per}"
    sign = "-" if value < 0 else ""
    a = abs(value)
    if a >= 1 or a == 0:
        return f"{sign}${a:,.2f}/{per}"
    decimals = PRICE_DIGITS - 1 - math.floor(math.log10(a))
    text = f"{a:.{min(max(decimals, 2), PRICE_MAX_DECIMALS)}f}"
    whole, frac = text.split(".")
    frac = frac.rstrip("0").ljust(2, "0")
    return f"{sign}${whole}.{frac}/{per}"


def fmt_rate(per_hour: float | None) -> str:
    """A price per hour (fmt_price)."""
    return fmt_price(per_hour, "h")


BYTE_UNITS = ("B", "kB", "MB", "GB", "TB")


def _byte_unit(n: float) -> int:
    """The unit n reads in: the largest whose one-decimal figure stays under 1000."""
    i = 0
    while abs(n) >= 999.95 and i < len(BYTE_UNITS) - 1:
        n /= 1000
        i += 1
    return i


def fmt_bytes(n: float | None) -> str:
    """A size in decimal units: 812 B, 3.4 MB, 69.9 GB, 2.0 TB; '?' when unknown. RAM,
    disks, checkpoints and uploads all read this way, so the same bytes read the same."""
    if n is None or not math.isfinite(n):
        return "?"
    i = _byte_unit(n)
    return f"{n:.0f} B" if i == 0 else f"{n / 1000**i:.1f} {BYTE_UNITS[i]}"


def fmt_bytes_of(part: float | None, whole: float | None) -> str:
    """'13.0/67.4 GB': two sizes in the unit of the whole (fmt_bytes's units)."""
    if whole is None or not math.isfinite(whole):
        return f"{fmt_bytes(part)}/?"
    i = _byte_unit(whole)
    if part is None or not math.isfinite(part):
        shown = "?"
    else:
        shown = f"{part:.0f}" if i == 0 else f"{part / 1000**i:.1f}"
    return f"{shown}/{fmt_bytes(whole)}"


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
