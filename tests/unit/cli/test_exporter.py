"""`rgpu-tui exporter`: the real command in a subprocess (port 0, said on stderr), and its
HTTP app in-process over hostile run names (label values made printable, then escaped by
prometheus_client; parsed back with prometheus_client's own parser)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.cli_env import RGPU_TUI, clean_env
from support.exporter_proc import Exporter
from support.hostile import (
    CSV_NAME,
    HOSTILE_NAME,
    METRIC,
    MODEL,
    QUERY,
    RAW_SEQUENCES,
    make_hostile_root,
    unsafe_bytes,
)

from rgpu_tui.cli.exporter import _loopback, listen_address
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.text import printable
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.exporter_feed import MetricsFeed
from rgpu_tui.core.render.metrics_app import make_server
from rgpu_tui.core.render.prometheus import METRICS

from ..helpers import SAMPLE_RUN

# names that the text format must escape (", \ and newline) or that look like its syntax
SYNTAX_NAMES = ('quo"te', "back\\slash", "new\nline", 'brace}{x="1"}', "eq=1,run=x", "tab\tz")


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


@pytest.fixture
def serve() -> Iterator:
    """serve(root, **collector_args) -> base URL of the exporter's app, in-process."""
    stops = []

    def start(root: Path, **kw) -> str:
        collector = Collector(str(root), settings=Settings(), log_keep=1, **kw)
        feed = MetricsFeed(collector).start()
        assert feed.wait_first(30)
        server = make_server("127.0.0.1", 0, feed)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        stops.append((server, thread, feed, collector))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread, feed, collector in stops:
        server.shutdown()
        server.server_close()
        thread.join(10)
        feed.close()
        collector.close()


def parse(body: bytes) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(body.decode("utf-8"))}


def test_hostile_run_names_are_printable_escaped_and_parse_back(tmp_path: Path, serve) -> None:
    root = make_hostile_root(tmp_path / "runs")
    for name in SYNTAX_NAMES:
        shutil.copytree(SAMPLE_RUN, root / name)
    status, ctype, body = get(serve(root, fake_gpus=1) + "/metrics")
    assert status == 200 and ctype.startswith("text/plain")
    for raw in RAW_SEQUENCES:
        assert raw not in body
    assert unsafe_bytes(body) == []  # no control character at all: \n only ends lines
    got = parse(body)
    info = {s.labels["run"]: s.labels for s in got["rgpu_run_info"]}
    expected = {printable(n) for n in SYNTAX_NAMES} | {
        printable(HOSTILE_NAME),
        printable(CSV_NAME),
        "bad\\xffname^Jsecond line",
    }
    assert set(info) == expected
    assert info['quo"te']["state"] == "completed"  # parsed back whole: the quote was escaped
    assert info[printable("new\nline")]["run"] == "new^Jline"
    hostile = info[printable(HOSTILE_NAME)]
    assert hostile["model"] == printable(f"{MODEL[0]}-{MODEL[1]}")
    assert hostile["task"] == printable("detect" + QUERY)
    best = {s.labels["run"]: s.labels["metric"] for s in got["rgpu_run_best_metric"]}
    assert best[printable(HOSTILE_NAME)] == printable(METRIC)


def test_the_served_names_are_the_contract_and_fakes_are_labelled(tmp_path: Path, serve) -> None:
    shutil.copytree(SAMPLE_RUN, tmp_path / "runs" / "done")
    status, _, body = get(serve(tmp_path / "runs", fake_gpus=2) + "/metrics")
    assert status == 200
    text = body.decode()
    assert [f.name for f in text_string_to_metric_families(text)] == [m.name for m in METRICS]
    for m in METRICS:
        assert f"# TYPE {m.name} gauge" in text
    assert 'rgpu_gpu_source_info{source="fake"} 1.0' in text
    assert 'uuid="GPU-fake-0000-0001"' in text


