"""core.fleet.agent and `rgpu-tui agent`: the hello, the full snapshot then deltas that rebuild
each snapshot exactly, quiet refreshes that send nothing, every command answered, and the
process ending with status 0 when its stdin closes (or on SIGTERM), runs untouched."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.waiting import wait_until

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.fleet.agent import MAX_COMMAND_BYTES, Agent, LineWriter
from rgpu_tui.core.fleet.delta import apply
from rgpu_tui.core.hub.push import PushResult
from rgpu_tui.core.hub.push_queue import PushQueue
from rgpu_tui.core.model.snapshot import SCHEMA_VERSION, Snapshot
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector

FIXTURE_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Out(io.BytesIO):
    """The agent's stdout: the lines it wrote, parsed."""

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.getvalue().splitlines()]


class Recording:
    """A Collector that keeps each snapshot it made (to compare with what crossed)."""

    def __init__(self, collector) -> None:
        self.collector = collector
        self.made: list[Snapshot] = []

    def refresh(self, now, selected=None):
        snap = self.collector.refresh(now, selected)
        self.made.append(snap)
        return snap


class Still:
    """A host where nothing happens: the same snapshot, only its clock moves."""

    def __init__(self, runs=()) -> None:
        self.runs = runs
        self.ticks = 0

    def refresh(self, now, selected=None):
        self.ticks += 1
        return Snapshot(1.7e9 + self.ticks, "/r", True, self.runs, None)


def make_agent(collector, **kw) -> tuple[Agent, Out, Clock]:
    out, clock = Out(), Clock()
    agent = Agent(
        collector, kw.pop("settings", Settings()), LineWriter(out), root="/r", clock=clock, **kw
    )
    return agent, out, clock


def live_status(run_dir: Path, pid: int, **fields) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    created = psutil.Process(pid).create_time()
    doc = {
        "state": "running",
        "pid": pid,
        "started_at": datetime.fromtimestamp(int(created), tz=timezone.utc).isoformat(),
        "total_epochs": 10,
        "completed_epochs": 1,
        **fields,
    }
    (run_dir / "status.json.tmp").write_text(json.dumps(doc))
    os.replace(run_dir / "status.json.tmp", run_dir / "status.json")


@pytest.fixture
def sleeper(tmp_path: Path):
    """The live run's trainer: a python working in runs/live (core.run.run_process)."""
    (tmp_path / "runs" / "live").mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], cwd=tmp_path / "runs" / "live"
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_full_snapshot_then_deltas_rebuild_every_snapshot(tmp_path: Path, sleeper) -> None:
    root = tmp_path / "runs"
    run = root / "live"
    live_status(run, sleeper.pid)
    collector = Recording(Collector(str(root), fake_gpus=2, log_keep=50))
    agent, out, clock = make_agent(collector)
    try:
        local = None
        for step in range(12):
            with open(run / "train.log", "a") as log:
                log.write(f"2026-12-02 15:19:{step:02d} | INFO | iteration {step}\n")
            if step % 3 == 0:
                with open(run / "metrics.jsonl", "a") as metrics:
                    metrics.write(json.dumps({"epoch": step + 1, "train/loss": 5.0 / (step + 1)}))
                    metrics.write("\n")
            if step == 8:
                live_status(run, sleeper.pid, completed_epochs=9)
            if step == 1:  # the run's metrics and log come once it is selected
                agent.feed(json.dumps({"cmd": "select", "run": str(run)}).encode() + b"\n")
            before = len(out.lines())
            agent.tick()
            clock.t += 1.0
            new = [x for x in out.lines()[before:] if "seq" in x and "result" not in x]
            assert len(new) <= 1
            for line in new:
                if "snapshot" in line:
                    assert step == 0 and line["seq"] == 0
                    local = line["snapshot"]
                    assert local["selected"] is None and local["pushes"] is None
                else:
                    assert line["seq"] == agent.seq and step > 0
                    local = apply(local, line["delta"])
            made = snapshot_to_json(collector.made[-1])
            if step == 0:
                made = {**made, "selected": None, "pushes": None}
            if new:
                assert local == made  # exactly what `snapshot --json` would print
            else:  # nothing changed but the clock
                assert {**local, "generated_at": None} == {**made, "generated_at": None}
        assert local["runs"][0]["current_epoch"] == 10
        assert local["selected"]["log_tail"][-1].endswith("iteration 11")
    finally:
        collector.collector.close()


def test_a_quiet_host_sends_nothing_but_a_heartbeat() -> None:
    agent, out, clock = make_agent(Still(), heartbeat=10.0)
    agent.tick()
    assert [line["seq"] for line in out.lines()] == [0]
    for _ in range(9):
        clock.t += 1.0
        agent.tick()
    assert len(out.lines()) == 1  # nine refreshes, nothing changed: nothing sent
    clock.t += 1.0
    agent.tick()
    beat = out.lines()[-1]
    assert beat["seq"] == 1
    assert [op[:2] for op in beat["delta"]] == [["=", ["generated_at"]]]
    assert len(json.dumps(beat)) < 80


