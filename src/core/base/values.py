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

`value_text` is the one way a parsed value (YAML or JSON: mappings, lists, scalars) becomes
text: compact JSON-like text cut to a length, its work bounded by that length while it
walks. A parsed YAML document shares objects (a 352-byte file whose aliases nest nine deep
is 9^9 items), so nothing may turn a whole value into text first and cut it after.
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
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = _number_text(value)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    return value_text(value, limit)


def _number_text(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"{'-' if value < 0 else ''}{_digits(abs(value))}-digit number"
    return repr(value)


def _digits(value: int) -> int:
    """How many digits a non-negative int has, without writing it out past a few thousand
    (str() of a 1 MB hexadecimal YAML integer raises, and costs quadratic time)."""
    bits = value.bit_length()
    if bits <= INT_TEXT_BITS:
        return len(str(value))
    return int(bits * math.log10(2)) + 1  # may be one short of the exact count


INT_TEXT_BITS = 13_000  # about 3,900 digits: Python refuses to write more than 4,300
CUT = "…"


def value_text(value, limit: int) -> str:
    """Compact text of a parsed value, at most `limit` characters (cut with "…"):
    `null`, `true`, numbers, a string as itself at the top and quoted inside a list or
    mapping (`[0.5, 1.5]`, `{"a": 1}`), a sequence as a list, anything else by its str().
    It stops walking once `limit` characters are written: the work is bounded by `limit`
    whatever the value (shared or cyclic YAML aliases, a 1 MB integer)."""
    if isinstance(value, str):
        return _cut(value, limit)
    parts: list[str] = []
    size = 0
    # a stack of pending texts and iterators (a container's items still to write)
    stack: list = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Text):
            text = item.text
        elif isinstance(item, _Items):
            got = next(item.items, _DONE)
            if got is _DONE:
                text = item.close
            else:
                stack.append(_Items(item.items, item.close, item.mapping, True))
                key, child = got if item.mapping else (None, got)
                # a string inside a list or mapping is quoted
                stack.append(_Text(_quoted(child, limit)) if isinstance(child, str) else child)
                if item.mapping:
                    stack.append(_Text(_quoted(key, limit) + ": "))
                if item.started:
                    stack.append(_Text(", "))
                continue
        else:
            text = _scalar_or_open(item, stack, limit)
            if text is None:
                continue
        parts.append(text)
        size += len(text)
    return _cut("".join(parts), limit)


class _Text(NamedTuple):
    text: str


class _Items(NamedTuple):
    items: object  # an iterator
    close: str
    mapping: bool
    started: bool = False


_DONE = object()


def _scalar_or_open(item, stack: list, limit: int) -> str | None:
    """The text of a scalar; for a container, its opening bracket (its items are pushed)."""
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item) if item.bit_length() <= INT_TEXT_BITS else _number_text(item)
    if isinstance(item, float):
        return repr(item)
    if isinstance(item, dict):
        stack.append(_Items(iter(item.items()), "}", True))
        return "{"
    if isinstance(item, (list, tuple, set, frozenset)):
        stack.append(_Items(iter(item), "]", False))
        return "["
    if isinstance(item, (bytes, bytearray)):
        return repr(bytes(item[: limit + 1]))
    try:
        return _cut(str(item), limit + 1)  # a date or time from YAML: short
    except Exception:  # a str() that fails: the type says enough
        return type(item).__name__


def _quoted(value, limit: int) -> str:
    """A mapping key or a string inside a container, as JSON text (cut first when long)."""
    text = value if isinstance(value, str) else value_text(value, limit)
    if len(text) > limit:
        text = text[: limit + 1]
    return json.dumps(text, ensure_ascii=False)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + CUT


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
