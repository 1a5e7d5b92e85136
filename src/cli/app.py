"""`rgpu-tui [PATH]`: open the app; its parser is the top-level one, so its --help lists the
commands (from the COMMANDS table) and its --version says what is installed."""

from __future__ import annotations

import argparse
import sys

from ..core.base.config import add_settings_flags
from .gpus import add_gpu_source_flags, gpu_source
from .numbers import OneLineParser, number
from .options import DEFAULT_ROOT, settings_or_none

INTERVAL_RANGE = (0.1, 3600.0)  # seconds between refreshes


def app_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="rgpu-tui",
        description="Supervise LibreYOLO training runs from the terminal. `rgpu-tui [PATH]` "
        "opens the app on PATH (the options below); `rgpu-tui COMMAND ...` runs one of the "
        "commands listed at the end (`rgpu-tui COMMAND -h` for its options).",
        epilog=_commands_help(),
        formatter_class=_LinesKept,
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument("--version", action=_VersionAction, help="print the version and exit")
    p.add_argument(
        "--interval",
        type=number(*INTERVAL_RANGE),
        default=1.0,
        help="seconds between refreshes, 0.1 to 3600 (default 1)",
    )
    p.add_argument("--theme", default=None, help="Textual theme, e.g. ansi-dark for slow links")
    p.add_argument(
        "--no-autostop",
        action="store_true",
        help="hold autostop while the app runs: `rgpu-tui watch` does not run autostop_command "
        "(`a` in the app toggles it)",
    )
    add_gpu_source_flags(p)
    add_settings_flags(p)
    return p


def cmd_app(argv: list[str]) -> int:
    args = app_parser().parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    from ..tui.app import RgpuApp

    try:
        choice = gpu_source(args)
        app = RgpuApp(
            root=args.path,
            interval=args.interval,
            theme_name=args.theme,
            **choice.collector_args(),
            settings=settings,
            no_autostop=args.no_autostop,
        )
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0


# -- --help and --version ------------------------------------------------------------


class _LinesKept(argparse.HelpFormatter):
    """argparse's help, except that a text with line breaks (the command table) is kept as
    written instead of being wrapped into one paragraph."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _commands_help() -> str:
    from . import COMMANDS  # the package's table, which lists this command too

    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {summary}" for name, (_f, summary) in COMMANDS.items()]
    return "commands:\n" + "\n".join(lines)


def version_text() -> str:
    """`rgpu-tui VERSION (textual VERSION, fast paths on)`: from the installed distributions'
    metadata, and which of the app's fast paths this Textual allows (probed, not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    from ..tui import compat

    def installed(dist: str) -> str | None:
        try:
            return version(dist)
        except PackageNotFoundError:
            return None

    own = installed("rgpu-tui") or "version unknown (not installed as a distribution)"
    textual = installed("textual") or "not installed"
    return f"rgpu-tui {own} (textual {textual}, {compat.probe().text()})"


class _VersionAction(argparse.Action):
    """--version: computed only when asked for (not each time the parser is built)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()
