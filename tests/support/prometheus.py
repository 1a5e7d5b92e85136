"""The real Prometheus for the tests: Debian's `prometheus` package (prometheus and promtool on
PATH; .ci/run installs it with apt-get when it is missing). A test that needs it says so and
is skipped where it is not installed. `PrometheusServer` runs one of its own: its config and
data under the test's tmp_path, a free port on 127.0.0.1, stopped at the end (a system
service the package may have started is never used)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from support.run_dir import free_port

from .docs import REPO
from .waiting import wait_until

CONTRIB = REPO / "contrib"
RULES = CONTRIB / "prometheus" / "rules.yml"
RULES_TEST = CONTRIB / "prometheus" / "rules_test.yml"
SCRAPE_CONFIG = CONTRIB / "prometheus" / "prometheus.yml"
DASHBOARD = CONTRIB / "grafana" / "rgpu-tui.json"
MISSING = (
    "{name} not found on PATH: install Debian's prometheus package "
    "(apt-get install prometheus; .ci/run does it when it can)"
)


def binary(name: str) -> str:
    """The path of `prometheus` or `promtool`, or the test is skipped saying why."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(MISSING.format(name=name))
    return path


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary("promtool"), *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


class PrometheusServer:
    def __init__(self, workdir: Path, config: str) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = workdir / "prometheus.yml"
        self.config.write_text(config)
        self.log = workdir / "prometheus.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> PrometheusServer:
        argv = [
            binary("prometheus"),
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        wait_until(self._ready, "Prometheus to be ready", timeout=60, details=self.details)
        return self

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            pytest.fail(f"prometheus exited {self.proc.returncode}\n{self.details()}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=5) as resp:
                return resp.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def api(self, path: str, **params: str) -> dict:
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=30) as resp:
            doc = json.load(resp)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query's vector: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        return self.api("query", query=expr)["result"]

    def details(self) -> str:
        try:
            return "prometheus log:\n" + self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no prometheus log)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
