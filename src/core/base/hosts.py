"""The machines of the fleet: `[[hosts]]` tables of the config file, or HOST[:ROOT]
arguments: what the config's parser checks (core.base.config reads them, so they sit in
base). The `ssh` command line that reaches a host is the fleet's (core.fleet.ssh).

    [[hosts]]
    name = "a100-1"                # what the fleet calls it (default: the ssh destination)
    ssh = "gpu@203.0.113.7"        # an ssh destination: a Host alias of ~/.ssh/config, or
                                   # [user@]host (required)
    root = "~/runs"                # its runs root (default ./runs, under its home)
    remote_command = "rgpu-tui agent"   # a string for the remote shell, or an argv list
    price_per_hour = 1.89          # passed to its agent as --price-per-hour
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .values import PRICE_PER_HOUR

DEFAULT_REMOTE_COMMAND = "rgpu-tui agent"
DEFAULT_REMOTE_ROOT = "./runs"
HOST_KEYS = ("name", "ssh", "root", "remote_command", "price_per_hour")
MAX_TEXT = 1024
_NAME = re.compile(r"[A-Za-z0-9][\w.@+-]{0,63}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class HostsError(ValueError):
    """A bad host entry; str(error) is one line, `line` the 1-based line of its table
    in the config file when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class HostSpec:
    name: str
    ssh: str
    root: str = DEFAULT_REMOTE_ROOT
    remote_command: str | tuple[str, ...] = DEFAULT_REMOTE_COMMAND
    price_per_hour: float | None = None


# -- checking what the user wrote ----------------------------------------------------


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string")
    if len(value) > MAX_TEXT:
        raise ValueError(f"{what} must be at most {MAX_TEXT} characters")
    if _CONTROL.search(value):
        raise ValueError(f"{what} must not hold control characters")
    return value.strip()


def check_destination(value) -> str:
    dest = _text(value, "ssh")
    if dest.startswith("-") or any(c.isspace() for c in dest):
        raise ValueError("ssh must be an ssh destination ([user@]host or a Host alias)")
    return dest


def check_name(value) -> str:
    name = _text(value, "name")
    if not _NAME.fullmatch(name):
        raise ValueError("name must be letters, digits and . _ - @ +, at most 64")
    return name


def check_root(value) -> str:
    return _text(value, "root")


def _remote_command(value) -> str | tuple[str, ...]:
    if isinstance(value, list):
        if not value or not all(isinstance(v, str) and v for v in value):
            raise ValueError("remote_command must be a string or a list of non-empty strings")
        return tuple(_text(v, "remote_command") for v in value)
    return _text(value, "remote_command")


def _price(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("price_per_hour must be a number")
    if value not in PRICE_PER_HOUR:  # exact for a 400-digit int; NaN is in no range
        raise ValueError(f"price_per_hour must be from 0 to {PRICE_PER_HOUR.hi:,.0f}")
    return float(value)


def host_from_table(table) -> HostSpec:
    """One [[hosts]] table; raises ValueError (one line, no place) when it is wrong."""
    if not isinstance(table, dict):
        raise ValueError("each hosts entry must be a table ([[hosts]])")
    for key in table:
        if key not in HOST_KEYS:
            raise ValueError(f"unknown key '{key}' in [[hosts]] (known: {', '.join(HOST_KEYS)})")
    if "ssh" not in table:
        raise ValueError("[[hosts]] needs ssh = DESTINATION")
    ssh = check_destination(table["ssh"])
    return HostSpec(
        name=check_name(table.get("name", ssh)),
        ssh=ssh,
        root=check_root(table.get("root", DEFAULT_REMOTE_ROOT)),
        remote_command=_remote_command(table.get("remote_command", DEFAULT_REMOTE_COMMAND)),
        price_per_hour=_price(table["price_per_hour"]) if "price_per_hour" in table else None,
    )


def _table_lines(text: str) -> list[int]:
    return [
        text.count("\n", 0, m.start()) + 1
        for m in re.finditer(r"^[ \t]*\[\[[ \t]*hosts[ \t]*\]\]", text, re.MULTILINE)
    ]


def parse_hosts(raw, text: str = "") -> tuple[HostSpec, ...]:
    """The value of `hosts` in the config file (an array of tables); `text` is the file,
    to name the line of a bad table. Raises HostsError."""
    lines = _table_lines(text)
    if not isinstance(raw, list):
        raise HostsError("hosts must be [[hosts]] tables", lines[0] if lines else None)
    hosts: list[HostSpec] = []
    for i, table in enumerate(raw):
        line = lines[i] if i < len(lines) else None
        try:
            spec = host_from_table(table)
        except ValueError as exc:
            raise HostsError(str(exc), line) from None
        if any(h.name == spec.name for h in hosts):
            raise HostsError(f"two hosts are named '{spec.name}'", line)
        hosts.append(spec)
    return tuple(hosts)


def parse_host_arg(arg: str, configured: tuple[HostSpec, ...] = ()) -> HostSpec:
    """HOST[:ROOT] from the command line: HOST is a configured host's name (ROOT then
    replaces its root) or an ssh destination. Raises ValueError (one line)."""
    if arg.startswith("["):  # [2001:db8::1]:ROOT
        end = arg.find("]")
        if end < 0:
            raise ValueError(f"{arg!r}: an IPv6 address needs its closing ]")
        host, rest = arg[: end + 1], arg[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"{arg!r}: HOST[:ROOT] expected")
        root = rest[1:] or None
    else:
        host, sep, root = arg.partition(":")
        root = root if sep else None
    if root is not None and not root.strip():
        raise ValueError(f"{arg!r}: ROOT after ':' is empty")
    for spec in configured:
        if spec.name == host:
            if root is None:
                return spec
            return HostSpec(
                spec.name, spec.ssh, check_root(root), spec.remote_command, spec.price_per_hour
            )
    dest = check_destination(host)
    name = dest if _NAME.fullmatch(dest) else re.sub(r"[^\w.@+-]", "_", dest)[:64]
    return HostSpec(name=name, ssh=dest, root=check_root(root) if root else DEFAULT_REMOTE_ROOT)
