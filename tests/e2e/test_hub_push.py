"""Pushing checkpoints with the real huggingface_hub client against a local Hub (no network).

The server (tests/support/hub_server.py) speaks the create_repo / preupload / LFS batch /
PUT / verify / commit API and keeps what it received, so these tests check byte
identity, the commit's content, retries, timeouts, errors, and that a checkpoint
rewritten in place while it is pushed never reaches the Hub torn.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes
from support.hub_server import HubServer
from support.run_dir import free_port
from support.secrets import tokens_nowhere

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.auto_push import AutoPushState, auto_push_requests
from rgpu_tui.core.hub.push import NO_TOKEN, PushRequest, PushResult, push
from rgpu_tui.core.hub.push_queue import PushEvent, PushQueue
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.push_records import last_push, pushes_path, read_pushes
from rgpu_tui.core.run.checkpoints import checkpoint_epoch_metric

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
ARTIFACTS = ("status.json", "metrics.jsonl", "results.csv", "summary.json", "train_config.yaml")
# fake tokens for the local Hub server, assembled so no token-shaped literal sits in the tree
HF = "hf" + "_"
WRITE_TOKEN = HF + "WriteTokenForTheLocalHub0123456789ab"
READ_TOKEN = HF + "ReadOnlyTokenForTheLocalHub012345678"
BAD_TOKEN = HF + "UnknownTokenTheLocalHubRejects012345"
TOKENS = (WRITE_TOKEN, READ_TOKEN, BAD_TOKEN)


# -- helpers -------------------------------------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def metrics_rows(epochs: int, best: dict[int, float]) -> str:
    """metrics.jsonl as libreyolo writes it; `best` maps an epoch that improved to its metric."""
    lines, best_epoch, best_metric = [], None, None
    for epoch in range(1, epochs + 1):
        is_best = epoch in best
        current = best.get(epoch, 0.01 * epoch / 100)
        if is_best:
            best_epoch, best_metric = epoch, current
        row = {
            "epoch": epoch,
            "is_best": is_best,
            "current_metric": current,
            "current_metric_name": "metrics/mAP50-95",
            "best_metric": best_metric,
            "best_metric_name": "metrics/mAP50-95",
            "best_epoch": best_epoch,
            "train/loss": 5.0 / epoch,
        }
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def make_run(root: Path, name: str = "exp1", size: int = 200_000, seed: int = 1) -> Path:
    run = root / name
    (run / "weights").mkdir(parents=True)
    for artifact in ARTIFACTS:
        if artifact != "metrics.jsonl":
            shutil.copy(FIXTURE_RUN / artifact, run / artifact)
    (run / "metrics.jsonl").write_text(metrics_rows(40, {5: 0.2, 37: 0.4123}))
    (run / "weights" / "best.pt").write_bytes(checkpoint_bytes(size, seed))
    return run


def rewrite_in_place(path: Path, data: bytes, chunk: int = 0, pause: float = 0.0) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(0)
        if not chunk:
            handle.write(data)
            return
        for at in range(0, len(data), chunk):
            handle.write(data[at : at + chunk])
            handle.flush()
            time.sleep(pause)


def token_nowhere(*places) -> None:
    tokens_nowhere(TOKENS, *places)


@pytest.fixture
def hub(tmp_path: Path):
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice", orgs=("team",))
    server.add_token(READ_TOKEN, "alice", write=False)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "runs")


SETTINGS = Settings(hub_repo="alice/ckpts")


def do_push(hub: HubServer, run: Path, file: str = "best.pt", **kwargs) -> PushResult:
    options = dict(
        endpoint=hub.url, token=WRITE_TOKEN, settle_s=0.05, timeout=5, retry_waits=(0.05, 0.1)
    )
    options.update(kwargs)
    settings = options.pop("settings", SETTINGS)
    return push(PushRequest(str(run), file), settings, **options)


# -- a push ----------------------------------------------------------------------


def test_small_checkpoint_and_artifacts_arrive_in_one_commit_to_a_private_repo(hub, run) -> None:
    progress: list[tuple[int, int]] = []
    result = do_push(hub, run, progress=lambda d, t: progress.append((d, t)))
    data = (run / "weights" / "best.pt").read_bytes()
    assert result.ok and not result.skipped_unchanged, result.error
    assert (result.repo, result.path, result.sha256, result.size) == (
        "alice/ckpts",
        "exp1/best.pt",
        sha(data),
        len(data),
    )
    assert (result.epoch, result.metric_name, result.metric) == (37, "mAP50-95", 0.4123)
    [commit] = hub.commits("alice/ckpts")
    assert result.commit_url == f"{hub.url}/alice/ckpts/commit/{commit.oid}"
    assert commit.message == "exp1: best.pt epoch 37 mAP50-95=0.4123"
    assert sorted(commit.files) == sorted(["exp1/best.pt"] + [f"exp1/{a}" for a in ARTIFACTS])
    assert hub.file_bytes("alice/ckpts", "exp1/best.pt") == data
    assert commit.files["exp1/best.pt"].lfs
    for artifact in ARTIFACTS:
        assert hub.file_bytes("alice/ckpts", f"exp1/{artifact}") == (run / artifact).read_bytes()
    assert hub.repos["alice/ckpts"].private is True
    assert progress[-1] == (len(data), len(data))
    # the record, and nothing left in staging
    [record] = read_pushes(str(run))
    assert record["outcome"] == "ok" and record["sha256"] == sha(data)
    assert record["commit_url"] == result.commit_url and record["epoch"] == 37
    assert os.listdir(run / ".rgpu" / "staging") == []
    token_nowhere(run / ".rgpu")
    # every request the client made carried the token as a bearer, except the presigned PUT
    assert all(h == f"Bearer {WRITE_TOKEN}" for h in hub.auth_headers)


def test_30_mb_checkpoint_arrives_byte_identical(hub, tmp_path) -> None:
    run = make_run(tmp_path / "runs", size=30 * 1024 * 1024, seed=7)
    progress: list[tuple[int, int]] = []
    do_push(hub, make_run(tmp_path / "warm-up", size=1000))  # imports out of the measure
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        result = do_push(hub, run, progress=lambda d, t: progress.append((d, t)))
        elapsed = time.monotonic() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    data = (run / "weights" / "best.pt").read_bytes()
    assert result.ok, result.error
    assert peak < 12 * 1024 * 1024  # client and server together; the file is 30 MB
    assert hub.file_bytes("alice/ckpts", "exp1/best.pt") == data
    assert [p.sha256 for p in hub.puts][-1:] == [sha(data)]
    dones = [d for d, _ in progress]
    assert dones == sorted(dones) and progress[-1] == (len(data), len(data))
    assert len(progress) < 200  # throttled, not one callback per 64 KB
    print(
        f"30 MB push: {elapsed:.2f} s (traced), peak {peak / 1e6:.1f} MB, {len(progress)} callbacks"
    )


def test_a_real_torch_checkpoint_is_pushed(hub, run) -> None:
    torch = pytest.importorskip("torch")
    path = run / "weights" / "last.pt"
    # libreyolo stores `epoch` 0-based: 39 is the checkpoint saved after epoch 40, and the
    # push records the epoch the uploaded bytes hold
    torch.save({"model": {"w": torch.arange(1000, dtype=torch.float32)}, "epoch": 39}, path)
    result = do_push(hub, run, "last.pt")
    assert result.ok, result.error
    assert result.epoch == 40
    assert hub.file_bytes("alice/ckpts", "exp1/last.pt") == path.read_bytes()


def test_an_existing_public_repo_keeps_its_visibility(hub, run) -> None:
    hub.create_repo("team/public", private=False)
    result = do_push(hub, run, settings=Settings(hub_repo="team/public", hub_path="{file}"))
    assert result.ok, result.error
    assert hub.repos["team/public"].private is False
    commit = hub.commits("team/public")[-1]
    assert "best.pt" in commit.files and "metrics.jsonl" in commit.files  # dirname of {file}


def test_pushing_an_unchanged_file_again_makes_no_commit(hub, run) -> None:
    first = do_push(hub, run)
    requests = len(hub.requests)
    again = do_push(hub, run)
    assert first.ok and again.ok
    assert again.skipped_unchanged and not first.skipped_unchanged
    assert again.sha256 == first.sha256
    assert len(hub.commits("alice/ckpts")) == 1
    # the Hub is asked whether it still has that file, and nothing is sent
    asked = hub.requests[requests:]  # paths-info is a POST that reads
    assert [path.rsplit("/", 2)[-2] for _method, path in asked] == ["paths-info"], asked
    assert [r["outcome"] for r in read_pushes(str(run))] == ["ok", "skipped"]
    # a new version is pushed
    rewrite_in_place(run / "weights" / "best.pt", checkpoint_bytes(150_000, seed=99))
    third = do_push(hub, run)
    assert third.ok and not third.skipped_unchanged
    assert len(hub.commits("alice/ckpts")) == 2
    # the same file to another repo path is not "unchanged"
    other = do_push(hub, run, settings=Settings(hub_repo="alice/ckpts", hub_path="x/{file}"))
    assert other.ok and not other.skipped_unchanged


def test_artifacts_only(hub, run) -> None:
    result = do_push(hub, run, "artifacts")
    assert result.ok, result.error
    [commit] = hub.commits("alice/ckpts")
    assert sorted(commit.files) == sorted(f"exp1/{a}" for a in ARTIFACTS)
    assert commit.message == "exp1: artifacts"
    assert do_push(hub, run, "artifacts").skipped_unchanged


# -- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("repo", "token", "expected"),
    [
        ("alice/ckpts", BAD_TOKEN, "token rejected (401): check HF_TOKEN or run `hf auth login`"),
        ("alice/ckpts", READ_TOKEN, "no write access to alice/ckpts (403)"),
        ("bob/unknown", WRITE_TOKEN, "no write access to bob/unknown (403)"),
        ("bob/private", WRITE_TOKEN, "no write access to bob/private (403)"),
        ("bob/public", WRITE_TOKEN, "no write access to bob/public (403)"),
    ],
)
def test_refusals_are_one_clear_line(hub, run, repo, token, expected) -> None:
    hub.create_repo("bob/private", private=True)
    hub.create_repo("bob/public", private=False)
    result = do_push(hub, run, token=token, settings=Settings(hub_repo=repo))
    assert not result.ok
    assert result.error.startswith(expected), result.error
    assert "\n" not in result.error
    assert hub.commits(repo) == [] and hub.puts == []
    [record] = read_pushes(str(run))
    assert record["outcome"] == "error" and record["error"] == result.error
    token_nowhere(result.error, run / ".rgpu")
    assert os.listdir(run / ".rgpu" / "staging") == []


def test_no_token_fails_before_any_request(hub, run, monkeypatch, tmp_path) -> None:
    import huggingface_hub.constants as constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    result = do_push(hub, run, token=None)
    assert not result.ok and result.error == NO_TOKEN
    assert hub.requests == []


def test_a_500_on_commit_is_retried(hub, run) -> None:
    hub.fail_commits(500, times=1)
    result = do_push(hub, run)
    assert result.ok, result.error
    assert hub.count("POST", r"/commit/") == 2
    assert hub.count("PUT", r"^/lfs/") == 1  # the object was not sent again
    assert len(hub.commits("alice/ckpts")) == 1


def test_a_hub_that_keeps_failing_gives_up_after_three_tries(hub, run) -> None:
    hub.fail_commits(500, times=5)
    result = do_push(hub, run)
    assert not result.ok
    assert result.error == "the Hub failed with 500 (3 tries): try again later"
    assert hub.count("POST", r"/commit/") == 3


@pytest.mark.parametrize("where", ["put", "commit"])
def test_a_stalled_hub_ends_in_a_timeout_within_the_limit(hub, run, where) -> None:
    setattr(hub, f"stall_{where}_s", 60)
    result = do_push(hub, run, timeout=1)
    assert not result.ok
    assert result.error == "the Hub did not answer within 1 s: try again later"
    # one timeout, not retries of it: the stalled request was sent once, nothing after it
    assert hub.count("PUT", r"^/lfs/") == 1
    assert hub.count("POST", r"/commit/") == (1 if where == "commit" else 0)
    assert hub.commits("alice/ckpts") == []


def test_an_unreachable_hub_is_named(run) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    result = push(
        PushRequest(str(run), "best.pt"),
        SETTINGS,
        endpoint=endpoint,
        token=WRITE_TOKEN,
        settle_s=0.02,
        timeout=2,
        retry_waits=(0.05, 0.05),
    )
    assert not result.ok
    assert result.error.startswith(f"cannot reach the Hub at {endpoint}: ")


def test_missing_checkpoint_and_missing_repo_setting(hub, run) -> None:
    missing = do_push(hub, run, "epoch_9.pt")
    assert not missing.ok and missing.error.startswith("epoch_9.pt: no such file")
    no_repo = do_push(hub, run, settings=Settings())
    assert not no_repo.ok and no_repo.error.startswith("no Hub repo")
    assert hub.requests == []


# -- a checkpoint rewritten in place while it is pushed -------------------------------


def test_rewrites_in_place_during_pushes_never_reach_the_hub_torn(hub, tmp_path) -> None:
    run = make_run(tmp_path / "runs", size=1_000_000, seed=0)
    versions = [checkpoint_bytes(1_000_000 + 37_000 * i, seed=100 + i) for i in range(6)]
    shas = {sha(v) for v in versions} | {sha((run / "weights" / "best.pt").read_bytes())}
    best = run / "weights" / "best.pt"
    stop = threading.Event()
    rewrites = [0]

    def writer() -> None:
        rng = random.Random(1)
        while not stop.is_set():
            time.sleep(rng.uniform(0.0, 0.12))
            rewrite_in_place(best, rng.choice(versions), chunk=128 * 1024, pause=0.002)
            rewrites[0] += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    results = []
    deadline = time.monotonic() + 2.0
    try:
        while len(results) < 4 or (time.monotonic() < deadline and len(results) < 20):
            results.append(do_push(hub, run, settle_s=0.03, tries=25))
    finally:
        stop.set()
        thread.join()
    outcomes = [("skipped" if r.skipped_unchanged else "ok") if r.ok else "error" for r in results]
    print(f"{len(results)} pushes during {rewrites[0]} rewrites: {outcomes}")
    assert rewrites[0] > 10
    assert any(r.ok and not r.skipped_unchanged for r in results), [r.error for r in results]
    for r in results:
        assert r.ok or "keeps changing" in r.error, r.error
    for put in hub.puts:  # every object the Hub received is one complete version
        assert put.sha256 == put.oid
        assert put.sha256 in shas
    for commit in hub.commits("alice/ckpts"):
        assert commit.files["exp1/best.pt"].sha256 in shas
    raw = Path(pushes_path(str(run))).read_bytes().splitlines()
    assert len(raw) == len(results)
    records = [json.loads(line) for line in raw]  # every line complete JSON
    assert [r["sha256"] for r in records if r["outcome"] == "ok"] == [
        r.sha256 for r in results if r.ok and not r.skipped_unchanged
    ]
    token_nowhere(run / ".rgpu")
    assert os.listdir(run / ".rgpu" / "staging") == []


# -- the command line -------------------------------------------------------------


def cli(hub_url: str, home: Path, *args: str, token: str | None = WRITE_TOKEN, **env_extra):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "HF_ENDPOINT": hub_url,
        "HF_HUB_DISABLE_XET": "1",
        **env_extra,
    }
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "push", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_push_prints_json_and_exits_0(hub, run, tmp_path) -> None:
    proc = cli(hub.url, tmp_path, str(run), "--repo", "alice/cli", "--json", "--settle", "0.05")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    best = (run / "weights" / "best.pt").read_bytes()
    assert data["ok"] is True and data["skipped_unchanged"] is False
    assert (data["repo"], data["path"], data["sha256"], data["size"]) == (
        "alice/cli",
        "exp1/best.pt",
        sha(best),
        len(best),
    )
    assert data["commit_url"].startswith(f"{hub.url}/alice/cli/commit/")
    assert hub.file_bytes("alice/cli", "exp1/best.pt") == best
    assert proc.stderr == ""
    token_nowhere(proc.stdout, proc.stderr, run / ".rgpu")
    again = cli(hub.url, tmp_path, str(run), "--repo", "alice/cli", "--settle", "0.05")
    assert again.returncode == 0, again.stderr
    assert "unchanged" in again.stdout


def test_cli_repo_flag_wins_and_last_is_the_default_without_best(hub, run, tmp_path) -> None:
    (run / "weights" / "best.pt").rename(run / "weights" / "last.pt")
    proc = cli(
        hub.url, tmp_path, str(run), "--repo", "team/b", "--hub-repo", "team/a",
        "--settle", "0.05", RGPU_HUB_PATH="ckpt/{run}-{file}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pushed last.pt" in proc.stdout and "team/b/ckpt/exp1-last.pt" in proc.stdout
    assert "team/a" not in hub.repos
    assert "ckpt/exp1-last.pt" in hub.commits("team/b")[-1].files


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (BAD_TOKEN, "rgpu-tui: push failed: token rejected (401)"),
        (None, f"rgpu-tui: push failed: {NO_TOKEN}"),
    ],
)
def test_cli_failure_is_one_line_and_nonzero(hub, run, tmp_path, token, expected) -> None:
    proc = cli(hub.url, tmp_path, str(run), "--repo", "alice/x", "--settle", "0.05", token=token)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(expected)
    token_nowhere(proc.stdout, proc.stderr, run / ".rgpu")
    if token is None:
        assert hub.requests == []


# -- the queue ----------------------------------------------------------------------


def _ok(req: PushRequest) -> PushResult:
    return PushResult(
        ok=True, skipped_unchanged=False, repo="alice/x", path=req.file, commit_url="u",
        sha256=None, size=2, epoch=None, metric_name=None, metric=None, error=None, file=req.file,
    )  # fmt: skip


def test_queue_runs_one_at_a_time_replaces_queued_duplicates_and_reports_in_order(
    tmp_path,
) -> None:
    gate = threading.Event()
    started_a = threading.Event()
    all_done = threading.Event()
    running, most = [0], [0]
    lock = threading.Lock()
    events: list[PushEvent] = []
    threads: set[str] = set()
    pushed: list[PushRequest] = []

    def fake_push(req, settings, *, progress, on_phase, **kwargs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        pushed.append(req)
        on_phase("uploading")
        progress(1, 2)
        if req.file == "best.pt" and not gate.is_set():
            started_a.set()
            assert gate.wait(5)
        time.sleep(0.02)
        progress(2, 2)
        with lock:
            running[0] -= 1
        return _ok(req)

    def on_event(event: PushEvent) -> None:
        threads.add(threading.current_thread().name)
        events.append(event)
        if event.kind == "finished" and event.request.file == "epoch_3.pt":
            all_done.set()

    run1, run2 = str(tmp_path / "r1"), str(tmp_path / "r2")
    a = PushRequest(run1, "best.pt")
    b = PushRequest(run1, "last.pt")
    c = PushRequest(run2, "epoch_3.pt")
    b2 = PushRequest(run1 + "/", "last.pt")  # the same file, asked for again
    queue = PushQueue(SETTINGS, on_event, push_fn=fake_push)
    queue.submit(a)
    assert started_a.wait(5)
    queue.submit(b)
    queue.submit(c)
    queue.submit(b2)
    assert queue.pending() == [b2, c]
    assert queue.current() == a and queue.busy()
    gate.set()
    assert all_done.wait(5)
    assert queue.close(timeout=5)
    assert most[0] == 1
    assert pushed == [a, b2, c]
    kinds = [(e.kind, e.request) for e in events if e.kind != "progress"]
    assert kinds == [
        ("queued", a), ("started", a), ("queued", b), ("queued", c), ("queued", b2),
        ("finished", a), ("started", b2), ("finished", b2), ("started", c), ("finished", c),
    ]  # fmt: skip
    for req in (a, b2, c):  # progress comes between started and finished of its request
        mine = [e for e in events if e.request == req and e.kind != "queued"]
        assert mine[0].kind == "started" and mine[-1].kind == "finished"
        assert [(e.bytes_done, e.bytes_total) for e in mine if e.kind == "progress"] == [
            (0, 0), (1, 2), (2, 2),
        ]  # fmt: skip
        assert mine[-1].result.ok
    assert threading.main_thread().name not in threads
    with pytest.raises(RuntimeError):
        queue.submit(a)


def test_queue_with_the_real_push(hub, run) -> None:
    events: list[PushEvent] = []
    done = threading.Event()

    def on_event(event: PushEvent) -> None:
        events.append(event)
        if event.kind == "finished":
            done.set()

    queue = PushQueue(
        SETTINGS, on_event, endpoint=hub.url, token=WRITE_TOKEN, settle_s=0.05, timeout=5
    )
    queue.submit(PushRequest(str(run), "best.pt"))
    assert done.wait(20)
    queue.close(timeout=5)
    size = (run / "weights" / "best.pt").stat().st_size
    assert [e.kind for e in events][:2] == ["queued", "started"]
    phases = [e.phase for e in events if e.kind == "progress"]
    assert phases[0] == "settling" and "uploading" in phases
    last_progress = [e for e in events if e.kind == "progress"][-1]
    assert (last_progress.bytes_done, last_progress.bytes_total) == (size, size)
    assert events[-1].kind == "finished" and events[-1].result.ok


def test_close_drops_queued_requests(tmp_path) -> None:
    gate = threading.Event()
    started = threading.Event()
    pushed = []

    def slow_push(req, settings, **kwargs):
        pushed.append(req)
        started.set()
        gate.wait(5)
        return _ok(req)

    queue = PushQueue(SETTINGS, lambda e: None, push_fn=slow_push)
    last = PushRequest(str(tmp_path), "last.pt")
    queue.submit(PushRequest(str(tmp_path), "best.pt"))
    queue.submit(last)
    assert started.wait(5)  # best.pt is being pushed (held at the gate)
    assert queue.pending() == [last]
    assert queue.close(timeout=0.1) is False  # the running push is still going
    assert queue.pending() == []
    gate.set()
    assert queue.close(timeout=10) is True  # it finished, and its threads ended
    assert [r.file for r in pushed] == ["best.pt"]  # last.pt was dropped, never pushed


# -- records, checkpoint info, automatic pushes ---------------------------------------


def test_records_survive_a_torn_last_line(hub, run) -> None:
    do_push(hub, run)
    with open(pushes_path(str(run)), "ab") as handle:
        handle.write(b'{"time": "2026-01-01T00:00:00Z", "file": "last.pt", "outc')
    records = read_pushes(str(run))
    assert [r["file"] for r in records] == ["best.pt"]
    assert last_push(str(run))["file"] == "best.pt"
    assert last_push(str(run), "last.pt") is None
    assert last_push(str(run), "best.pt", ok_only=True)["outcome"] == "ok"
    assert read_pushes(str(run / "nowhere")) == []


def test_checkpoints_in_the_snapshot_and_as_a_push_reads_them(run) -> None:
    """The selected run's checkpoints (what the push dialogs show) hold the epoch and metric
    a push records (checkpoint_epoch_metric reads metrics.jsonl itself)."""
    weights = run / "weights"
    (weights / "last.pt").write_bytes(checkpoint_bytes(1000, 2))
    (weights / "epoch_5.pt").write_bytes(checkpoint_bytes(1000, 3))
    (weights / "epoch_12.pt").write_bytes(checkpoint_bytes(1000, 4))
    watcher = RunsWatcher(str(run.parent), settings=Settings(hub_repo="alice/ckpts"))

    def listed() -> dict:
        sel = watcher.refresh(time.time(), selected=str(run)).selected
        return {c.name: c for c in sel.checkpoints}

    got = listed()
    assert list(got) == ["best.pt", "last.pt", "epoch_5.pt", "epoch_12.pt"]
    best = got["best.pt"]
    assert best.exists and best.size == (weights / "best.pt").stat().st_size
    assert (best.epoch, best.metric_name, best.metric) == (37, "mAP50-95", 0.4123)
    assert (got["last.pt"].epoch, got["last.pt"].metric_name) == (40, "mAP50-95")
    assert (got["epoch_5.pt"].epoch, got["epoch_5.pt"].metric) == (5, 0.2)
    assert best.target.path == "exp1/best.pt" and best.target.repo == "alice/ckpts"
    for name, c in got.items():
        assert checkpoint_epoch_metric(str(run), name) == (c.epoch, c.metric_name, c.metric)
    assert checkpoint_epoch_metric(str(run), "epoch_99.pt") == (99, None, None)  # no row
    # best.pt rewritten in place (the folder's mtime does not change): its new size shows
    (weights / "best.pt").write_bytes(checkpoint_bytes(5000, 5))
    assert listed()["best.pt"].size == (weights / "best.pt").stat().st_size
    (run / "metrics.jsonl").write_text('{"epoch": 1, "is_best": true\nnot json\n')
    assert listed()["best.pt"].epoch is None
    assert checkpoint_epoch_metric(str(run), "best.pt") == (None, None, None)
    (run / "metrics.jsonl").unlink()
    assert listed()["last.pt"].epoch is None
    assert checkpoint_epoch_metric(str(run), "last.pt") == (None, None, None)


def test_auto_push_best(hub, run) -> None:
    best = Settings(auto_push="best")
    state = AutoPushState()
    row = {"epoch": 3, "is_best": True, "best_epoch": 3}
    assert auto_push_requests(str(run), Settings(), row, AutoPushState()) == []  # off
    assert auto_push_requests(str(run), best, row, state) == []  # first look: noted only
    assert auto_push_requests(str(run), best, {**row, "epoch": 4, "is_best": False}, state) == []
    new_best = {"epoch": 6, "is_best": False, "best_epoch": 5}  # epoch 5 was missed: still seen
    assert auto_push_requests(str(run), best, new_best, state) == [PushRequest(str(run), "best.pt")]
    assert auto_push_requests(str(run), best, new_best, state) == []
    # best.pt rewritten (the row not read yet): that is a new best too
    rewrite_in_place(run / "weights" / "best.pt", checkpoint_bytes(1000, seed=42))
    assert auto_push_requests(str(run), best, new_best, state) == [PushRequest(str(run), "best.pt")]
    assert auto_push_requests(str(run), best, new_best, state) == []
    assert auto_push_requests(str(run), best, row, AutoPushState(), weights=["last.pt"]) == []
    assert auto_push_requests(str(run), best, row, AutoPushState(), catch_up=True) == [
        PushRequest(str(run), "best.pt")
    ]
    # after a restart, a run that was pushed before catches up
    assert do_push(hub, run).ok  # recorded at epoch 37
    assert auto_push_requests(str(run), best, {"best_epoch": 37}, AutoPushState()) == []
    assert auto_push_requests(str(run), best, {"best_epoch": 39}, AutoPushState()) == [
        PushRequest(str(run), "best.pt")
    ]
    later = time.time() + 5  # best.pt rewritten after that push, the row not read yet
    os.utime(run / "weights" / "best.pt", (later, later))
    assert auto_push_requests(str(run), best, {"best_epoch": 37}, AutoPushState()) == [
        PushRequest(str(run), "best.pt")
    ]


def test_auto_push_period(run) -> None:
    period = Settings(auto_push="period")
    state = AutoPushState()
    listing = ["best.pt", "last.pt", "epoch_1.pt", "epoch_2.pt"]
    assert auto_push_requests(str(run), period, None, state, weights=listing) == []
    listing += ["epoch_10.pt", "epoch_3.pt"]
    assert auto_push_requests(str(run), period, None, state, weights=listing) == [
        PushRequest(str(run), "epoch_3.pt"),
        PushRequest(str(run), "epoch_10.pt"),
    ]
    assert auto_push_requests(str(run), period, None, state, weights=listing) == []
    (run / "weights" / "epoch_4.pt").write_bytes(b"x")  # listing read from disk
    fresh = AutoPushState()
    assert auto_push_requests(str(run), period, None, fresh, catch_up=True) == [
        PushRequest(str(run), "epoch_4.pt")
    ]
