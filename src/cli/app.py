"""`rgpu-tui [PATH]`: open the app; its parser is the top-level one, so its --help lists the
commands (from the COMMANDS table) and its --version says what is installed."""

from __future__ import annotations

import argparse
import difflib
import os
import sys

from ..core.base.invocation import command
from ..core.base.text import printable
from .gpus import add_gpu_source_flags, gpu_source
from .numbers import OneLineParser, number
from .options import DEFAULT_ROOT, add_settings_flags, settings_or_none

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
    refused = not_a_path(args.path)
    if refused:
        print(refused, file=sys.stderr)
        return 2
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
    refused = no_terminal("rgpu-tui")  # after every value is checked: those errors first
    if refused:
        app.collector.close()
        print(refused, file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0


# -- what the app refuses to open on ----------------------------------------------------

# words people type for a command that has another name here
OTHER_NAMES = {
    "train": "launch",
    "start": "launch",
    "run": "launch",
    "kill": "stop",
    "status": "snapshot",
    "show": "snapshot",
    "ls": "snapshot",
    "list": "snapshot",
    "price": "cost",
    "upload": "push",
    "download": "pull",
    "check": "preflight",
    "gpus": "preflight",
}


def not_a_path(path: str) -> str | None:
    """Why PATH is not opened: a bare word (no "/", not "." or "~" first) that is neither a
    command nor an existing path is a mistyped command, not a runs root to wait on; the
    line lists the commands and the nearest one. `./WORD` forces a path; None to open it."""
    if "/" in path or path.startswith((".", "~")) or os.path.lexists(path):
        return None
    from . import COMMANDS

    names = list(COMMANDS)
    near = difflib.get_close_matches(path, names, n=1, cutoff=0.6)
    guess = near[0] if near else OTHER_NAMES.get(path.lower())
    hint = f"did you mean `{command()} {guess}`? " if guess else ""
    if path.lower() == "doctor":
        hint = "`libreyolo doctor DATA.yaml` checks a dataset (launch runs it); "
    shown = printable(path)
    return (
        f"rgpu-tui: {shown!r} is neither a command nor an existing path: {hint}"
        f"commands: {', '.join(names)}; `./{shown}` opens it as a runs root"
    )


def app_instead() -> str:
    """What to run where no terminal is: the commands as this shell finds them."""
    cmd = command()
    return (
        f"`{cmd} snapshot` prints what it shows once, `{cmd} watch` prints each event as it comes"
    )


def no_terminal(prog: str, instead: str | None = None) -> str | None:
    """Why a full-screen app cannot start: it reads keys on stdin and draws on stdout and
    stderr (Textual's output), so each must be a terminal. Without one it would wait on
    keys that never come (stdin /dev/null: a busy core); None when all three are."""
    missing = [
        name
        for name, stream in (
            ("stdin", sys.__stdin__),
            ("stdout", sys.__stdout__),
            ("stderr", sys.__stderr__),
        )
        if stream is None or not _isatty(stream)
    ]
    if not missing:
        return None
    which = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    verb = "is" if len(missing) == 1 else "are"
    instead = app_instead() if instead is None else instead
    return f"{prog}: the app needs a terminal, and {which} {verb} not one: {instead}"


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):  # closed
        return False


# -- --help and --version ------------------------------------------------------------


def cmd_help(argv: list[str]) -> int:
    """`rgpu-tui help [COMMAND]`: the general help, or that command's own (as `rgpu-tui
    COMMAND --help`); an unknown name is one line with the nearest command, exit 2."""
    from . import COMMANDS

    if not argv or argv[0] in ("help", "-h", "--help"):
        return cmd_app(["--help"])
    name = argv[0]
    if len(argv) > 1 or name not in COMMANDS:
        near = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
        guess = near[0] if near else OTHER_NAMES.get(name.lower())
        shown = printable(" ".join(argv))
        hint = f"did you mean `rgpu-tui help {guess}`? " if guess else ""
        print(
            f"rgpu-tui help: no command {shown!r}: {hint}commands: {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    command, _summary = COMMANDS[name]
    try:
        return command(["--help"])
    except SystemExit as exc:  # argparse's --help: printed, exit 0
        return exc.code if isinstance(exc.code, int) else 0


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
