"""What several commands share: the default runs root, and the settings from the flags
(`--config`, `--price-per-hour`, ...: core.config) with their errors and warnings printed."""

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
