"""One number everywhere: a set of runs, and every view of each gives
the same time, money, state and epochs: the app's header, cost strip and cost view (under
Pilot), `rgpu-tui snapshot --json`, `compare --json`, `chart --json`, the exporter's
/metrics and a fleet host's view (the snapshot `rgpu-tui agent` sends), each a real
subprocess as a user runs it.

The runs: one never killed (completed); one killed and resumed twice (three attempts, by
their launch records); one stopped by the user (a live trainer writing its files with
libreyolo's own status writer, stopped through core.launch.stop: STOPPED, its epochs
kept); a running original (a live trainer) and its pulled copy beside it (the copy names
the original's pid: not running)."""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.request
from pathlib import Path

import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.exporter_proc import Exporter
from support.resumed_run import killed_and_resumed_twice
from support.status_trainer import start as start_trainer

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.formatting import fmt_money
from rgpu_tui.core.launch.stop import stop_run
from rgpu_tui.tui.app import RgpuApp

from .helpers import rendered, wait_for

PRICE = 36.0  # $ per hour: a cent a second
RUNNING_SLACK_S = 20.0  # a running run's time moves between one view and the next


def _never_killed(project: Path, t0: float) -> Path:
    """Completed in one attempt, as libreyolo leaves it: 10 epochs of 55 s, 600 s in all."""
    run = project / "never"
    run.mkdir(parents=True)
    rows = [{"epoch": e, "time": 55.0, "train/loss": 5.0 / e} for e in range(1, 11)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    status = {
        "state": "completed",
        "pid": 4242,
        "total_epochs": 10,
        "start_epoch": 1,
        "completed_epochs": 10,
        "current_epoch": 10,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0)),
        "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0 + 600)),
        "elapsed_seconds": 600.0,
        "total_seconds": 600.0,
    }
    (run / "status.json").write_text(json.dumps(status))
    return run


