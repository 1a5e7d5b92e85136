"""Values read from run files and settings: a number in a sane range, or unknown.

Everything in a run directory is untrusted: a number may be NaN, infinite, 400 digits
long, a year-1 timestamp or a negative epoch, and a JSON document may be nested a
thousand deep. Every reader takes its numbers through here, so a value out of range
becomes None ("unknown") for that one field, never an exception, and the reader can say
which field was odd. The ranges live here, in one place:

- epochs 0..10^7; process ids 1..2^22 (Linux's PID_MAX_LIMIT);
- times 1970-01-01..2200-01-01 UTC (epoch seconds), durations 0..about ten years;
- metric values: any finite float (a 400-digit integer is not one);
- settings: prices, money, sizes and minutes in the ranges below.

`parse_json` is json.loads that only raises ValueError: a document nested deeper than
JSON_DEPTH (which would otherwise raise RecursionError here or in whatever walks it
later) is "not JSON" like any other garbage.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import NamedTuple


class Range(NamedTuple):
    lo: float
    hi: float

    def __contains__(self, value) -> bool:  # exact for ints of any size, no float overflow
        return self.lo <= value <= self.hi


INT64_MAX = 2**63 - 1
FLOAT_MAX = 1.7976931348623157e308

EPOCHS = Range(0, 10_000_000)
PIDS = Range(1, 4_194_304)  # PID_MAX_LIMIT on 64-bit Linux
TIMES = Range(0.0, 7_258_118_400.0)  # 1970-01-01 .. 2200-01-01 UTC
DURATIONS = Range(0.0, 3.2e8)  # seconds: about ten years
METRIC = Range(-FLOAT_MAX, FLOAT_MAX)  # any finite float
INT64 = Range(-INT64_MAX - 1, INT64_MAX)

# settings (config file, RGPU_* variables, flags)
PRICE_PER_HOUR = Range(0.0, 100_000.0)  # USD/h for a whole machine
STORAGE_PRICE = Range(0.0, 1_000.0)  # USD per GB-month
MONEY = Range(-1e9, 1e9)  # a balance, USD
COST = Range(0.0, 1e9)  # a rebuild cost, USD
DISK_GB = Range(0.0, 1e7)  # 10 PB
MINUTES = Range(0.0, 525_600.0)  # a year
SIGNAL_DELAY_S = Range(0.0, 86_400.0)  # a day

JSON_DEPTH = 32  # real status.json / metrics rows / records nest 3 deep
NESTED_TOO_DEEP = "nested too deep"


def num(value) -> float | None:
    """A finite float for an int or float; None for bools, NaN, infinities, integers
    too large for a float and anything else. Never raises."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return float(value) if value in METRIC else None
    return value if math.isfinite(value) else None


def int_or_none(value) -> int | None:
    """An int (a float truncated) that fits in 64 bits; None otherwise. Never raises."""
    n = checked(value, INT64, integer=True)[0]
    return int(n) if n is not None else None


def checked(value, rng: Range, *, integer: bool = False) -> tuple[float | int | None, bool]:
    """(value, odd) for a JSON value meant to be a number in `rng`.

    Not a number at all (absent, null, a string, a bool): (None, False), as the readers
    always treated it. A number that is not finite or out of `rng`: (None, True), so the
    reader can say so. Otherwise the value (an int, a float truncated, with `integer`;
    a float otherwise). Never raises."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, False
    if isinstance(value, float) and not math.isfinite(value):
        return None, True
    if value not in rng:
        return None, True
    if integer:
        return int(value), False
    return float(value), False


def parse_time(value) -> float | None:
    """ISO-8601 text (as libreyolo writes it) to epoch seconds within TIMES; None if
    unusable or out of range. A naive time is local time, as a person would mean it."""
    return checked_time(value)[0]


def checked_time(value) -> tuple[float | None, bool]:
    """(epoch seconds, odd): odd when `value` is an ISO time out of TIMES (year 1, 9999)."""
    if not isinstance(value, str) or not value:
        return None, False
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None, False
    try:
        ts = dt.timestamp()
    except (ValueError, OverflowError, OSError):  # year 1 in local time, and the like
        return None, True
    return (ts, False) if ts in TIMES else (None, True)


def shown(value, limit: int = 24) -> str:
    """A short text of an odd value for a problem line (a 400-digit number is cut)."""
    text = value if isinstance(value, str) else _number_text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number_text(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"{'-' if value < 0 else ''}{len(str(abs(value)))}-digit number"
    return repr(value)


def parse_json(raw: bytes | str):
    """json.loads, raising only ValueError: for text that is not JSON, and for a document
    nested deeper than JSON_DEPTH (json itself would raise RecursionError at ~1000)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(NESTED_TOO_DEEP) from None
    if isinstance(value, (dict, list)) and _openers(raw) > JSON_DEPTH and not _shallow(value):
        raise ValueError(NESTED_TOO_DEEP)
    return value


def _openers(raw: bytes | str) -> int:
    """How many { and [ the text holds: at most that deep (a C-speed bound that spares
    the walk for every flat metrics row)."""
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[")
    return raw.count(b"{") + raw.count(b"[")


def _shallow(value) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > JSON_DEPTH:
            return False
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return True
