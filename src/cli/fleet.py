"""`rgpu-tui fleet [HOST[:ROOT]]...`: every machine at once, over SSH.

Each host is one `ssh ... HOST rgpu-tui agent ROOT` (core.fleet.ssh builds the argv,
core.fleet.fleet keeps the link); the hosts come from the arguments or the config's [[hosts]]
tables.
In a terminal it opens the fleet's screen (tui.fleet: a live hosts table, `enter` for a
host's full view); `--json` prints one fleet snapshot and `--once` a plain table, each
once (so does a run whose stdout is not a terminal: a script gets the table).
"""

from __future__ import annotations

import json
import os
import sys

from ..core.base.config import default_config_path
from ..core.base.invocation import command
from ..core.fleet.fleet_summary import read_snapshot, summarize
from ..core.fleet.prometheus_targets import DEFAULT_EXPORTER_PORT
from .numbers import OneLineParser, number
from .options import add_settings_flags, settings_or_none

CONNECT_TIMEOUT_RANGE = (1.0, 300.0)  # seconds
DEFAULT_CONNECT_TIMEOUT = 10.0
SNAPSHOT_GRACE_S = 5.0  # after the connect timeout: the agent's start and first refresh


def _parser() -> OneLineParser:
    p = OneLineParser(
        prog="rgpu-tui fleet",
        description="Every machine in one view, over your own SSH: each HOST runs "
        "`rgpu-tui agent ROOT` through `ssh -o BatchMode=yes` (keys, ssh-agent, ProxyJump and "
        "ControlMaster from your ssh config). Hosts come from the arguments or from the "
        "config's [[hosts]] tables. Opens a live hosts table (enter: a host's full view, "
        "where p, s and r act on that host; esc: back; q: quit); --once prints the table "
        "once, --json one object.",
    )
    p.add_argument(
        "hosts",
        nargs="*",
        metavar="HOST[:ROOT]",
        help="a [[hosts]] name or an ssh destination, with its runs root (default ./runs)",
    )
    p.add_argument("--ssh-config", default=None, metavar="FILE", help="ssh -F FILE")
    p.add_argument(
        "--connect-timeout",
        type=number(*CONNECT_TIMEOUT_RANGE),
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="S",
        help=f"seconds to reach a host, 1 to 300 (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='one object: {"hosts": [{"host", "root", "reachable", "error", "since", "snapshot"}]}',
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="print the hosts table once and exit (also when stdout is not a terminal)",
    )
    p.add_argument("--theme", default=None, help="Textual theme, e.g. ansi-dark for slow links")
    p.add_argument(
        "--prometheus-targets",
        action="store_true",
        help="print the hosts as Prometheus file_sd targets (JSON) for `rgpu-tui exporter` "
        "on each, and exit; reaches no host",
    )
    p.add_argument(
        "--exporter-port",
        type=number(1, 65535, integer=True, unit=""),
        default=DEFAULT_EXPORTER_PORT,
        metavar="PORT",
        help=f"with --prometheus-targets: the exporters' port (default {DEFAULT_EXPORTER_PORT})",
    )
    add_settings_flags(p)
    return p


def cmd_fleet(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    settings = settings_or_none(args)
    if settings is None:
        return 2
    from ..core.base.hosts import parse_host_arg
    from ..core.fleet.fleet import Fleet

    try:
        specs = [parse_host_arg(arg, settings.hosts) for arg in args.hosts] or list(settings.hosts)
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    if not specs:
        where = settings.config_path or args.config or default_config_path()
        print(
            f"rgpu-tui: no hosts: name them ({command()} fleet h1 h2:~/runs) or add [[hosts]] "
            f"tables to {where}",
            file=sys.stderr,
        )
        return 2
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        print("rgpu-tui: a host is named twice", file=sys.stderr)
        return 2
    if args.prometheus_targets:
        from ..core.fleet.prometheus_targets import file_sd_targets

        json.dump(file_sd_targets(specs, args.exporter_port), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.ssh_config is not None and not os.path.isfile(args.ssh_config):
        print(f"rgpu-tui: --ssh-config: {args.ssh_config} is not a file", file=sys.stderr)
        return 2

    if not args.json and not args.once and sys.stdout.isatty():
        from .app import no_terminal

        once = f"`{command()} fleet --once` prints the table once"
        refused = no_terminal("rgpu-tui fleet", once)
        if refused:
            print(refused, file=sys.stderr)
            return 2
        return _screen(specs, args)
    fleet = Fleet(
        specs,
        ssh_config=args.ssh_config,
        connect_timeout=args.connect_timeout,
        reconnect=False,
    ).start()
    try:
        fleet.wait_first(args.connect_timeout + SNAPSHOT_GRACE_S)
        states = fleet.states()
    finally:
        fleet.close()
    if args.json:
        json.dump({"hosts": [s.to_json() for s in states]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print("\n".join(table(states)))
    return 0


def _screen(specs, args) -> int:
    """The live fleet screen; the links end (their agents exit, runs untouched) after the
    terminal is given back."""
    from ..core.fleet.fleet import Fleet
    from ..tui.fleet.app import FleetApp

    def make_fleet(on_change):
        return Fleet(
            specs,
            ssh_config=args.ssh_config,
            connect_timeout=args.connect_timeout,
            on_change=on_change,
        )

    try:
        app = FleetApp(make_fleet, theme_name=args.theme)
    except ValueError as exc:
        print(f"rgpu-tui: {exc}", file=sys.stderr)
        return 2
    try:
        app.run()
    finally:
        app.fleet.close()
    return app.return_code or 0


# -- the table ------------------------------------------------------------------------


def _gpus(h) -> str:
    if h.gpus is None:
        return "none"
    label = f" {h.gpu_label}" if h.gpu_label else ""
    mean = f" {h.gpu_util:.0f}%" if h.gpu_util is not None else ""
    return f"{h.gpus}{label}{mean}"


def _runs(h) -> str:
    return ", ".join(f"{count} {state}" for state, count in h.runs) or "no runs"


def _price(h) -> str:
    return f"{h.price_per_hour:.2f}" if h.price_per_hour is not None else "?"


def table(states) -> list[str]:
    """One line per host: host, reachable, GPUs (count and mean util), runs by state, $/h;
    a host that is not reachable, or whose snapshot is unreadable, has a line that says why.
    Each host's row is the screen's (core.fleet.fleet_summary: its snapshot read back and
    held to the local ranges, so a hostile host's numbers are unknown here too). Made
    printable by the output stream."""
    rows = [("host", "reachable", "GPUs", "runs", "$/h")]
    notes = []
    for s in states:
        snap, error = read_snapshot(s.snapshot) if s.reachable else (None, None)
        if snap is not None:
            h = summarize(s, snap)
            rows.append((s.name, "yes", _gpus(h), _runs(h), _price(h)))
        else:
            rows.append((s.name, "yes" if error else "no", "", "", ""))
            notes.append(f"  {s.name}: {error or s.error or 'not reachable'}")
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4]
        for row in rows
    ]
    return [line.rstrip() for line in lines] + notes
