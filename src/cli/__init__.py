"""Command line: `rgpu-tui [PATH]` opens the app; `rgpu-tui COMMAND ...` runs one of the
sub-commands in COMMANDS (the dispatch in main() and the --help text both read that table).

Argument parsing, wiring core's objects together and printing: the loops and the rules are
core's (watch's loop core.away.watcher, the agent's core.fleet.agent, the exporter's server
core.render.metrics_app, the hosts table's rows core.fleet.fleet_summary), the screens the
tui's. One module per command group: app (the app, --help, --version, the words and missing
terminals it refuses), snapshot (snapshot, cost), chart (chart, compare), push, pull, launch
(launch, stop), resume, preflight, demo, watch, agent, fleet, exporter; beside them numbers
(the numeric-flag validator), gpus (the GPU-source flags, --record-gpus), options (the
settings flags and the settings they give, the runs root, the Hub's --timeout), interrupts
(SIGTERM ends push and pull as Ctrl-C does) and output (what every command prints passes
there).

Imports: core (any wing), and tui only through its entry points: tui.app (RgpuApp), tui.fleet.app
(FleetApp) and tui.compat (--version); an import-linter contract.
"""

from __future__ import annotations

import sys

from .agent import cmd_agent
from .app import cmd_app, cmd_help
from .chart import cmd_chart, cmd_compare
from .demo import cmd_demo
from .exporter import cmd_exporter
from .fleet import cmd_fleet
from .launch import cmd_launch, cmd_stop
from .output import run_guarded
from .preflight import cmd_preflight
from .pull import cmd_pull
from .push import cmd_push
from .resume import cmd_resume
from .snapshot import cmd_cost, cmd_snapshot
from .watch import cmd_watch

# name -> (function, one-line summary); main() dispatches on it and --help lists it
COMMANDS = {
    "snapshot": (cmd_snapshot, "print what the app shows, once (--json: the Snapshot)"),
    "cost": (cmd_cost, "what the machine has cost and will cost; stop or destroy it"),
    "chart": (cmd_chart, "a run's metrics as line charts, several runs overlaid (--json)"),
    "compare": (cmd_compare, "runs side by side: best, time, cost, hyperparameters that differ"),
    "push": (cmd_push, "push a run's checkpoint and small artifacts to the Hugging Face Hub"),
    "pull": (cmd_pull, "download a run's pushed weights and artifacts back, verified"),
    "launch": (cmd_launch, "start `libreyolo train KEY=VALUE...` detached, after doctor"),
    "stop": (cmd_stop, "stop a run: SIGINT, then SIGTERM, then SIGKILL"),
    "resume": (
        cmd_resume,
        "continue a DEAD, FAILED or STOPPED run from its newest complete checkpoint",
    ),
    "preflight": (cmd_preflight, "check that torch can use every GPU (one matmul each)"),
    "demo": (cmd_demo, "train yolo9-t for real on the CPU and watch it in the app"),
    "watch": (cmd_watch, "watch with no screen: one line per event, and notify_command for it"),
    "fleet": (cmd_fleet, "every machine of [[hosts]] over SSH: a live table, a host's full view"),
    "agent": (cmd_agent, "the remote end of `fleet`: JSON lines on stdout, commands on stdin"),
    "exporter": (cmd_exporter, "runs, GPUs and money at /metrics for Prometheus (read-only)"),
    "help": (cmd_help, "this help (also -h, --help); `help COMMAND`: one command's own"),
}


@run_guarded
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        command, _summary = COMMANDS[argv[0]]
        return command(argv[1:])
    return cmd_app(argv)
