"""Numeric command-line flags: finite, and within the range that makes sense for each.

`float("nan")`, `float("inf")` and `1e-300` are all valid floats, and each broke something
(a busy loop, a refresh that never comes, a sleep that never ends, a traceback). Every
numeric flag takes its value through `number(low, high)`, an argparse `type=` that refuses
anything else, so that argparse ends the command with exit status 2 and one line:

    rgpu-tui push: error: argument --settle: must be a number of seconds from 0 to 300, got 'nan'

`OneLineParser` is an ArgumentParser whose errors are that one line (plus where --help
is), without the usage block that argparse prints first.
"""

from __future__ import annotations

import argparse
import math


def number(low: float, high: float, *, integer: bool = False, unit: str = "seconds"):
    """An argparse type: a finite number (a whole one with integer=True) in [low, high]."""
    kind = "a whole number" if integer else "a number"
    what = f"{kind} of {unit}" if unit else kind
    expected = f"must be {what} from {low:g} to {high:g}"

    def parse(text: str):
        try:
            value = int(text, 10) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}") from None
        if (not integer and not math.isfinite(value)) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
        return value

    parse.__name__ = "integer" if integer else "number"  # argparse names it in messages
    return parse


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line instead of usage + message."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
