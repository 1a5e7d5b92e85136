"""`rgpu-tui fleet --prometheus-targets`: the fleet's hosts as Prometheus file_sd targets.

One target group per host: its exporter at the host part of its ssh destination (the user
and an ssh:// port dropped; an IPv6 address in brackets) and the exporter's port, labelled
`host` with the fleet's name for it. Prometheus resolves that name itself: a Host alias of
~/.ssh/config means nothing to it (docs/exporter.md: run the exporter with --listen on an
address Prometheus reaches, or give each host an SSH tunnel and a static target).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base.hosts import HostSpec

DEFAULT_EXPORTER_PORT = 9464


def exporter_host(ssh: str) -> str:
    """The host of an ssh destination: `gpu@203.0.113.7` -> `203.0.113.7`,
    `ssh://gpu@box:2222` -> `box`, `ssh://[2001:db8::7]:22` -> `2001:db8::7`."""
    dest = ssh
    uri = dest.startswith("ssh://")
    if uri:
        dest = dest[len("ssh://") :].rstrip("/")
    dest = dest.rpartition("@")[2]
    if dest.startswith("["):
        return dest[1:].partition("]")[0]
    if uri and dest.count(":") == 1:
        dest = dest.partition(":")[0]
    return dest


def target(ssh: str, port: int) -> str:
    host = exporter_host(ssh)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def file_sd_targets(specs: Iterable[HostSpec], port: int = DEFAULT_EXPORTER_PORT) -> list[dict]:
    """The file_sd document (a JSON list), in the order of the hosts."""
    return [{"targets": [target(s.ssh, port)], "labels": {"host": s.name}} for s in specs]
