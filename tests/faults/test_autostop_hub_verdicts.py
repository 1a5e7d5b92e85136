"""Autostop driven through each of the Hub's verdicts: the
real `Autostop` and `WeightsChecker`, the real huggingface_hub client, the local Hub server
(tests/support/hub_server.py). The weights were pushed for real; then the Hub loses them,
holds another file, refuses the token, or cannot be asked (connection refused, 503, 429,
HF_HUB_OFFLINE). Only "confirmed" lets the command run, or `autostop_trust_records` when
the Hub cannot be asked. The command is a real process that records its argv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from e2e.test_autostop_hub import REPO, TOKEN, do_push, make_run, rewrite_record
from support.hub_server import HubServer
from support.run_dir import free_port

from rgpu_tui.core.away.autostop import Autostop
from rgpu_tui.core.away.events import EventEngine
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.weights_safety import WeightsChecker
from rgpu_tui.core.model.snapshot import CostView, RunInfo, Snapshot
from rgpu_tui.core.records.autostop_files import AutostopFiles

IDLE_SINCE = 1_800_000_000.0
DUE = IDLE_SINCE + 60
RECORD = "import json, sys\nopen(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')\n"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch):
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(TOKEN, "alice")
    server.start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        yield server
    finally:
        server.stop()


class Watcher:
    """An Autostop over tmp_path/runs as `watch` drives it; `until(t)` looks at t until the
    Hub was asked and the command (if any) ended."""

    def __init__(self, tmp_path: Path, **settings) -> None:
        self.root = tmp_path / "runs"
        self.out = tmp_path / "ran.jsonl"
        self.settings = Settings(
            autostop_command=(sys.executable, "-c", RECORD, str(self.out), "stop"),
            autostop_idle_minutes=1.0,
            **settings,
        )
        self.events: list = []
        self.checker = WeightsChecker()
        self.autostop = Autostop(
            self.settings, str(self.root), self.events.append,
            engine=EventEngine(self.settings, pushes=False), checker=self.checker,
            files=AutostopFiles.for_root(str(self.root), {"XDG_STATE_HOME": str(tmp_path)}),
            machine_started_at=0.0,
        )  # fmt: skip

    def until(self, t: float) -> str:
        runs = tuple(
            RunInfo(run_dir=str(p), name=p.name, state="completed")
            for p in sorted(self.root.iterdir())
        )
        for _ in range(50):
            snap = Snapshot(
                generated_at=t, root=str(self.root), root_exists=True, runs=runs, selected=None,
                cost=CostView(configured=False, idle_now_seconds=t - IDLE_SINCE),
            )  # fmt: skip
            self.autostop.step(snap)
            if self.autostop.phase not in ("checking", "running", "notifying"):
                return self.autostop.phase
            assert self.checker.wait_idle(60)
            assert self.autostop.wait_command(30)
        raise AssertionError(f"still {self.autostop.phase}")

    def ran(self) -> list:
        return (
            [json.loads(x) for x in self.out.read_text().splitlines()] if self.out.exists() else []
        )

    def held(self) -> str:
        [event] = [e for e in self.events if e.event == "autostop_held"]
        return event.message

    def close(self) -> None:
        self.autostop.close()


@pytest.fixture
def watcher(tmp_path: Path):
    made: list[Watcher] = []

    def make(**settings) -> Watcher:
        w = Watcher(tmp_path, **settings)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def pushed(hub: HubServer, tmp_path: Path) -> Path:
    run = make_run(tmp_path / "runs")
    do_push(hub, run)
    return run


def test_confirmed_on_the_hub_runs(hub, tmp_path, watcher) -> None:
    pushed(hub, tmp_path)
    w = watcher()
    assert w.until(DUE) == "ran" and w.ran() == [["stop"]]
    [fired] = [e for e in w.events if e.event == "autostop"]
    assert "all weights on the Hub (exp1 best.pt), checked on the Hub" in fired.message


def test_missing_the_repo_deleted_holds(hub, tmp_path, watcher) -> None:
    pushed(hub, tmp_path)
    with hub.lock:
        del hub.repos[REPO]
    w = watcher()
    assert w.until(DUE) == "held" and w.ran() == []
    assert "the Hub disagrees: exp1 best.pt: alice/ckpts is not on the Hub" in w.held()


def test_missing_the_path_gone_holds(hub, tmp_path, watcher) -> None:
    run = pushed(hub, tmp_path)
    rewrite_record(run, path="exp1/elsewhere.pt")
    w = watcher()
    assert w.until(DUE) == "held" and w.ran() == []
    assert f"exp1 best.pt: {REPO} has no exp1/elsewhere.pt at its head" in w.held()
    assert f"`rgpu-tui push {run} --force`" in w.held()


def test_missing_a_record_naming_another_hub_holds(hub, tmp_path, watcher) -> None:
    run = pushed(hub, tmp_path)
    rewrite_record(run, endpoint="http://planted.invalid")
    w = watcher()
    assert w.until(DUE) == "held" and w.ran() == []
    assert "pushed to http://planted.invalid, not to" in w.held()


def test_different_another_file_at_the_path_holds(hub, tmp_path, watcher) -> None:
    pushed(hub, tmp_path)
    do_push(hub, make_run(tmp_path / "other", seed=2))  # another exp1 replaced exp1/best.pt
    w = watcher()
    assert w.until(DUE) == "held" and w.ran() == []
    assert f"exp1 best.pt: {REPO}: exp1/best.pt at its head is another file" in w.held()


def test_refused_a_token_the_hub_rejects_holds(hub, tmp_path, watcher, monkeypatch) -> None:
    pushed(hub, tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_" + "UnknownTokenTheLocalHubRejects012345")
    w = watcher()
    assert w.until(DUE) == "held" and w.ran() == []
    assert "token rejected (401)" in w.held()


@pytest.mark.parametrize("how", ["refused", "503", "429", "HF_HUB_OFFLINE"])
def test_unreachable_holds_unless_the_records_are_trusted(
    hub, tmp_path, watcher, monkeypatch, how: str
) -> None:
    """Today pushes.jsonl alone was trusted when the Hub could not be asked: a stale or
    forged record was enough to stop the machine."""
    run = pushed(hub, tmp_path)
    if how == "refused":  # the Hub moved away; the record names the endpoint asked
        endpoint = f"http://127.0.0.1:{free_port()}"
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        rewrite_record(run, endpoint=endpoint)
    elif how == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        hub.fail_reads(int(how), times=100)
    w = watcher()
    assert w.until(DUE) == "held" and w.ran() == []
    said = w.held()
    assert said.startswith("autostop held: cannot confirm on the Hub: "), said
    assert "autostop_trust_records = true" in said
    w.close()
    (tmp_path / "ran.jsonl").unlink(missing_ok=True)
    trusting = watcher(autostop_trust_records=True)
    assert trusting.until(DUE + 10) == "ran" and trusting.ran() == [["stop"]]
    [fired] = [e for e in trusting.events if e.event == "autostop"]
    assert "pushes.jsonl trusted (autostop_trust_records)" in fired.message
