"""Settings: one place, read once, used by every command.

Three layers, each overriding the one before:

1. the TOML file `$XDG_CONFIG_HOME/rgpu-tui/config.toml` (default
   `~/.config/rgpu-tui/config.toml`, or `--config FILE`); a missing default
   file is fine, a missing `--config FILE` is an error;
2. environment variables `RGPU_<KEY>` (`RGPU_PRICE_PER_HOUR=3.48`); an empty
   one counts as unset;
3. command-line flags (`--price-per-hour 3.48`), for the keys that have one.

Every mistake is a `ConfigError` whose message is one line naming where the
bad value came from: `/path/config.toml line 3: ...`, `RGPU_DISK_GB: ...` or
`--balance: ...`. A number must be finite and in its sane range (core.base.values:
a price up to $100,000/h, a balance within ±$1e9, ...); a time from 1970 to 2200
(epoch milliseconds are refused with a hint). The file is opened without blocking
(a FIFO is refused); a default file that exists but cannot be read (permission
denied, a directory, a FIFO) is a warning in `Settings.warnings` and the other
sources still count, while a `--config FILE` that cannot be read is an error.
Unknown keys in the file are errors too (they are nearly always typos). Unknown
`RGPU_*` variables are ignored: other parts of the program own some
(RGPU_FAKE_GPUS).

A key is one field of `Settings`, declared with `_setting(...)`: adding a key
is adding that one line (and, if it needs a new kind of value, a parser in
core.base.setting_values).

Times (`balance_at`, `billing_started_at`) are ISO 8601 (`2026-07-31T10:00:00Z`,
a TOML date-time, or epoch seconds); a time without an offset is local time.
`balance_at` defaults to when the balance was read: the config file's mtime
when the balance comes from the file, otherwise the moment the settings were
loaded. An explicit `balance_at` is used only if it comes from the same layer
as the balance or a later one (a `--balance` flag is "now", whatever the file
says). `billing_started_at` unset means "when this container started", which
`core.picture.cost` resolves (PID 1's start time, else boot time).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields

from . import setting_values as sv
from .hosts import HostsError, HostSpec, parse_hosts
from .push_files import push_files
from .safeio import NotRegularFile, open_regular
from .values import (
    COST,
    DISK_GB,
    MINUTES,
    MONEY,
    PRICE_PER_HOUR,
    SIGNAL_DELAY_S,
    STORAGE_PRICE,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ENV_PREFIX = "RGPU_"
APP_DIR = "rgpu-tui"
CONFIG_NAME = "config.toml"

FILE, ENV, FLAG = 1, 2, 3  # precedence of the layers
MAX_CONFIG_BYTES = 1024 * 1024


class ConfigError(ValueError):
    """A bad setting; str(error) is one line that says where it came from."""


def _setting(
    parse: Callable[[object], object],
    help: str,
    *,
    flag: bool = False,
    metavar: str | None = None,
    default=None,
):
    """One settings key: its parser, its help, whether it has a flag."""
    return field(
        default=default,
        metadata={"parse": parse, "help": help, "flag": flag, "metavar": metavar},
    )


@dataclass(frozen=True)
class Settings:
    """What the user told us. None: not set (the code that uses it says what it falls back to)."""

    price_per_hour: float | None = _setting(
        sv.within(PRICE_PER_HOUR), "USD per hour for the whole machine", flag=True, metavar="USD"
    )
    disk_gb: float | None = _setting(
        sv.within(DISK_GB),
        "allocated disk in GB (default: the filesystem that holds the runs)",
        flag=True,
        metavar="GB",
    )
    storage_price_gb_month: float | None = _setting(
        sv.within(STORAGE_PRICE),
        "USD per GB per month of disk (billed while stopped)",
        flag=True,
        metavar="USD",
    )
    rebuild_cost: float | None = _setting(
        sv.within(COST),
        "USD to rent again, pull, install and re-stage data",
        flag=True,
        metavar="USD",
    )
    price_command: tuple[str, ...] | None = _setting(
        sv.price_command,
        "argv run on start and every few minutes that prints the current USD per hour (and "
        "optionally the balance): a number, or its provider's JSON; overrides price_per_hour "
        "once it answers; $VAR and ${VAR} come from the environment",
    )
    balance: float | None = _setting(
        sv.within(MONEY), "prepaid credit left at balance_at, USD", flag=True, metavar="USD"
    )
    balance_at: float | None = _setting(sv.when, "when the balance was read (ISO 8601)")
    billing_started_at: float | None = _setting(
        sv.when, "when billing started (ISO 8601; default: when this container started)"
    )
    idle_minutes: float = _setting(
        sv.within(MINUTES, positive=True), "minutes idle before the idle banner", default=10.0
    )
    # pushing checkpoints to the Hugging Face Hub
    hub_repo: str | None = _setting(
        sv.repo_id,
        "Hub repo for checkpoints, ORG/NAME (created private)",
        flag=True,
        metavar="REPO",
    )
    hub_path: str = _setting(
        sv.plain_text, "path in the repo; {run} and {file} are filled in", default="{run}/{file}"
    )
    auto_push: str = _setting(
        sv.choice("off", "best", "period"),
        "push best.pt after each new best (best) or each epoch_N.pt (period)",
        default="off",
    )
    auto_push_files: tuple[str, ...] = _setting(
        push_files,
        'with auto_push on: ["best"] (default), or ["best", "last"] to push last.pt after '
        'each epoch too (what a resume needs); with period, "last" adds last.pt',
        default=("best",),
    )
    # launching and stopping runs
    model: str = _setting(
        sv.plain_text, "default model of the launch form", default="LibreYOLO9s.pt"
    )
    stop_term_after: float = _setting(
        sv.within(SIGNAL_DELAY_S, positive=True),
        "seconds after SIGINT before a stop sends SIGTERM",
        default=30.0,
    )
    stop_kill_after: float = _setting(
        sv.within(SIGNAL_DELAY_S, positive=True),
        "seconds after SIGINT before a stop sends SIGKILL",
        default=60.0,
    )
    # what `rgpu-tui watch` does with an event (core.away.events, core.away.notify)
    notify_command: tuple[str, ...] | None = _setting(
        sv.argv,
        "argv run for each event by `rgpu-tui watch`; {event} {run} {message} {host} filled in",
    )
    notify_new_best: bool = _setting(
        sv.flag, "also report each new best epoch of a run (event new_best)", default=False
    )
    # what `rgpu-tui watch` runs once the machine idles with every run's weights on the Hub
    # (core.away.autostop); off unless both are set
    autostop_command: tuple[str, ...] | None = _setting(
        sv.stop_command,
        "argv `rgpu-tui watch` runs to stop the machine once it idled autostop_idle_minutes "
        "with every run's weights on the Hub; $VAR and ${VAR} come from the environment",
    )
    autostop_idle_minutes: float | None = _setting(
        sv.within(MINUTES, positive=True),
        "minutes idle before autostop_command runs (fractions allowed: 0.5 is 30 s)",
    )
    autostop_trust_records: bool = _setting(
        sv.flag,
        "let autostop run when the Hub cannot be asked, trusting pushes.jsonl (risky: a "
        "stale or forged record stops the machine with weights only on it)",
        default=False,
    )
    # the machines of `rgpu-tui fleet`: [[hosts]] tables of the file only (core.base.hosts)
    hosts: tuple[HostSpec, ...] = ()
    # where the values came from: not settings themselves
    config_path: str | None = None  # the file that was read, if one was
    sources: tuple[tuple[str, str], ...] = ()  # (key, "file line 3" / "RGPU_X" / "--x")
    warnings: tuple[str, ...] = ()  # one line each, for stderr: a default file not read

    def source(self, key: str) -> str | None:
        """Where `key` came from, in words; None for a default."""
        return dict(self.sources).get(key)


SETTING_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Settings) if "parse" in f.metadata)
_SPEC = {f.name: f.metadata for f in fields(Settings) if "parse" in f.metadata}


def env_var(key: str) -> str:
    return ENV_PREFIX + key.upper()


def flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def default_config_path(environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(xdg):  # the XDG spec: a relative value is ignored
        home = environ.get("HOME") or os.path.expanduser("~")
        xdg = os.path.join(home, ".config")
    return os.path.join(xdg, APP_DIR, CONFIG_NAME)


def config_file_for(settings: Settings, environ: Mapping[str, str] | None = None) -> str:
    """The config file to name to the user: the one these settings were read from, else
    the default one they would be read from ($XDG_CONFIG_HOME respected), with the home
    folder as ~."""
    path = settings.config_path or default_config_path(environ)
    environ = os.environ if environ is None else environ
    home = (environ.get("HOME") or os.path.expanduser("~")).rstrip("/")
    if home and path.startswith(home + "/"):
        return "~" + path[len(home) :]
    return path


# -- the file -----------------------------------------------------------------


def _key_line(text: str, key: str) -> int | None:
    """The 1-based line where `key` is set (or its table opened), if it can be found."""
    pattern = re.compile(
        r"^[ \t]*(\[+[ \t]*)?[\"']?" + re.escape(key) + r"[\"']?[ \t]*(=|\]|\.)", re.MULTILINE
    )
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _decode_error(path: str, text: str, exc: Exception) -> ConfigError:
    msg = getattr(exc, "msg", None) or str(exc)
    line = getattr(exc, "lineno", None)
    col = getattr(exc, "colno", None)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        msg = msg[: m.start()]
    m = re.search(r"\s*\(at end of document\)\s*$", msg)
    if m:
        line = line or max(len(text.splitlines()), 1)
        msg = msg[: m.start()] + " at the end of the file"
    msg = " ".join(msg.split())
    msg = msg[:1].lower() + msg[1:]
    where = f"{path} line {line}" if line else path
    if col:
        msg += f" (column {col})"
    return ConfigError(f"{where}: {msg}")


def _read_file(path: str, explicit: bool, warnings: list[str]) -> tuple[dict, str, float] | None:
    """(document, text, mtime), or None for a missing default file, or for a default file
    that cannot be read (permission denied, a directory, a FIFO): that one is a warning
    added to `warnings` and the other sources still count. A `--config FILE` that cannot
    be read, and any file that is read but is not valid, are a ConfigError."""
    try:
        # never blocks: a FIFO or a device is refused before it is opened
        with os.fdopen(open_regular(path), "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
            mtime = os.fstat(handle.fileno()).st_mtime
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"{path}: no such file") from None
        return None
    except OSError as exc:
        if isinstance(exc, IsADirectoryError):
            why = "is a directory, not a config file"
        elif isinstance(exc, NotRegularFile):
            why = "is not a regular file (a FIFO, socket or device), not a config file"
        else:
            why = f"cannot read: {exc.strerror or exc}"
        if explicit:
            raise ConfigError(f"{path}: {why}") from None
        warnings.append(f"{path}: {why}; settings from it are not used")
        return None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB, not a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path} line {line}: not UTF-8 text") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _decode_error(path, text, exc) from None
    except ValueError:  # int() refuses more than 4300 digits (sys.get_int_max_str_digits)
        raise ConfigError(f"{path}: holds a number too long to read") from None
    return doc, text, mtime


def _unknown_key(where: str, key: str) -> ConfigError:
    close = difflib.get_close_matches(key, SETTING_KEYS, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "known: " + ", ".join(SETTING_KEYS)
    return ConfigError(f"{where}: unknown key '{key}' ({hint})")


# -- loading ------------------------------------------------------------------


def _parse(key: str, raw, where: str):
    spec = _SPEC[key]
    try:
        return spec["parse"](raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {key} {exc}, got {_show(raw)}") from None
    except ArithmeticError:  # a parser missed a huge value: still one line
        raise ConfigError(f"{where}: {key} is out of range, got {_show(raw)}") from None


def _show(raw) -> str:
    text = repr(raw) if isinstance(raw, str) else str(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def load_settings(
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
    now: float | None = None,
) -> Settings:
    """File < environment < flags. Raises ConfigError (one line) on any bad value.

    config_path: None reads the default file if it exists; a path must exist.
    flags: key -> raw value (None: not given), as argparse leaves them.
    now: the clock, for balance_at when the balance does not come from the file.
    """
    environ = os.environ if environ is None else environ
    now = time.time() if now is None else now
    explicit = config_path is not None
    path = os.path.abspath(os.path.expanduser(config_path)) if explicit else None
    path = path or default_config_path(environ)

    values: dict[str, object] = {}
    level: dict[str, int] = {}
    source: dict[str, str] = {}
    read_path = None
    file_mtime = None
    warnings: list[str] = []

    got = _read_file(path, explicit, warnings)
    if got is not None:
        doc, text, file_mtime = got
        read_path = path
        for key, raw in doc.items():
            line = _key_line(text, key)
            where = f"{path} line {line}" if line else path
            if key == "hosts":
                try:
                    values["hosts"] = parse_hosts(raw, text)
                except HostsError as exc:
                    at = exc.line or line
                    where = f"{path} line {at}" if at else path
                    raise ConfigError(f"{where}: {exc}") from None
                continue
            if key not in _SPEC:
                raise _unknown_key(where, key)
            values[key] = _parse(key, raw, where)
            level[key], source[key] = FILE, where

    for key in SETTING_KEYS:
        name = env_var(key)
        raw = environ.get(name)
        if raw is None or not raw.strip():
            continue
        values[key] = _parse(key, raw, name)
        level[key], source[key] = ENV, name

    for key, raw in (flags or {}).items():
        if raw is None:
            continue
        if key not in _SPEC:
            raise ConfigError(f"unknown setting '{key}'")
        name = flag_name(key)
        values[key] = _parse(key, raw, name)
        level[key], source[key] = FLAG, name

    if "balance" in values:
        if level.get("balance_at", 0) < level["balance"]:
            if level["balance"] == FILE and file_mtime is not None:
                values["balance_at"], source["balance_at"] = file_mtime, "config file mtime"
            else:
                values["balance_at"], source["balance_at"] = now, "when the settings were read"

    return Settings(
        **values,
        config_path=read_path,
        sources=tuple(sorted(source.items())),
        warnings=tuple(warnings),
    )


# -- the flags (the command line's parsers are cli.options') ------------------------


def setting_flags() -> tuple[tuple[str, str, str], ...]:
    """(key, metavar, help) of each setting that has a command-line flag (flag_name(key))."""
    return tuple(
        (key, _SPEC[key]["metavar"], _SPEC[key]["help"])
        for key in SETTING_KEYS
        if _SPEC[key]["flag"]
    )