def test_a_refresh_that_fails_is_said_once_and_the_loop_goes_on() -> None:
    class Broken:
        fail = True

        def refresh(self, now, selected=None):
            if self.fail:
                raise OSError("disk on fire")
            return Snapshot(1.7e9, "/r", True, (), None)

    collector = Broken()
    agent, out, _clock = make_agent(collector)
    agent.tick()
    agent.tick()
    assert out.lines() == [{"notice": "refresh failed: OSError: disk on fire"}]
    collector.fail = False
    agent.tick()
    assert out.lines()[-1]["seq"] == 0


def run_commands(agent: Agent, out: Out, *lines: bytes) -> list[dict]:
    before = len(out.lines())
    agent.feed(b"".join(lines))
    if agent._wanted:
        agent.tick()
    return [line for line in out.lines()[before:] if "result" in line]


def test_each_command_is_answered(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        for f in ("status.json", "metrics.jsonl"):
            (root / name / f).write_bytes((FIXTURE_RUN / f).read_bytes())
    collector = Collector(str(root), fake_gpus=0)
    agent, out, _clock = make_agent(collector)
    try:
        agent.tick()
        assert out.lines()[-1]["snapshot"]["selected"] is None
        other = str(root / "b")
        answers = run_commands(
            agent,
            out,
            b'{"cmd": "refresh", "id": 1}\n',
            json.dumps({"cmd": "select", "run": other, "id": "sel"}).encode() + b"\n",
        )
        assert answers == [
            {"result": 1, "ok": True, "error": None, "seq": agent.seq},
            {"result": "sel", "ok": True, "error": None, "seq": agent.seq},
        ]
        assert agent.selected == other
        full, delta = out.lines()[:2]
        assert apply(full["snapshot"], delta["delta"])["selected"]["run_dir"] == other
        answers = run_commands(
            agent,
            out,
            b'{"cmd": "launch", "id": 2}\n',
            b"not json\n",
            b"[1, 2]\n",
            b'{"cmd": "refresh", "id": [1]}\n',
            b'{"cmd": "stop", "run": "/etc", "id": 3}\n',
            b'{"cmd": "push", "run": 5, "id": 4}\n',
            b'{"cmd": "select", "run": "/nope", "id": 5}\n',
            b"x" * (MAX_COMMAND_BYTES + 10),
            b'still the long line\n{"cmd": "refresh", "id": 6}\n',
        )
        assert [(a["result"], a["ok"], a["error"]) for a in answers] == [
            (
                2,
                False,
                'unknown command "launch" (one of refresh, select, chart, push, stop, resume)',
            ),
            (None, False, "a command must be one JSON object per line"),
            (None, False, "a command must be one JSON object per line"),
            (None, False, '"id" must be a string or a number'),
            (3, False, "no run /etc under /r"),
            (4, False, '"run" must be a non-empty string'),
            (5, False, "no run /nope under /r"),
            (None, False, f"command over {MAX_COMMAND_BYTES} bytes"),
            (6, True, None),
        ]
        assert agent.selected == other  # a refused select changed nothing
    finally:
        collector.close()


def test_resume_check_and_start_answer_with_core_resumes_refusal(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "done").mkdir(parents=True)
    (root / "done" / "status.json").write_bytes((FIXTURE_RUN / "status.json").read_bytes())
    collector = Collector(str(root), fake_gpus=0)
    agent, out, _clock = make_agent(collector)
    try:
        agent.tick()
        run = str(root / "done")
        agent.feed(json.dumps({"cmd": "resume", "run": run, "check": True, "id": 1}).encode())
        agent.feed(b"\n" + json.dumps({"cmd": "resume", "run": run, "id": 2}).encode() + b"\n")
        agent.finish(wait=30)
        answers = {a["result"]: a for a in out.lines() if "result" in a}
        refused = "done completed: nothing to resume"
        assert answers[1] == {"result": 1, "ok": False, "error": refused}
        assert answers[2] == {"result": 2, "ok": False, "error": refused}
    finally:
        collector.close()


def test_pushes_answer_each_command_even_when_a_queued_one_is_replaced(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "exp").mkdir(parents=True)
    (root / "exp" / "status.json").write_bytes((FIXTURE_RUN / "status.json").read_bytes())
    release = threading.Event()
    pushed = []

    def fake_push(req, settings, *, progress, on_phase, **kwargs):
        on_phase("uploading")
        progress(5, 10)
        release.wait(30)
        pushed.append(req.file)
        return PushResult(
            ok=True, skipped_unchanged=False, repo="a/b", path=f"exp/{req.file}",
            commit_url="http://hub/commit/1", sha256=None, size=10, epoch=None,
            metric_name=None, metric=None, error=None, file=req.file,
        )  # fmt: skip

    collector = Collector(str(root), fake_gpus=0)
    out = Out()
    writer = LineWriter(out)
    agent = Agent(collector, Settings(), writer, root="/r")
    agent._push_queue = PushQueue(Settings(), agent._push_event, push_fn=fake_push)
    try:
        agent.tick()
        run = str(root / "exp")
        for ident, file in ((1, "best"), (2, "last"), (3, "last")):
            agent.feed(json.dumps({"cmd": "push", "run": run, "file": file, "id": ident}).encode())
            agent.feed(b"\n")
        release.set()

        def answered() -> dict:
            got = {a["result"]: a for a in out.lines() if "result" in a}
            return got if len(got) == 3 else {}

        answers = wait_until(answered, "three answers", timeout=30)
        agent.finish(wait=30)
        assert sorted(answers) == [1, 2, 3]
        assert pushed == ["best.pt", "last.pt"]  # 3 replaced 2 while it was queued
        assert answers[2]["push"]["path"] == answers[3]["push"]["path"] == "exp/last.pt"
        assert all(a["ok"] for a in answers.values())
        progress = [line for line in out.lines() if "progress" in line]
        assert {"progress": 1, "cmd": "push", "phase": "uploading", "done": 0, "total": 0} in (
            progress
        )
    finally:
        collector.close()


# -- the process ----------------------------------------------------------------------


def start_agent(tmp_path: Path, root: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(RGPU_TUI), "agent", str(root), "--fake-gpus", "1", "--interval", "0.2"],
        env=clean_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_the_process_ends_with_0_when_stdin_closes_and_leaves_runs_alone(
    tmp_path: Path, sleeper
) -> None:
    root = tmp_path / "runs"
    live_status(root / "live", sleeper.pid)
    proc = start_agent(tmp_path, root)
    try:
        hello = json.loads(proc.stdout.readline())
        assert hello["agent"] == "rgpu-tui" and hello["schema_version"] == SCHEMA_VERSION
        assert hello["root"] == str(root) and hello["interval"] == 0.2
        first = json.loads(proc.stdout.readline())
        assert first["seq"] == 0 and first["snapshot"]["runs"][0]["state"] == "running"
        proc.stdin.write(b'{"cmd": "refresh", "id": "r"}\n')
        proc.stdin.flush()
        while "result" not in (line := json.loads(proc.stdout.readline())):
            assert "delta" in line
        assert line == {"result": "r", "ok": True, "error": None, "seq": line["seq"]}
        proc.stdin.close()
        assert proc.wait(30) == 0
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sleeper.poll() is None


def test_sigterm_ends_the_process_with_0(tmp_path: Path) -> None:
    proc = start_agent(tmp_path, tmp_path / "runs")
    try:
        assert json.loads(proc.stdout.readline())["agent"] == "rgpu-tui"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()


def test_the_chart_command_adds_the_charts_and_none_takes_them_away(tmp_path: Path) -> None:
    """The charts cross only while asked for: a bounded request, sent whole once, then
    deltas; `runs: []` removes them so the link costs what it did."""
    root = tmp_path / "runs"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        for f in ("status.json", "metrics.jsonl"):
            (root / name / f).write_bytes((FIXTURE_RUN / f).read_bytes())
    collector = Collector(str(root), fake_gpus=0)
    agent, out, _clock = make_agent(collector)
    try:
        agent.tick()
        doc = out.lines()[-1]["snapshot"]
        assert doc["charts"] == []
        runs = [str(root / "a"), str(root / "b")]
        cmd = {"cmd": "chart", "runs": runs, "metrics": ["speed/total_ms"], "id": "c"}
        answers = run_commands(agent, out, json.dumps(cmd).encode() + b"\n")
        assert answers == [{"result": "c", "ok": True, "error": None, "seq": agent.seq}]
        doc = apply(doc, out.lines()[-2]["delta"])
        assert [c["run_dir"] for c in doc["charts"]] == runs
        names = [s["name"] for s in doc["charts"][0]["series"]]
        assert names[0] == "speed/total_ms" and "metrics/mAP50-95" in names
        assert doc["charts"][0]["epochs"] == [1, 2, 3]
        bad = run_commands(
            agent,
            out,
            b'{"cmd": "chart", "runs": "/etc", "id": 7}\n',
            b'{"cmd": "chart", "runs": [], "metrics": [1], "id": 8}\n',
        )
        assert [(a["result"], a["ok"]) for a in bad] == [(7, False), (8, False)]
        run_commands(agent, out, b'{"cmd": "chart", "runs": [], "id": 9}\n')
        assert apply(doc, out.lines()[-2]["delta"])["charts"] == []
    finally:
        collector.close()
