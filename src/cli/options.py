"""What several commands share: the default runs root, the settings from the flags
(`--config`, `--price-per-hour`, ...: core.config) with their errors and warnings printed,
and file sizes as people read them."""

from __future__ import annotations

import sys

from ..core.config import ConfigError, settings_from_args

DEFAULT_ROOT = "./runs"


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


def human_bytes(n: float) -> str:
    """812 B, 3.4 MB, 1.2 GB (decimal units, as the Hub shows sizes)."""
    for unit in ("B", "KB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
