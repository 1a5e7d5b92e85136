"""The settings' value parsers: a raw value (a TOML value, or a string from RGPU_<KEY> or a
flag) -> the checked value. Each raises ValueError("must be ...") without the value; the
loader (core.base.config) adds where it came from and what it was.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime

from .values import METRIC, TIMES, Range


def number(raw) -> float:
    if isinstance(raw, bool):
        raise ValueError("must be a number")
    if isinstance(raw, int) and raw not in METRIC:  # 400 digits: float() would overflow
        raise ValueError("must be a finite number")
    if isinstance(raw, (int, float)):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError("must be a number") from None
    else:
        raise ValueError("must be a number")
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def within(rng: Range, *, positive: bool = False) -> Callable[[object], float]:
    """A number in `rng` (core.base.values holds the ranges); more than 0 with `positive`."""

    def parse(raw) -> float:
        if isinstance(raw, int) and not isinstance(raw, bool) and raw not in METRIC:
            value = math.inf if raw > 0 else -math.inf  # 400 digits: said out of range
        else:
            value = number(raw)
        if positive and value <= 0:
            raise ValueError("must be more than 0")
        if value < rng.lo:
            raise ValueError(
                "must not be negative" if rng.lo == 0 else f"must be at least {rng.lo:,.0f}"
            )
        if value > rng.hi:
            raise ValueError(f"must be at most {rng.hi:,.0f}")
        return value

    return parse


def when(raw) -> float:
    """ISO 8601 time (or epoch seconds) -> epoch seconds within core.base.values.TIMES (1970 to
    2200); no offset means local time. Epoch milliseconds are refused with a hint."""
    if isinstance(raw, datetime):
        value = timestamp(raw)
    elif isinstance(raw, date):
        value = timestamp(datetime(raw.year, raw.month, raw.day))
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = number(raw)
    else:
        value = None
        if isinstance(raw, str):
            text = raw.strip()
            try:
                value = float(text) if re.fullmatch(r"\d+(\.\d*)?", text) else iso_time(text)
            except ValueError:
                pass
        if value is None:
            raise ValueError("must be an ISO 8601 time such as 2026-07-31T10:00:00Z")
    if value not in TIMES:
        if value / 1000 in TIMES:
            raise ValueError("looks like epoch milliseconds: give seconds or an ISO 8601 time")
        raise ValueError("must be a time from 1970 to 2200")
    return value


def timestamp(dt: datetime) -> float:
    try:
        return dt.timestamp()
    except (ValueError, OverflowError, OSError):  # year 1 in local time, and the like
        return -math.inf


def iso_time(text: str) -> float:
    if text.endswith(("Z", "z")):  # fromisoformat takes "Z" only from 3.11
        text = text[:-1] + "+00:00"
    return timestamp(datetime.fromisoformat(text))


def plain_text(raw) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("must be a non-empty string")
    return raw.strip()


def repo_id(raw) -> str:
    text = plain_text(raw)
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*", text):
        raise ValueError("must look like ORG/NAME")
    return text


def choice(*allowed: str) -> Callable[[object], str]:
    def parse(raw) -> str:
        text = plain_text(raw).lower()
        if text not in allowed:
            raise ValueError("must be one of " + ", ".join(allowed))
        return text

    return parse


NOTIFY_MAX_ARGS = 64  # an argv for a notification: curl with a few headers fits easily
NOTIFY_MAX_ARG_CHARS = 4096
_ARGV_EXAMPLE = '["curl", "-s", "--data-raw", "{message}", "https://ntfy.sh/TOPIC"]'


def command(example: str) -> Callable[[object], tuple[str, ...]]:
    """A command as an argv list (run without a shell): a TOML array of strings, or (from
    RGPU_<KEY>) the same as a JSON array. Non-empty, the program not blank, at most
    NOTIFY_MAX_ARGS arguments of at most NOTIFY_MAX_ARG_CHARS characters, no NUL."""

    def parse(raw) -> tuple[str, ...]:
        must = f"must be an argv list of strings, e.g. {example} (no shell)"
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except (ValueError, RecursionError):
                raise ValueError(must) from None
        if not isinstance(raw, list) or not all(isinstance(arg, str) for arg in raw):
            raise ValueError(must)
        if not raw or not raw[0].strip():
            raise ValueError(must + "; the first one is the program")
        if len(raw) > NOTIFY_MAX_ARGS:
            raise ValueError(f"must have at most {NOTIFY_MAX_ARGS} arguments")
        for arg in raw:
            if len(arg) > NOTIFY_MAX_ARG_CHARS:
                raise ValueError(
                    f"must have arguments of at most {NOTIFY_MAX_ARG_CHARS} characters"
                )
            if "\0" in arg:
                raise ValueError("must not hold a NUL character")
        return tuple(raw)

    return parse


argv = command(_ARGV_EXAMPLE)
_STOP_EXAMPLE = '["vastai", "stop", "instance", "12345"]'


def command_with_vars(example: str) -> Callable[[object], tuple[str, ...]]:
    """An argv list whose $VAR / ${VAR} references are well formed (they are filled in
    from the environment when it runs: core.base.env_expand)."""

    def parse(raw) -> tuple[str, ...]:
        from .env_expand import check_template

        argv = command(example)(raw)
        problem = check_template(argv)
        if problem:
            raise ValueError(problem)
        return argv

    return parse


stop_command = command_with_vars(_STOP_EXAMPLE)  # autostop_command
# price_command (core.away.price_feed): vast.ai's CLI inside the instance it prices
price_command = command_with_vars('["vastai", "show", "instance", "$CONTAINER_ID", "--raw"]')


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def flag(raw) -> bool:
    """A TOML boolean, or (from the environment) true/false, yes/no, on/off, 1/0."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in _TRUE + _FALSE:
        return raw.strip().lower() in _TRUE
    raise ValueError("must be true or false")
