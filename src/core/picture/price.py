"""The price from the provider: what price_command printed, read as $/h (and a balance).

The command itself runs off the refresh path (core.away.price_feed, a thread of the
driver that owns the Collector); a refresh only takes its last `PriceReading` from
memory (`PriceSource.reading()`), so a slow or hanging command never blocks a refresh
and a refresh never runs anything.

What the command may print (`parse_price_output`), at most PRICE_OUTPUT_BYTES:
- a number: the price per hour (`3.48`); two numbers: the price and the balance
  (`3.48 120.50`); a `$` before either is allowed;
- a JSON object (or a list of exactly one), searched breadth-first (at most PRICE_DEPTH
  levels down) for the first key that names a price, and likewise a balance:
  `price_per_hour` / `balance` (our own), vast.ai's `dph_total` (`vastai show instance ID
  --raw`) and `credit` (`vastai show user --raw`), RunPod's `currentSpendPerHr`,
  `costPerHr` / `adjustedCostPerHr` and `clientBalance` (its GraphQL API), Lambda's
  `price_cents_per_hour` (its Cloud API's instance: cents, divided by 100).
A price out of core.base.values.PRICE_PER_HOUR or a balance out of MONEY is refused, as
a typed one would be. Anything else is a ValueError with one line that says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ..base.formatting import fmt_duration, fmt_rate
from ..base.text import printable
from ..base.values import MONEY, PRICE_PER_HOUR, Range, checked, parse_json

PRICE_OUTPUT_BYTES = 64 * 1024  # a provider's instance JSON is a few KiB
PRICE_DEPTH = 4  # RunPod: data.myself.currentSpendPerHr; Lambda: data.instance_type.price_...

# (key, divisor): the first found, level by level, wins
PRICE_KEYS = (
    ("price_per_hour", 1.0),
    ("dph_total", 1.0),  # vast.ai: dollars per hour, GPUs + storage + bandwidth
    ("currentSpendPerHr", 1.0),  # RunPod: the account's pods together
    ("adjustedCostPerHr", 1.0),  # RunPod: one pod
    ("costPerHr", 1.0),
    ("price_cents_per_hour", 100.0),  # Lambda
)
BALANCE_KEYS = ("balance", "credit", "clientBalance")
_NUMBER = re.compile(r"\$?([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


@dataclass(frozen=True)
class PriceReading:
    """What price_command gave: the last good value (kept across failures) and the last
    failure, if the newest attempt failed."""

    program: str  # the command's program, for "price_command (vastai)"
    price_per_hour: float | None = None  # the last good value
    balance: float | None = None  # the last good balance, if the command prints one
    read_at: float | None = None  # epoch seconds of the last good value
    problem: str | None = None  # one line: why the newest attempt gave no price
    problem_at: float | None = None
    attempts: int = 0  # how many times it ran

    @property
    def source(self) -> str:
        return f"price_command ({self.program})"


class PriceSource(Protocol):
    """What the Collector takes the price from (core.away.price_feed.PriceFeed)."""

    def reading(self) -> PriceReading:
        """The last reading, from memory: never blocks, never runs anything."""

    def close(self) -> None:
        """Stop asking (the Collector closes it with itself)."""


def age_text(seconds: float) -> str:
    """How old a price is, to the minute (a view does not repaint each second for it)."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    return f"{fmt_duration(seconds - seconds % 60)} ago"


def price_problem(reading: PriceReading | None, typed: float | None, now: float) -> str | None:
    """One line for the views when price_command gave no price on its newest try (or has
    not answered yet): why, and which price is shown instead. None when all is well."""
    if reading is None:
        return None
    if reading.attempts == 0:
        what = f"{reading.source} has not answered yet"
    elif reading.problem is None:
        return None
    else:
        ago = age_text(max(now - (reading.problem_at or now), 0.0))
        what = f"{reading.source} failed ({ago}): {reading.problem}"
    if reading.price_per_hour is not None and reading.read_at is not None:
        old = age_text(max(now - reading.read_at, 0.0))
        return f"{what}; showing its last price {fmt_rate(reading.price_per_hour)}, read {old}"
    if typed is not None:
        return f"{what}; showing price_per_hour {fmt_rate(typed)} from the settings"
    return f"{what}; no price yet"


