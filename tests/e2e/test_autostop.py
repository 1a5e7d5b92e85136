"""End to end: safe autostop in a real `rgpu-tui watch` subprocess, against the local Hub
server (tests/support/hub_server.py), with an autostop_command that records its argv.

Held while exp1's best.pt is not on the Hub (a run with no weights beside it does not
hold); `rgpu-tui push` puts it there; the command then runs exactly once, after its
`autostop` notification went out, with `$VAR` filled in; the watcher stays up; a restarted
watcher does not run it again for the same idle stretch. A failing command is told with its
exit status and last line, and the watcher goes on. Every wait polls against a deadline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes
from support.cli_env import RGPU_TUI, clean_env
from support.hub_server import HubServer
from support.waiting import wait_until
from support.watch_proc import Watch

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
ARTIFACTS = ("status.json", "metrics.jsonl", "results.csv", "summary.json", "train_config.yaml")
HF = "hf" + "_"  # assembled so that no token-shaped literal sits in the tree
TOKEN = HF + "AutostopTestWriteTokenForTheHub01234"
REPO = "alice/ckpts"
# appends its arguments as one JSON line to the file named first
RECORD = (
    "import json, sys\n"
    "with open(sys.argv[1], 'a') as f:\n"
    "    f.write(json.dumps(sys.argv[2:]) + '\\n')\n"
)


def completed_run(root: Path, name: str, weights: bool) -> Path:
    run = root / name
    run.mkdir(parents=True)
    for artifact in ARTIFACTS:
        shutil.copy(FIXTURE_RUN / artifact, run / artifact)
    if weights:
        (run / "weights").mkdir()
        (run / "weights" / "best.pt").write_bytes(checkpoint_bytes(300_000, 1))
    return run


@pytest.fixture
def watches():
    made: list[Watch] = []

    def start(root: Path, env: dict) -> Watch:
        w = Watch(root, env)
        made.append(w)
        return w

    yield start
    for w in made:
        w.stop()


@pytest.fixture
def hub(tmp_path: Path):
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(TOKEN, "alice")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def lines(path: Path) -> list[list[str]]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines()]
    except FileNotFoundError:
        return []


def records(tmp_path: Path) -> list[dict]:
    found = list((tmp_path / "state" / "rgpu-tui").glob("autostop-*.jsonl"))
    return [json.loads(line) for p in found for line in p.read_text().splitlines()]


def plan(tmp_path: Path) -> dict | None:
    found = list((tmp_path / "state" / "rgpu-tui").glob("autostop-*.json"))
    return json.loads(found[0].read_text()) if found else None


def test_held_until_pushed_then_runs_once_and_a_restart_does_not_run_it_again(
    tmp_path: Path, hub, watches
) -> None:
    root = tmp_path / "runs"
    exp1 = completed_run(root, "exp1", weights=True)
    completed_run(root, "bare", weights=False)  # no weights: never holds
    log = tmp_path / "log.jsonl"  # the notifications and the stop command, in order
    env = clean_env(
        tmp_path,
        XDG_STATE_HOME=str(tmp_path / "state"),
        HF_ENDPOINT=hub.url,
        HF_TOKEN=TOKEN,
        HF_HOME=str(tmp_path / "hf"),
        POD_ID="pod-7f3a",
        RGPU_HUB_REPO=REPO,
        RGPU_AUTOSTOP_IDLE_MINUTES="0.02",  # 1.2 s
        RGPU_IDLE_MINUTES="0.05",  # the `idle` event, 3 s: a later marker
        RGPU_AUTOSTOP_COMMAND=json.dumps(
            [sys.executable, "-c", RECORD, str(log), "STOP", "pod", "$POD_ID"]
        ),
        RGPU_NOTIFY_COMMAND=json.dumps([sys.executable, "-c", RECORD, str(log), "{event}"]),
    )
    watch = watches(root, env)
    [held] = wait_until(
        lambda: watch.events("autostop_held"), "autostop_held", timeout=60, details=watch.details
    )
    assert "exp1: best.pt was never pushed" in held["message"]
    assert f"rgpu-tui push {exp1}" in held["message"] and "bare" not in held["message"]
    assert not [e for e in lines(log) if e[0] == "STOP"]

    pushed = subprocess.run(
        [str(RGPU_TUI), "push", str(exp1), "--settle", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pushed.returncode == 0, pushed.stderr
    wait_until(
        lambda: [r for r in records(tmp_path) if r["event"] == "finished"],
        "the command to run and end",
        timeout=60,
        details=watch.details,
    )
    [fired] = watch.events("autostop")
    assert "all weights on the Hub (exp1 best.pt), checked on the Hub" in fired["message"]
    stops = [e for e in lines(log) if e[0] == "STOP"]
    assert stops == [["STOP", "pod", "pod-7f3a"]]  # $POD_ID filled in, once
    order = [e[0] for e in lines(log)]
    assert order.index("autostop") < order.index("STOP")  # told before the machine stops
    [started, finished] = [r for r in records(tmp_path) if r["event"] in ("started", "finished")]
    assert finished["ok"] is True and finished["returncode"] == 0
    assert started["weights"][0]["run"] == str(exp1)
    assert watch.proc.poll() is None  # it stays up after the command
    assert watch.stop() == 0
    assert "$POD_ID" in watch.stderr and "pod-7f3a" not in json.dumps(records(tmp_path))

    again = watches(root, env)  # the same idle stretch: nothing runs again
    wait_until(lambda: again.events("idle"), "the idle event", timeout=60, details=again.details)
    now = plan(tmp_path)
    assert now["pid"] == again.proc.pid and now["phase"] == "ran", now
    assert again.stop() == 0
    assert [e for e in lines(log) if e[0] == "STOP"] == stops
    assert [e["event"] for e in again.events()] == ["idle"]


def test_a_failing_command_is_told_and_the_watcher_goes_on(tmp_path: Path, watches) -> None:
    root = tmp_path / "runs"
    completed_run(root, "bare", weights=False)
    code = "import sys; print('vastai: 401 Unauthorized: check your api key'); sys.exit(3)"
    env = clean_env(
        tmp_path,
        XDG_STATE_HOME=str(tmp_path / "state"),
        RGPU_AUTOSTOP_IDLE_MINUTES="0.02",
        RGPU_AUTOSTOP_COMMAND=json.dumps([sys.executable, "-c", code]),
    )
    watch = watches(root, env)
    [failed] = wait_until(
        lambda: watch.events("autostop_failed"), "a failure", timeout=60, details=watch.details
    )
    assert "exit status 3: vastai: 401 Unauthorized: check your api key" in failed["message"]
    completed_run(root, "later", weights=False)  # it still watches: a new run is news
    wait_until(lambda: watch.events("run_done"), "run_done", timeout=60, details=watch.details)
    assert watch.stop() == 0
    assert [e["event"] for e in watch.events()] == ["autostop", "autostop_failed", "run_done"]
    [finished] = [r for r in records(tmp_path) if r["event"] == "finished"]
    assert finished["returncode"] == 3 and finished["ok"] is False
