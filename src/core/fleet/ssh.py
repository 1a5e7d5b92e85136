"""The one `ssh` command line that reaches a fleet host (core.base.hosts' HostSpec: the
`[[hosts]]` tables and HOST[:ROOT] arguments).

The ssh command is an argv list (no local shell): `ssh -T -o BatchMode=yes [-F FILE]
-o ConnectTimeout=S -o RemoteCommand=none DEST -- LINE`, where LINE is what the remote
shell runs: remote_command as written (a string is shell text on purpose: a venv path,
`~/.local/bin/rgpu-tui agent`), then ROOT and the price, each through shlex.quote.
"""

from __future__ import annotations

import math
import shlex

from ..base.hosts import HostSpec


def remote_line(spec: HostSpec) -> str:
    """What the remote shell runs: the command, then ROOT (and the price), quoted."""
    if isinstance(spec.remote_command, tuple):
        line = shlex.join(spec.remote_command)
    else:
        line = spec.remote_command
    if spec.price_per_hour is not None:
        line += " --price-per-hour " + shlex.quote(repr(spec.price_per_hour))
    root = "./" + spec.root if spec.root.startswith("-") else spec.root  # not an option
    return line + " " + shlex.quote(root)


def ssh_argv(
    spec: HostSpec,
    *,
    ssh_config: str | None = None,
    connect_timeout: float = 10.0,
    ssh: str = "ssh",
) -> list[str]:
    """The argv that starts the host's agent over SSH (see the module doc): no TTY
    (lines stay lines), never a password or host-key prompt (BatchMode), and a
    RemoteCommand of the user's config does not replace the agent."""
    argv = [ssh, "-T", "-o", "BatchMode=yes"]
    if ssh_config:
        argv += ["-F", ssh_config]
    argv += [
        "-o",
        f"ConnectTimeout={max(1, math.ceil(connect_timeout))}",
        "-o",
        "RemoteCommand=none",
        "--",
        spec.ssh,
        remote_line(spec),
    ]
    return argv
