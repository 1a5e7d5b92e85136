"""End to end: a real Prometheus (Debian's package) scrapes `rgpu-tui exporter` on 127.0.0.1
over a root with a live run (a real sleeping python whose pid is in status.json), a dead one
(status.json says running, its pid is gone), a completed one whose best.pt `rgpu-tui push`
pushed to the local Hub, and a run with a hostile name. Its target comes from `rgpu-tui
fleet --prometheus-targets`, its rules are contrib/prometheus/rules.yml as shipped, its
scrape and evaluation intervals are 1 s. The HTTP API must return rgpu_run_dead == 1 for the
dead run only, the RgpuRunDead alert must fire for it, and every query of the Grafana
dashboard must evaluate. Skipped, saying so, where the prometheus package is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.checkpoints import checkpoint_bytes
from support.cli_env import RGPU_TUI, clean_env
from support.exporter_proc import Exporter
from support.hostile import HOSTILE_NAME, make_hostile_run
from support.hub_server import HubServer
from support.prometheus import DASHBOARD, RULES, PrometheusServer, binary
from support.run_dir import iso, write_status
from support.waiting import wait_until

from rgpu_tui.core.base.text import printable

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
HF = "hf" + "_"
WRITE_TOKEN = HF + "WriteTokenForTheExporterTest0123456789"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubServer]:
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def trainer(tmp_path: Path) -> Iterator[subprocess.Popen]:
    """The live run's trainer: a real python that sleeps, its command line naming its run
    (runs/live: core.run.run_process)."""
    live = str(tmp_path / "runs" / "live")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", live])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def root(tmp_path: Path, trainer: subprocess.Popen, hub: HubServer) -> Path:
    binary("prometheus")  # skip before building anything when the package is missing
    root = tmp_path / "runs"
    created = psutil.Process(trainer.pid).create_time()
    write_status(
        root / "live",
        dict(
            state="running",
            pid=trainer.pid,
            started_at=iso(created),
            updated_at=iso(created),
            current_epoch=3,
            completed_epochs=2,
            total_epochs=10,
            mean_epoch_seconds=600.0,
            model_family="yolo9",
            model_size="t",
            task="detect",
        ),
    )
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_status(
        root / "dead",
        dict(
            state="running",
            pid=gone.pid,
            started_at="2026-01-01T00:00:00+00:00",
            updated_at="2026-01-01T01:00:00+00:00",
            completed_epochs=6,
            total_epochs=10,
        ),
    )
    (root / "dead" / "weights").mkdir()
    (root / "dead" / "weights" / "last.pt").write_bytes(checkpoint_bytes(1000, 2))
    done = root / "done"
    shutil.copytree(FIXTURE_RUN, done)
    (done / "weights" / "best.pt").write_bytes(checkpoint_bytes(20_000, 1))
    env = clean_env(tmp_path, HF_ENDPOINT=hub.url, HF_TOKEN=WRITE_TOKEN, HF_HUB_DISABLE_XET="1")
    push = subprocess.run(
        [str(RGPU_TUI), "push", str(done), "--repo", "alice/ckpts", "--settle", "0.05"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert push.returncode == 0, push.stdout + push.stderr
    make_hostile_run(root)
    return root


def prometheus_config(targets: Path) -> str:
    return f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {json.dumps(str(RULES))}
scrape_configs:
  - job_name: rgpu
    scrape_timeout: 1s
    file_sd_configs:
      - files: [{json.dumps(str(targets))}]
"""


def fleet_targets(tmp_path: Path, port: int) -> Path:
    """`rgpu-tui fleet --prometheus-targets` for one [[hosts]] entry: this machine."""
    config = tmp_path / "fleet.toml"
    config.write_text('[[hosts]]\nname = "local"\nssh = "tester@127.0.0.1"\n')
    proc = subprocess.run(
        [str(RGPU_TUI), "fleet", "--config", str(config), "--prometheus-targets",
         "--exporter-port", str(port)],
        capture_output=True, text=True, timeout=60, env=clean_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "targets.json"
    path.write_text(proc.stdout)
    return path


def by_run(result: list[dict]) -> dict[str, float]:
    return {r["metric"]["run"]: float(r["value"][1]) for r in result}


def test_prometheus_sees_the_dead_run_and_fires_rgpu_run_dead(tmp_path: Path, root: Path) -> None:
    env = clean_env(tmp_path)
    exporter = Exporter(root, env, "--fake-gpus", "2", "--price-per-hour", "3.48")
    prometheus = None
    try:
        port = int(exporter.url.rsplit(":", 1)[1])
        targets = fleet_targets(tmp_path, port)
        prometheus = PrometheusServer(tmp_path / "prometheus", prometheus_config(targets)).start()

        def details() -> str:
            return exporter.details() + "\n" + prometheus.details()

        dead = wait_until(
            lambda: prometheus.query("rgpu_run_dead == 1"),
            "rgpu_run_dead == 1 in Prometheus",
            timeout=60,
            details=details,
        )
        assert [r["metric"]["run"] for r in dead] == ["dead"]
        assert dead[0]["metric"]["host"] == "local"  # the fleet target's label
        assert dead[0]["metric"]["instance"] == f"127.0.0.1:{port}"
        hostile = printable(HOSTILE_NAME)
        assert by_run(prometheus.query("rgpu_run_dead")) == {
            "dead": 1.0,
            "live": 0.0,
            "done": 0.0,
            hostile: 0.0,  # a hostile name did not spoil the scrape
        }
        states = {
            r["metric"]["run"]: r["metric"]["state"] for r in prometheus.query("rgpu_run_info")
        }
        assert states == {"dead": "dead", "live": "running", "done": "completed", hostile: "failed"}
        # pushed for real and unchanged: confirmed; the dead run's last.pt never was
        assert by_run(prometheus.query("rgpu_run_weights_unpushed")) == {"done": 0.0, "dead": 1.0}
        assert by_run(prometheus.query("rgpu_gpu_run")) == {"live": 1.0}
        [source] = prometheus.query("rgpu_gpu_source_info")
        assert source["metric"]["source"] == "fake"
        assert [r["value"][1] for r in prometheus.query("up")] == ["1"]

        def firing() -> list[dict]:
            alerts = prometheus.api("alerts")["alerts"]
            return [
                a
                for a in alerts
                if a["labels"]["alertname"] == "RgpuRunDead" and a["state"] == "firing"
            ]

        alerts = wait_until(firing, "RgpuRunDead firing", timeout=60, details=details)
        assert [a["labels"]["run"] for a in alerts] == ["dead"]
        assert alerts[0]["annotations"]["summary"] == f"Run dead on 127.0.0.1:{port} is dead"

        # every query of the dashboard evaluates on the real engine; the runs table has rows
        dash = json.loads(DASHBOARD.read_text())
        for panel in dash["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"].replace("$instance", ".*")
                result = prometheus.query(expr)
                if panel["title"] in ("Runs", "Dead runs", "GPU utilisation by run"):
                    assert result, (panel["title"], expr)
    finally:
        if prometheus is not None:
            prometheus.stop()
        code = exporter.stop()
    assert code == 0, exporter.details()
