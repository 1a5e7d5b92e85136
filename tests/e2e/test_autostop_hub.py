"""Autostop's Hub side, in process, against the local Hub server: the check of pushed files
(confirmed, another file at the path, a repo or path that is gone, a Hub that cannot be
reached), and auto_push pushing the unpushed weights first (and holding when that fails)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes
from support.hub_server import HubServer
from support.run_dir import free_port
from support.waiting import wait_until

from rgpu_tui.core.away.autostop import Autostop
from rgpu_tui.core.away.events import EventEngine
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.hub_confirm import lookup_on_hub
from rgpu_tui.core.hub.push import PushRequest, push
from rgpu_tui.core.hub.weights_safety import WeightsChecker
from rgpu_tui.core.model.snapshot import CostView, RunInfo, Snapshot
from rgpu_tui.core.records.autostop_files import AutostopFiles

HF = "hf" + "_"  # assembled so that no token-shaped literal sits in the tree
TOKEN = HF + "AutostopHubCheckTokenForTheLocalHub9"
REPO = "alice/ckpts"
RECORD = (
    "import json, sys\n"
    "with open(sys.argv[1], 'a') as f:\n"
    "    f.write(json.dumps(sys.argv[2:]) + '\\n')\n"
)


def make_run(root: Path, name: str = "exp1", seed: int = 1) -> Path:
    run = root / name
    (run / "weights").mkdir(parents=True)
    path = run / "weights" / "best.pt"
    path.write_bytes(checkpoint_bytes(50_000, seed))
    os.utime(path, (1_700_000_000, 1_700_000_000))  # settled
    return run


def info(run: Path) -> RunInfo:
    return RunInfo(
        run_dir=str(run),
        name=run.name,
        state="completed",
        status_state="completed",
        current_epoch=1,
        total_epochs=1,
        progress=1.0,
        activity=1_700_000_000.0,
    )


@pytest.fixture
def hub(tmp_path: Path, monkeypatch):
    """The local Hub, as HF_ENDPOINT (the Hub this process pushes to and asks)."""
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(TOKEN, "alice")
    server.start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    try:
        yield server
    finally:
        server.stop()


def do_push(hub: HubServer, run: Path) -> None:
    result = push(
        PushRequest(str(run), "best.pt"), Settings(hub_repo=REPO), endpoint=hub.url,
        token=TOKEN, settle_s=0, timeout=10, retry_waits=(0.05,),
    )  # fmt: skip
    assert result.ok, result.error


def verdict(run: Path):
    checker = WeightsChecker()
    try:
        checker.check([info(run)], 1_800_000_000.0)
        assert checker.wait_idle(30)
        [w] = checker.check([info(run)], 1_800_000_000.0)
        return w
    finally:
        checker.close()


def rewrite_record(run: Path, **changes) -> None:
    path = run / ".rgpu" / "pushes.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    recs[-1].update(changes)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


# -- the check ----------------------------------------------------------------------------


def test_a_pushed_file_is_confirmed_by_the_hub(hub, tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs")
    do_push(hub, run)
    w = verdict(run)
    assert w.verdict == "safe"
    check = lookup_on_hub([w], token=TOKEN)
    assert [f.status for f in check.files] == ["confirmed"] and check.unreachable is None


def test_another_file_at_the_path_is_not_safe(hub, tmp_path: Path) -> None:
    run = make_run(tmp_path / "a")
    do_push(hub, run)
    do_push(hub, make_run(tmp_path / "b", seed=2))  # another exp1 overwrote exp1/best.pt
    w = verdict(run)
    assert w.verdict == "safe"  # by its records
    [f] = lookup_on_hub([w], token=TOKEN).files
    assert (
        f.status == "different" and f.detail == f"{REPO}: exp1/best.pt at its head is another file"
    )


def test_a_repo_or_path_that_is_gone_is_not_safe(hub, tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs")
    do_push(hub, run)
    rewrite_record(run, path="exp1/elsewhere.pt")
    [f] = lookup_on_hub([verdict(run)], token=TOKEN).files
    assert (f.status, f.detail) == ("missing", f"{REPO} has no exp1/elsewhere.pt at its head")
    rewrite_record(run, repo="alice/deleted")
    [f] = lookup_on_hub([verdict(run)], token=TOKEN).files
    assert f.status == "missing" and "alice/deleted is not on the Hub" in f.detail


def test_an_unreachable_hub_is_said_and_every_file_unchecked(
    hub, tmp_path: Path, monkeypatch
) -> None:
    run = make_run(tmp_path / "runs")
    do_push(hub, run)
    gone = f"http://127.0.0.1:{free_port()}"  # the Hub moved away: nothing listens there
    rewrite_record(run, endpoint=gone)
    monkeypatch.setenv("HF_ENDPOINT", gone)
    check = lookup_on_hub([verdict(run)], token=TOKEN)
    assert [f.status for f in check.files] == ["unchecked"] and check.bad == ()
    assert check.unreachable.startswith("cannot reach the Hub at http://127.0.0.1:")
    assert TOKEN not in check.unreachable


def test_a_record_naming_another_endpoint_is_not_believed_nor_asked(hub, tmp_path) -> None:
    run = make_run(tmp_path / "runs")
    do_push(hub, run)
    other = HubServer(str(tmp_path / "other-storage")).start()
    try:
        rewrite_record(run, endpoint=other.url)  # a planted record: the token must not go there
        [f] = lookup_on_hub([verdict(run)], token=TOKEN).files
        assert f.status == "missing"
        assert (
            f.detail
            == f"pushed to {other.url}, not to {hub.url} (HF_ENDPOINT), which this watcher asks"
        )
        assert other.requests == [] and other.auth_headers == []
    finally:
        other.stop()


def test_a_token_the_hub_refuses_is_not_unreachable(hub, tmp_path) -> None:
    run = make_run(tmp_path / "runs")
    do_push(hub, run)
    check = lookup_on_hub([verdict(run)], token=HF + "UnknownTokenTheLocalHubRejects012345")
    assert check.unreachable is None
    [f] = check.files
    assert f.status == "missing"
    assert (
        f.detail
        == "cannot check alice/ckpts: token rejected (401): check HF_TOKEN or run `hf auth login`"
    )


# -- auto_push ------------------------------------------------------------------------------


class Watcher:
    """An Autostop over one run, as `watch` drives it, with auto_push on."""

    def __init__(self, tmp_path: Path, run: Path) -> None:
        self.out = tmp_path / "ran.jsonl"
        self.settings = Settings(
            hub_repo=REPO,
            auto_push="best",
            autostop_command=(sys.executable, "-c", RECORD, str(self.out), "stop"),
            autostop_idle_minutes=1.0,
        )
        self.events: list = []
        self.run = run
        self.checker = WeightsChecker()
        self.autostop = Autostop(
            self.settings, str(run.parent), self.events.append,
            engine=EventEngine(self.settings, pushes=False), checker=self.checker,
            files=AutostopFiles.for_root(str(run.parent), {"XDG_STATE_HOME": str(tmp_path)}),
            machine_started_at=0.0,
        )  # fmt: skip

    def look(self, t: float) -> str:
        snap = Snapshot(
            generated_at=t, root=str(self.run.parent), root_exists=True,
            runs=(info(self.run),), selected=None,
            cost=CostView(configured=False, idle_now_seconds=t - 1_800_000_000.0),
        )  # fmt: skip
        self.autostop.step(snap)
        return self.autostop.phase

    def until(self, t: float, *done: str) -> str:
        """Looks at t until the phase is one of `done` (pushes, hashes, the Hub, the command
        are waited for by their own means between looks)."""
        for _ in range(200):
            phase = self.look(t)
            if phase in done:
                return phase
            self.checker.wait_idle(30)
            self.autostop.wait_command(30)
            wait_until(lambda: not self.autostop.pushing(), "the pushes", timeout=60)
        raise AssertionError(f"still {phase}")


@pytest.fixture
def hub_env(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return hub


def test_auto_push_pushes_the_unpushed_weights_then_autostop_runs(hub_env, tmp_path) -> None:
    run = make_run(tmp_path / "runs")
    w = Watcher(tmp_path, run)
    try:
        assert w.until(1_800_000_060.0, "ran") == "ran"
    finally:
        w.autostop.close()
    assert [c.message for c in hub_env.commits(REPO)][-1].startswith("exp1: best.pt")
    assert json.loads(w.out.read_text()) == ["stop"]
    assert [e.event for e in w.events] == ["autostop"]
    assert "checked on the Hub" in w.events[0].message


def test_a_failed_auto_push_holds_with_its_error(hub_env, tmp_path) -> None:
    hub_env.fail_commits(500, times=20)
    run = make_run(tmp_path / "runs")
    w = Watcher(tmp_path, run)
    try:
        assert w.until(1_800_000_060.0, "held") == "held"
        assert w.until(1_800_000_070.0, "held") == "held"  # pushed once per stretch
    finally:
        w.autostop.close()
    [held] = [e for e in w.events if e.event == "autostop_held"]
    assert "exp1: best.pt was never pushed" in held.message
    assert "the last push failed: the Hub failed with 500" in held.message
    assert not w.out.exists()
    pushes = [json.loads(x) for x in (run / ".rgpu" / "pushes.jsonl").read_text().splitlines()]
    assert [p["outcome"] for p in pushes] == ["error"]
