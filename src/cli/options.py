"""What several commands share: the default runs root, the settings from the flags
(`--config`, `--price-per-hour`, ...: core.base.config) with their errors and warnings printed,
and the Hub's `--timeout` (push, pull)."""

from __future__ import annotations

import argparse
import sys

from ..core.base.config import ConfigError, settings_from_args
from .numbers import number

DEFAULT_ROOT = "./runs"
HUB_TIMEOUT_RANGE = (1.0, 3600.0)  # seconds


def add_hub_timeout_flag(p: argparse.ArgumentParser) -> None:
    """`--timeout S`: how long push and pull wait for the Hub to answer."""
    p.add_argument(
        "--timeout",
        type=number(*HUB_TIMEOUT_RANGE),
        default=60.0,
        metavar="S",
        help="seconds to wait for the Hub to answer before giving up, 1 to 3600 (default 60)",
    )


def settings_or_none(args):
    """The settings, or None after printing the one-line error (the caller exits 2).
    A default config file that cannot be read is a one-line warning; the command goes on."""
    try:
        settings = settings_from_args(args)
    except ConfigError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return None
    for warning in settings.warnings:
        print(f"rgpu-tui: warning: {warning}", file=sys.stderr)
    return settings