def parse_price_output(data: bytes) -> tuple[float, float | None]:
    """(price per hour, balance or None) from what the command printed (module doc)."""
    if len(data) > PRICE_OUTPUT_BYTES:
        raise ValueError(f"printed more than {PRICE_OUTPUT_BYTES // 1024} KiB, not a price")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ValueError("printed something that is not UTF-8 text, not a price") from None
    if not text:
        raise ValueError("printed nothing (a number, or its provider's JSON, was expected)")
    if text[0] in "{[":
        return _from_json(text)
    words = text.split()
    got = [_NUMBER.fullmatch(w) for w in words]
    if len(words) > 2 or not all(got):
        raise ValueError(f"printed {_quote(text)}: not a price (a number was expected)")
    price = _in(float(got[0].group(1)), PRICE_PER_HOUR, "price per hour")
    balance = _in(float(got[1].group(1)), MONEY, "balance") if len(got) == 2 else None
    return price, balance


def _from_json(text: str) -> tuple[float, float | None]:
    try:
        doc = parse_json(text)
    except ValueError as exc:
        raise ValueError(f"printed JSON that cannot be read ({exc})") from None
    if isinstance(doc, list):
        if len(doc) != 1:
            raise ValueError(
                f"printed a list of {len(doc)} items: give the command one instance "
                "(e.g. `vastai show instance ID --raw`)"
            )
        doc = doc[0]
    if not isinstance(doc, dict):
        raise ValueError("printed JSON that is not an object, not a price")
    price = balance = None
    for key, divisor in PRICE_KEYS:
        value = _find(doc, key)
        if value is not None:
            price = _in(value, PRICE_PER_HOUR, key, divisor)
            break
    if price is None:
        said = _said(doc)
        raise ValueError(
            "printed JSON with no price in it ("
            + ", ".join(k for k, _ in PRICE_KEYS)
            + ")"
            + (f"; it said: {said}" if said else "")
        )
    for key in BALANCE_KEYS:
        value = _find(doc, key)
        if value is not None:
            balance = _in(value, MONEY, key)
            break
    return price, balance


def _find(doc: dict, key: str):
    """The value of the first `key`, breadth-first, at most PRICE_DEPTH levels down."""
    level = [doc]
    for _ in range(PRICE_DEPTH):
        nxt = []
        for obj in level:
            if key in obj and obj[key] is not None:
                return obj[key]
            nxt.extend(v for v in obj.values() if isinstance(v, dict))
        level = nxt
    return None


def _in(value, rng: Range, name: str, divisor: float = 1.0) -> float:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        value = float(_NUMBER.fullmatch(value.strip()).group(1))
    number, odd = checked(value, rng)
    if number is not None:
        number /= divisor
        if number in rng:
            return number
    if number is None and not odd:
        raise ValueError(f"printed a {name} that is not a number: {_quote(str(value))}")
    raise ValueError(f"printed a {name} out of range: {_quote(str(value))}")


def _said(doc: dict) -> str:
    """An error message the provider put in its JSON (`errors[0].message`, `error`, `msg`)."""
    errors = doc.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        msg = errors[0].get("message")
        if isinstance(msg, str):
            return _quote(msg, 80)
    for key in ("error", "msg", "message", "detail"):
        msg = doc.get(key)
        if isinstance(msg, dict):
            msg = msg.get("message")
        if isinstance(msg, str):
            return _quote(msg, 80)
    return ""


def _quote(text: str, limit: int = 40) -> str:
    text = " ".join(printable(text).split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
