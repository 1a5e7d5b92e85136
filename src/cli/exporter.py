"""`rgpu-tui exporter [ROOT] [--listen 127.0.0.1:9464]`: runs, GPUs and money for Prometheus.

`/metrics` in the Prometheus text format through prometheus_client: a registry of our own
(no global state) holding one collector that serves the newest families of the refresher
(core.render.exporter_feed: the app's Collector, at most one read a second, a scrape never
held up for long by a slow disk; the families and their contract are core.render.prometheus).
It binds loopback unless told otherwise (reach it over an SSH tunnel, or run Prometheus on
the machine), answers `/` with one line and anything else with 404, and logs no request.
The server is core.render.metrics_app's (the WSGI app) over core.render.http_serve's
(connections capped, a deadline for each request to arrive whole, a dropped client a
rate-limited line at most).
It reads only: it never pushes, notifies or stops. SIGINT and SIGTERM end it with status 0;
a port it cannot bind ends it with status 1 and one line.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import threading

from ..core.fleet.prometheus_targets import DEFAULT_EXPORTER_PORT
from .gpus import add_gpu_source_flags, settings_and_gpu_source
from .numbers import OneLineParser
from .options import DEFAULT_ROOT, add_settings_flags

DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_EXPORTER_PORT}"
FIRST_REFRESH_WAIT_S = 10.0  # the first Snapshot before listening (a hung disk: listen anyway)


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT or [IPv6]:PORT (port 0: any free port); an argparse type."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"must be HOST:PORT (e.g. {DEFAULT_LISTEN}, [::1]:9464, 0.0.0.0:9464), got {text!r}"
        )
    return host, int(port)


def _parser() -> OneLineParser:
    p = OneLineParser(
        prog="rgpu-tui exporter",
        description="Serve PATH's runs, GPUs and money at /metrics for Prometheus (the "
        "metric names are a contract: docs/exporter.md). Reads only; binds loopback unless "
        "--listen says otherwise. Ends with status 0 on SIGINT or SIGTERM.",
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument(
        "--listen",
        type=listen_address,
        default=listen_address(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"where to serve (default {DEFAULT_LISTEN}; port 0: a free one, said at start)",
    )
    add_gpu_source_flags(p)
    add_settings_flags(p)
    return p


def _say(text: str) -> None:
    sys.stderr.write(f"rgpu-tui exporter: {text}\n")
    sys.stderr.flush()


def cmd_exporter(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    got = settings_and_gpu_source(args)
    if got is None:
        return 2
    settings, choice = got

    from ..core.away.headless import Stop
    from ..core.away.price_feed import price_feed
    from ..core.base.text import printable
    from ..core.picture.collect import Collector
    from ..core.render.exporter_feed import MetricsFeed
    from ..core.render.metrics_app import make_server

    root = os.path.abspath(os.path.expanduser(args.path))
    host, port = args.listen
    stop = Stop()
    collector = feed = server = None
    try:
        price = price_feed(settings)
        collector = Collector(
            root, **choice.collector_args(), log_keep=1, settings=settings, price=price
        )
        feed = MetricsFeed(collector, on_error=_say).start()
        feed.wait_first(FIRST_REFRESH_WAIT_S)
        try:
            server = make_server(host, port, feed, log=_say)
        except OSError as exc:
            print(
                f"rgpu-tui: cannot listen on {printable(host)}:{port}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 1
        bound = server.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        _say(
            f"serving http://{printable(shown)}:{bound}/metrics for {printable(root)} "
            f"(GPUs: {_source_text(choice)})"
        )
        if not _loopback(host):
            _say(
                f"warning: {printable(host)} is not loopback: whoever reaches port {bound} "
                "sees run names, GPUs and money (no TLS, no auth); an SSH tunnel is safer"
            )
        serving = threading.Thread(target=server.serve_forever, name="rgpu-exporter-http")
        serving.daemon = True
        serving.start()
        while not stop.requested:
            stop.wait(3600.0)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        if feed is not None:
            feed.close()
        if collector is not None:
            collector.close()
        stop.close()
    return 0


def _source_text(choice) -> str:
    if choice.fake_gpus is not None:
        return f'{choice.fake_gpus} simulated, served with source="fake"'
    if choice.replay is not None:
        return 'a recording, served with source="replay"'
    return "NVML"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
