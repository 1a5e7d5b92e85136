"""`rgpu-tui fleet --prometheus-targets`: the fleet's hosts as Prometheus file_sd targets
(core.fleet.prometheus_targets), printed without reaching any host."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.cli_env import RGPU_TUI, clean_env

from rgpu_tui.core.base.hosts import HostSpec
from rgpu_tui.core.fleet.prometheus_targets import exporter_host, file_sd_targets


@pytest.mark.parametrize(
    ("ssh", "host"),
    [
        ("a100-1", "a100-1"),
        ("gpu@203.0.113.7", "203.0.113.7"),
        ("me@box.example.net", "box.example.net"),
        ("ssh://gpu@box:2222", "box"),
        ("ssh://box", "box"),
        ("ssh://me@[2001:db8::7]:22", "2001:db8::7"),
        ("user@2001:db8::7", "2001:db8::7"),
        ("a@b@host", "host"),
    ],
)
def test_exporter_host(ssh: str, host: str) -> None:
    assert exporter_host(ssh) == host


def test_file_sd_targets_one_group_per_host_in_order() -> None:
    specs = [HostSpec("a100-1", "gpu@203.0.113.7"), HostSpec("v6", "me@2001:db8::7")]
    assert file_sd_targets(specs, 9100) == [
        {"targets": ["203.0.113.7:9100"], "labels": {"host": "a100-1"}},
        {"targets": ["[2001:db8::7]:9100"], "labels": {"host": "v6"}},
    ]


def fleet(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = clean_env(tmp_path, PATH="/nonexistent")  # no ssh to run, were it tried
    return subprocess.run(
        [str(RGPU_TUI), "fleet", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_the_command_prints_the_config_hosts_and_reaches_none(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[[hosts]]\nname = "a100-1"\nssh = "gpu@203.0.113.7"\n\n'
        '[[hosts]]\nname = "box2"\nssh = "box2"\nroot = "/data/runs"\n'
    )
    proc = fleet(tmp_path, "--config", str(config), "--prometheus-targets")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        {"targets": ["203.0.113.7:9464"], "labels": {"host": "a100-1"}},
        {"targets": ["box2:9464"], "labels": {"host": "box2"}},
    ]
    assert proc.stderr == ""


def test_hosts_named_on_the_command_line_and_another_port(tmp_path: Path) -> None:
    proc = fleet(tmp_path, "me@h1:/runs", "h2", "--prometheus-targets", "--exporter-port", "9100")
    assert proc.returncode == 0, proc.stderr
    assert [g["targets"] for g in json.loads(proc.stdout)] == [["h1:9100"], ["h2:9100"]]


def test_no_hosts_and_a_bad_port_are_one_line_and_status_2(tmp_path: Path) -> None:
    proc = fleet(tmp_path, "--prometheus-targets")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("rgpu-tui: no hosts:") and proc.stderr.count("\n") == 1
    proc = fleet(tmp_path, "h1", "--prometheus-targets", "--exporter-port", "70000")
    assert proc.returncode == 2 and "--exporter-port" in proc.stderr
