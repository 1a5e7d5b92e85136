"""What several commands share: the default runs root, the settings flags (`--config`,
`--price-per-hour`, ...: one per flagged key of core.base.config) and the settings they give,
with their errors and warnings printed, and the Hub's `--timeout` (push, pull)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from ..core.base.config import (
    ENV_PREFIX,
    ConfigError,
    Settings,
    default_config_path,
    env_var,
    flag_name,
    load_settings,
    setting_flags,
)
from .numbers import number

DEFAULT_ROOT = "./runs"
HUB_TIMEOUT_RANGE = (1.0, 3600.0)  # seconds


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """--config FILE and one flag per flagged key (dest: the key; value parsed later)."""
    group = parser.add_argument_group(
        "settings",
        f"Override {ENV_PREFIX}<KEY> environment variables, which override the config file "
        f"({default_config_path()}).",
    )
    group.add_argument(
        "--config", default=None, metavar="FILE", help="read settings from FILE instead"
    )
    for key, metavar, text in setting_flags():
        group.add_argument(
            flag_name(key),
            dest=key,
            default=None,
            metavar=metavar,
            help=f"{text} (also {env_var(key)})",
        )


def settings_from_args(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> Settings:
    """The settings for a parsed command line: --config, then env, then the flags."""
    flags = {key: getattr(args, key, None) for key, _metavar, _text in setting_flags()}
    return load_settings(getattr(args, "config", None), environ, flags, now)


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