def test_root_says_where_the_metrics_are_and_other_paths_are_404(tmp_path: Path, serve) -> None:
    (tmp_path / "runs").mkdir()
    base = serve(tmp_path / "runs", fake_gpus=0)
    assert get(base + "/") == (
        200,
        "text/plain; charset=utf-8",
        b"rgpu-tui exporter: the metrics are at /metrics\n",
    )
    assert get(base + "/metrics/../x")[0] == 404
    assert get(base + "/favicon.ico")[0] == 404


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9464", ("127.0.0.1", 9464)),
        ("[::1]:9464", ("::1", 9464)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
        ("localhost:80", ("localhost", 80)),
    ],
)
def test_listen_address(text: str, expected) -> None:
    assert listen_address(text) == expected


@pytest.mark.parametrize("text", ["9464", ":9464", "host:", "host:99999", "host:-1", "h:x"])
def test_a_bad_listen_address_is_one_line_and_status_2(text: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(RGPU_TUI), "exporter", str(tmp_path), "--listen", text],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(tmp_path),
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "must be HOST:PORT" in proc.stderr


def test_loopback() -> None:
    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("localhost")
    assert not _loopback("0.0.0.0") and not _loopback("10.0.0.1") and not _loopback("box")


# -- the command -------------------------------------------------------------------------


def tree(root: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[path] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def test_the_command_serves_reads_only_and_ends_with_0_on_sigterm(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(SAMPLE_RUN, root / "done")
    before = tree(root)
    exporter = Exporter(root, clean_env(tmp_path), "--fake-gpus", "2", "--price-per-hour", "3")
    try:
        assert exporter.url.startswith("http://127.0.0.1:")
        assert 'GPUs: 2 simulated, served with source="fake"' in exporter.details()
        for _ in range(3):
            status, _, body = get(exporter.url + "/metrics")
            assert status == 200
        got = parse(body)
        assert [s.value for s in got["rgpu_machine_price_dollars_per_hour"]] == [3.0]
        assert [s.labels for s in got["rgpu_gpu_source_info"]] == [{"source": "fake"}]
    finally:
        code = exporter.stop()
    assert code == 0, exporter.details()
    assert tree(root) == before  # nothing written, nothing created (no .rgpu/)
    assert "Traceback" not in exporter.details()


def test_a_port_in_use_is_one_line_and_status_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [str(RGPU_TUI), "exporter", str(tmp_path), "--listen", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
            env=clean_env(tmp_path),
        )
    assert proc.returncode == 1
    assert proc.stderr == f"rgpu-tui: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_the_exporter_loads_no_act_wing_and_no_textual(tmp_path: Path) -> None:
    """Reads only, by construction: a refresh and a scrape load nothing that pushes,
    launches, stops or notifies (core.hub, core.launch, core.away), nor textual."""
    shutil.copytree(SAMPLE_RUN, tmp_path / "runs" / "done")
    code = f"""
import sys, threading, urllib.request
import rgpu_tui.cli
from rgpu_tui.core.render.metrics_app import make_server
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.exporter_feed import MetricsFeed
collector = Collector({str(tmp_path / "runs")!r}, fake_gpus=1)
feed = MetricsFeed(collector).start()
server = make_server("127.0.0.1", 0, feed)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d/metrics" % server.server_address[1]
assert b"rgpu_run_info" in urllib.request.urlopen(url, timeout=30).read()
server.shutdown()
feed.close()
acts = ("rgpu_tui.core.hub", "rgpu_tui.core.launch", "rgpu_tui.core.away", "textual")
print(sorted(m for m in sys.modules if m.startswith(acts)))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"


def test_localhost_binds_the_ipv4_loopback_a_target_names(tmp_path: Path) -> None:
    collector = Collector(str(tmp_path), settings=Settings(), log_keep=1)
    feed = MetricsFeed(collector)
    server = make_server("localhost", 0, feed)
    try:
        assert server.address_family == socket.AF_INET
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()
        collector.close()
