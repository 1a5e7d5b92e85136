"""What `rgpu-tui exporter` serves: the WSGI app (/metrics in the Prometheus text format
through prometheus_client, a registry of its own: no global state, one collector over the
MetricsFeed's newest families; a line at /, 404 elsewhere, no request logged) and the
bounded server it runs on (core.render.http_serve)."""

from __future__ import annotations

import socket

from .http_serve import BoundedHTTPServer


class _FeedCollector:
    """A prometheus_client collector over the feed's newest families (gauges)."""

    def __init__(self, feed) -> None:
        self.feed = feed

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        for fam in self.feed.latest():
            m = fam.metric
            gauge = GaugeMetricFamily(m.name, m.help, labels=m.labels)
            for labels, value in fam.samples:
                gauge.add_metric(labels, value)
            yield gauge


def metrics_app(feed):
    """The WSGI app: /metrics, a line at /, 404 elsewhere."""
    from prometheus_client import CollectorRegistry, make_wsgi_app

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_FeedCollector(feed))
    metrics = make_wsgi_app(registry)

    def app(environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return metrics(environ, start_response)
        status = "200 OK" if path == "/" else "404 Not Found"
        start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
        return [b"rgpu-tui exporter: the metrics are at /metrics\n"]

    return app


def make_server(host: str, port: int, feed, log=None) -> BoundedHTTPServer:
    """Bound and ready (serve_forever on a thread); OSError when it cannot bind. `log`:
    where the rate-limited lines about dropped clients go (stderr by default)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    families = [info[0] for info in infos]  # "localhost": 127.0.0.1, what a target names
    family = socket.AF_INET if socket.AF_INET in families else families[0]
    return BoundedHTTPServer(host, port, metrics_app(feed), family=family, log=log)