def _seconds(text: str) -> float:
    """fmt_duration's text back to seconds: 12s, 4m05s, 3h07m."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert m and text, text
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return h * 3600 + mi * 60 + s


def _dollars(text: str) -> float:
    return float(text.lstrip("$").replace(",", ""))


def _cli(env: dict, *argv: str) -> dict:
    import subprocess

    proc = subprocess.run(
        [str(RGPU_TUI), *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _agent_runs(root: Path, env: dict) -> dict[str, dict]:
    """A fleet host's view: the runs of the first snapshot `rgpu-tui agent` sends."""
    import subprocess

    proc = subprocess.Popen(
        [str(RGPU_TUI), "agent", str(root), "--interval", "0.5"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in proc.stdout:
            doc = json.loads(line)
            if "snapshot" in doc:
                return {r["run_dir"]: r for r in doc["snapshot"]["runs"]}
        raise AssertionError(f"the agent sent no snapshot: {proc.stderr.read()}")
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _scrape(root: Path, env: dict) -> dict[tuple[str, str], str | float]:
    """{(metric, run label): value} and {("state", run label): state} from /metrics."""
    exporter = Exporter(root, env)
    try:
        with urllib.request.urlopen(exporter.url + "/metrics", timeout=30) as answer:
            text = answer.read().decode()
    finally:
        exporter.stop()
    out: dict = {}
    for line in text.splitlines():
        m = re.match(r"(rgpu_run_\w+)\{([^}]*)\} (\S+)", line)
        if not m:
            continue
        name, labels, value = m.groups()
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if name == "rgpu_run_info":
            out[("state", labels["run"])] = labels["state"]
        else:
            out[(name, labels["run"])] = float(value)
    return out


async def test_every_view_gives_each_run_the_same_time_money_state_and_epochs(
    tmp_path: Path,
) -> None:
    project = tmp_path / "runs"
    t0 = float(int(time.time()) - 7200)
    never = _never_killed(project, t0)
    twice = killed_and_resumed_twice(project, t0 + 1000)  # dir "exp": three attempts
    trainers = []
    try:
        stopped = project / "stopped"
        trainers.append(start_trainer(stopped, 4, 10))
        time.sleep(1.5)  # it trains on: its time is more than its epochs'
        result = stop_run(str(stopped), Settings(), sleep=time.sleep, by="app")
        assert result.final_state == "stopped", result
        original = project / "orig"
        trainers.append(start_trainer(original, 3, 10))
        copy = project / "orig-copy"  # pulled beside it: the same status.json
        shutil.copytree(original, copy)
        runs = {
            "never": (never, "completed"),
            "exp": (twice, "completed"),
            "stopped": (stopped, "stopped"),
            "orig": (original, "running"),
            "orig-copy": (copy, "dead"),
        }
        await _compare_views(tmp_path, project, runs)
    finally:
        for proc in trainers:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


async def _compare_views(tmp_path: Path, project: Path, runs: dict) -> None:
    env = clean_env(tmp_path, RGPU_PRICE_PER_HOUR=str(PRICE))
    dirs = [str(d) for d, _state in runs.values()]
    snapshot = {}  # each run read as `rgpu-tui snapshot --json RUN` (its cost: the run's)
    for d in dirs:
        doc = _cli(env, "snapshot", d, "--json")
        (row,) = [r for r in doc["runs"] if r["run_dir"] == d]
        snapshot[d] = (row, doc["cost"]["run_spent"])
    compare = {r["run_dir"]: r for r in _cli(env, "compare", *dirs, "--json")["runs"]}
    chart = {r["run_dir"]: r for r in _cli(env, "chart", *dirs, "--json")["runs"]}
    scraped = _scrape(project, env)
    agent = _agent_runs(project, env)

    app = RgpuApp(root=str(project), interval=0.5, fake_gpus=1, settings=Settings(
        price_per_hour=PRICE))  # fmt: skip
    screen: dict[str, tuple[str, str, str]] = {}
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and len(app.snapshot.runs) == 5)
        for name, (d, _state) in runs.items():
            app.view.selected = str(d)
            app.request_refresh()
            await wait_for(
                pilot,
                lambda d=d, name=name: (
                    app.snapshot.selected.run_dir == str(d)
                    and f" {name} " in rendered(app.view.run_header) + " "
                ),
            )
            header, strip = rendered(app.view.run_header), rendered(app.view.cost_strip)
            await pilot.press("c")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "CostScreen")
            view = rendered(app.screen.query_one("#body"))
            await pilot.press("escape")
            await wait_for(pilot, lambda: type(app.screen).__name__ != "CostScreen")
            screen[str(d)] = (header, strip, view)

    for name, (d, state) in runs.items():
        d = str(d)
        snap, snap_money = snapshot[d]
        seconds = snap["elapsed_seconds"]
        slack = RUNNING_SLACK_S if state == "running" else 0.01
        money_slack = slack * PRICE / 3600 + 0.005
        assert seconds is not None and snap_money is not None, name
        assert snap["state"] == state, (name, snap["state"])
        assert snap_money == pytest.approx(seconds * PRICE / 3600, abs=0.001), name
        # compare --json
        c = compare[d]
        assert (c["state"], c["epoch"]) == (state, snap["current_epoch"]), name
        assert c["time_seconds"] == pytest.approx(seconds, abs=slack), name
        assert c["cost"] == pytest.approx(snap_money, abs=money_slack), name
        # chart --json
        ch = chart[d]
        assert (ch["state"], ch["epochs"][-1]) == (state, snap["completed_epochs"]), name
        assert ch["elapsed_seconds"] == pytest.approx(seconds, abs=slack), name
        assert ch["spent"] == pytest.approx(snap_money, abs=money_slack), name
        # the exporter
        assert scraped[("state", name)] == state, name
        assert scraped[("rgpu_run_completed_epochs", name)] == snap["completed_epochs"], name
        got = scraped[("rgpu_run_elapsed_seconds", name)]
        assert got == pytest.approx(seconds, abs=slack), name
        got = scraped[("rgpu_run_spent_dollars", name)]
        assert got == pytest.approx(snap_money, abs=money_slack), name
        # a fleet host's view
        a = agent[d]
        assert (a["state"], a["current_epoch"], a["completed_epochs"]) == (
            state, snap["current_epoch"], snap["completed_epochs"],
        ), name  # fmt: skip
        assert a["elapsed_seconds"] == pytest.approx(seconds, abs=slack), name
        # the app: header, cost strip, cost view
        header, strip, view = screen[d]
        badge = {"completed": "DONE", "stopped": "STOP", "running": "RUN", "dead": "DEAD"}
        assert header.lstrip().startswith(badge[state]), (name, header)
        assert f"epoch {snap['current_epoch']}/{snap['total_epochs']}" in header, header
        if state == "running":  # its 0.05 s epochs' estimate ran out long ago
            assert "ETA overdue " in header and "ETA 0s" not in header, header
            assert a["eta_seconds"] is None and a["eta_overdue_seconds"] > 0
        shown = _seconds(re.search(r"elapsed (\S+)", header).group(1))
        assert shown == pytest.approx(seconds, abs=max(slack, 0.5)), (name, header)
        money = _dollars(re.search(r"run (\$[\d.,]+)", strip).group(1))
        assert money == pytest.approx(snap_money, abs=money_slack + 0.01), (name, strip)
        line = re.search(rf"run {re.escape(name)}\s+(\$[\d.,]+) so far", view)
        assert line, (name, view)
        assert _dollars(line.group(1)) == pytest.approx(snap_money, abs=money_slack + 0.01)
        if state != "running":  # the same text everywhere, to the cent
            assert fmt_money(c["cost"]) == fmt_money(snap_money) == line.group(1), name
