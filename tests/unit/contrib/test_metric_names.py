"""The metric contract holds the exporter, the docs, the Grafana dashboard and the alert
rules together: every metric name (and label) a dashboard query or a rule uses is one the
exporter serves, with samples, over a root with a live and a completed run, simulated GPUs
and a price; every metric of the contract is served; docs/exporter.md's table is the
contract."""

from __future__ import annotations

import json
import os
import re
import shutil

import psutil
import pytest
import yaml
from support.docs import doc
from support.prometheus import DASHBOARD, RULES
from support.run_dir import iso

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.render.exporter_feed import MetricsFeed
from rgpu_tui.core.render.prometheus import METRICS

from ..helpers import SAMPLE_RUN

# what PromQL and Grafana's templating may name besides metrics
FUNCTIONS = {
    "sum", "count", "avg", "min", "max", "topk", "bottomk", "time", "vector", "scalar",
    "predict_linear", "rate", "increase", "delta", "deriv", "abs", "clamp_min", "clamp_max",
    "label_values", "last_over_time", "max_over_time", "min_over_time", "avg_over_time",
}  # fmt: skip
KEYWORDS = {"and", "or", "unless", "bool", "offset"}
GROUPING = ("on", "ignoring", "group_left", "group_right", "by", "without")
TARGET_LABELS = {"instance", "job", "host"}  # Prometheus' own, and the fleet targets' label


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """{metric name with samples: its labels}, from the real exporter feed over a full root."""
    tmp = tmp_path_factory.mktemp("served")
    root = tmp / "runs"
    shutil.copytree(SAMPLE_RUN, root / "done")
    (root / "done" / "weights" / "best.pt").write_bytes(b"weights")
    live = root / "live"
    live.mkdir()
    late = root / "late"  # its last epoch later than its mean said: no ETA, overdue
    late.mkdir()
    sleeper = psutil.Popen(["sleep", "60"], cwd=live)  # a trainer works in its run
    late_sleeper = psutil.Popen(["sleep", "60"], cwd=late)
    try:
        created = sleeper.create_time()
        (live / "status.json").write_text(
            json.dumps(
                {
                    "state": "running",
                    "pid": sleeper.pid,
                    "started_at": iso(created),
                    "updated_at": iso(created),
                    "completed_epochs": 2,
                    "current_epoch": 3,
                    "total_epochs": 10,
                    "mean_epoch_seconds": 30.0,
                    "best_metric": 0.2,
                    "best_metric_name": "metrics/mAP50-95",
                }
            )
        )
        (late / "status.json").write_text(
            json.dumps(
                {
                    "state": "running",
                    "pid": late_sleeper.pid,
                    "started_at": iso(late_sleeper.create_time()),
                    "completed_epochs": 9,
                    "total_epochs": 10,
                    "mean_epoch_seconds": 30.0,
                }
            )
        )
        os.utime(late / "status.json", (created - 100, created - 100))
        settings = Settings(price_per_hour=2.5, billing_started_at=created - 3600)
        collector = Collector(str(root), fake_gpus=2, settings=settings, log_keep=1)
        feed = MetricsFeed(collector).start()
        try:
            assert feed.wait_first(30)
            fams = feed.latest()
        finally:
            feed.close()
            collector.close()
    finally:
        for proc in (sleeper, late_sleeper):
            proc.kill()
            proc.wait()
    return {f.metric.name: set(f.metric.labels) for f in fams if f.samples}


def test_every_metric_of_the_contract_is_served(served) -> None:
    assert set(served) == {m.name for m in METRICS}


def strip_strings(expr: str) -> tuple[str, list[str]]:
    strings: list[str] = []
    out = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: strings.append(m.group()) or '""', expr)
    return out, strings


def names_and_labels(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) a PromQL expression uses (a small tokenizer: strings,
    matchers, grouping clauses and ranges out; every identifier left is a function, a
    keyword or a metric)."""
    expr, _ = strip_strings(expr)
    labels: set[str] = set()
    for block in re.findall(r"\{([^}]*)\}", expr):
        labels |= set(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", block))
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    pattern = r"\b(" + "|".join(GROUPING) + r")\s*\(([^)]*)\)"
    for _word, inside in re.findall(pattern, expr):
        labels |= {x.strip() for x in inside.split(",") if x.strip()}
    expr = re.sub(pattern, " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    idents = set(re.findall(r"(?<![\w.])([A-Za-z_:][\w:]*)", expr))
    names = idents - FUNCTIONS - KEYWORDS - set(GROUPING)
    return names, labels


def dashboard_queries() -> list[tuple[str, str]]:
    """(expr, legendFormat) of every panel target, and the templating queries."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            out.append((target["expr"], target.get("legendFormat", "")))
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            out.append((query, ""))
    return out


def check(expr: str, legend: str, served: dict[str, set[str]]) -> None:
    names, labels = names_and_labels(expr)
    m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", expr.strip())
    if m:
        names, labels = {m.group(1)}, {m.group(2)}
    assert names, f"no metric in {expr!r}"
    unknown = names - set(served)
    assert not unknown, f"{expr!r} uses {sorted(unknown)}, which the exporter does not serve"
    known_labels = set().union(*(served[n] for n in names)) | TARGET_LABELS
    legend_labels = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
    missing = (labels | legend_labels) - known_labels - {"__name__"}
    assert not missing, f"{expr!r} / {legend!r} uses labels {sorted(missing)} it never has"


def test_the_dashboards_queries_use_only_served_metrics_and_their_labels(served) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 15
    used = set()
    for expr, legend in queries:
        check(expr, legend, served)
        used |= names_and_labels(expr)[0]
    # the dashboard's panels: runs (state, epoch, ETA, best), best metric over time,
    # GPU utilisation by run, money spent and idle money
    for name in (
        "rgpu_run_info",
        "rgpu_run_completed_epochs",
        "rgpu_run_eta_seconds",
        "rgpu_run_best_metric",
        "rgpu_gpu_run",
        "rgpu_gpu_utilization_ratio",
        "rgpu_machine_spent_dollars",
        "rgpu_machine_idle_dollars",
    ):
        assert name in used, name


def test_the_rules_use_only_served_metrics_and_their_labels(served) -> None:
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            check(rule["expr"], "", served)
            for text in rule.get("annotations", {}).values():
                for label in re.findall(r"\$labels\.(\w+)", text):
                    names, _ = names_and_labels(rule["expr"])
                    assert label in set().union(*(served[n] for n in names)) | TARGET_LABELS


@pytest.mark.parametrize(
    "expr",
    [
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"}',
        "rgpu_gpu_utilisation_ratio",
        "sum by (runs) (rgpu_run_info)",
        'rgpu_run_dead{name="x"}',
    ],
)
def test_the_check_catches_a_name_or_label_not_served(expr: str, served) -> None:
    with pytest.raises(AssertionError):
        check(expr, "", served)


def test_the_docs_table_is_the_contract() -> None:
    rows = re.findall(r"^\| `(rgpu_\w+)` \|([^|]*)\|", doc("exporter.md"), flags=re.M)
    assert [name for name, _ in rows] == [m.name for m in METRICS]
    for (name, labels), m in zip(rows, METRICS, strict=True):
        assert re.findall(r"`(\w+)`", labels) == list(m.labels), name
