"""contrib/prometheus: the alert rules pass `promtool check rules` and their unit tests
(`promtool test rules`), each of those unit tests fails when its alert is broken, and the
scrape config passes `promtool check config` with the file_sd targets that `rgpu-tui fleet
--prometheus-targets` prints. Needs Debian's prometheus package (skipped, saying so, without)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.prometheus import RULES, RULES_TEST, SCRAPE_CONFIG, promtool

ALERTS = ("RgpuRunDead", "RgpuRunStalled", "RgpuIdleMoney", "RgpuWeightsUnpushed", "RgpuDiskLow")


def test_the_rules_pass_promtool_check_rules() -> None:
    proc = promtool("check", "rules", str(RULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 5 rules found" in proc.stdout


def test_the_rules_pass_their_unit_tests() -> None:
    proc = promtool("test", "rules", RULES_TEST.name, cwd=RULES_TEST.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_the_rules_are_the_five_alerts() -> None:
    doc = yaml.safe_load(RULES.read_text())
    names = [r["alert"] for g in doc["groups"] for r in g["rules"]]
    assert names == list(ALERTS)
    tested = yaml.safe_load(RULES_TEST.read_text())
    covered = {t["alertname"] for case in tested["tests"] for t in case["alert_rule_test"]}
    assert covered == set(ALERTS)


@pytest.mark.parametrize("alert", ALERTS)
def test_an_alert_that_never_fires_fails_its_unit_test(alert: str, tmp_path: Path) -> None:
    """The unit tests can fail: with one alert's expression replaced by one that is never
    true, `promtool test rules` fails and names that alert."""
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if rule["alert"] == alert:
                rule["expr"] = "vector(1) == 0"
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(doc))
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    proc = promtool("test", "rules", RULES_TEST.name, cwd=tmp_path)
    assert proc.returncode != 0
    assert f"alertname: {alert}" in proc.stdout + proc.stderr


def test_an_alert_that_always_fires_fails_its_unit_test(tmp_path: Path) -> None:
    """And the other way: RgpuWeightsUnpushed without its state condition alerts for the
    run still training, which its unit test forbids."""
    text = RULES.read_text()
    broken = re.sub(
        r"\n\s*and ignoring\(state, model, task\)\n\s*rgpu_run_info\{[^}]*\} == 1", "", text
    )
    assert broken != text
    (tmp_path / "rules.yml").write_text(broken)
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    proc = promtool("test", "rules", RULES_TEST.name, cwd=tmp_path)
    assert proc.returncode != 0
    assert "alertname: RgpuWeightsUnpushed" in proc.stdout + proc.stderr


def test_the_scrape_config_checks_with_the_fleets_targets(tmp_path: Path) -> None:
    config = tmp_path / "rgpu-tui" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        '[[hosts]]\nname = "a100-1"\nssh = "gpu@203.0.113.7"\n\n'
        '[[hosts]]\nname = "box2"\nssh = "ssh://me@box2.example:2222"\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "fleet", "--config", str(config),
         "--prometheus-targets"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for src in (SCRAPE_CONFIG, RULES):
        shutil.copy(src, tmp_path / src.name)
    (tmp_path / "rgpu-targets.json").write_text(proc.stdout)
    check = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "WARNING" not in check.stdout + check.stderr  # the targets file was found
    targets = promtool(
        "check", "service-discovery", "--timeout=5s", "prometheus.yml", "rgpu-fleet", cwd=tmp_path
    )
    out = targets.stdout + targets.stderr
    assert "203.0.113.7:9464" in out and "box2.example:9464" in out, out
