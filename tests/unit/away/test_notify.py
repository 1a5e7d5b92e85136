"""core.away.notify: the notify command, run for real (no mocks), off the caller's thread."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from rgpu_tui.core.away.events import Event, EventEngine
from rgpu_tui.core.away.notify import Notifier, fill, hf_token
from rgpu_tui.core.model.snapshot import RunInfo, Snapshot

NOW = 1_800_000_000.0
# appends its arguments (and whether it saw HF_TOKEN) to the file named first
RECORD = (
    "import json, os, sys\n"
    "with open(sys.argv[1], 'a') as f:\n"
    "    f.write(json.dumps({'argv': sys.argv[2:], 'hf': os.environ.get('HF_TOKEN')}) + '\\n')\n"
)


def recorder(out: Path) -> list[str]:
    return [sys.executable, "-c", RECORD, str(out), "{event}", "{run}", "{message}", "{host}"]


def lines(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines()]
    except FileNotFoundError:
        return []


def event(name: str = "run_dead", run: str | None = "/runs/a", message: str = "a is DEAD") -> Event:
    return Event(at=NOW, event=name, run=run, message=message)


class Reports:
    """on_failure: what the notifier reports (from its thread)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def __call__(self, ev: Event) -> None:
        with self._lock:
            self.events.append(ev)

    def messages(self) -> list[str]:
        with self._lock:
            return [e.message for e in self.events]


@pytest.fixture
def notifiers():
    made: list[Notifier] = []

    def make(argv, **kwargs) -> tuple[Notifier, Reports]:
        reports = Reports()
        n = Notifier(argv, reports, **kwargs)
        made.append(n)
        return n, reports

    yield make
    for n in made:
        n.close(wait=0)


def test_placeholders_are_filled_once_per_argument_never_formatted() -> None:
    values = {"event": "run_dead", "run": "/r/{message}", "message": "m {run} {0}", "host": "h"}
    argv = fill(
        ["-d", "{event}: {message}", "{run}", "{host}", "{other}", "{message!r}", "{"], values
    )
    assert argv == [
        "-d",
        "run_dead: m {run} {0}",
        "/r/{message}",
        "h",
        "{other}",
        "{message!r}",
        "{",
    ]


def test_each_event_runs_the_command_in_order(tmp_path: Path, notifiers) -> None:
    out = tmp_path / "notified.jsonl"
    n, reports = notifiers(recorder(out), host="box1")
    n.submit(event("run_dead", "/runs/a", "a is DEAD"))
    n.submit(event("idle", None, "machine idle for 10m00s"))
    got = wait_until(lambda: len(lines(out)) == 2 and lines(out), "two notifications")
    assert [g["argv"] for g in got] == [
        ["run_dead", "/runs/a", "a is DEAD", "box1"],
        ["idle", "", "machine idle for 10m00s", "box1"],
    ]
    wait_until(n.idle, "the notifier to be idle")
    assert n.sent == 2 and reports.events == []


def test_the_token_never_reaches_the_command(tmp_path: Path, notifiers, monkeypatch) -> None:
    token = "hf_" + "Q" * 34
    monkeypatch.setenv("HF_TOKEN", token)
    assert hf_token() == token
    run = RunInfo(
        run_dir=str(tmp_path / f"exp-{token}"),
        name=f"exp-{token}",
        state="running",
        status_state="running",
        pid=10,
        pid_alive=True,
        current_epoch=1,
        total_epochs=2,
        progress=0.5,
    )
    engine = EventEngine(pushes=False, token=hf_token())

    def snap(now: float, r: RunInfo) -> Snapshot:
        return Snapshot(
            generated_at=now, root=str(tmp_path), root_exists=True, runs=(r,), selected=None
        )

    engine.observe(snap(NOW, run))
    failed = RunInfo(
        **{**run.__dict__, "state": "failed", "error": f"HTTPError: 401 for token {token}"}
    )
    [ev] = engine.observe(snap(NOW + 1, failed))
    assert token not in json.dumps(ev.to_json())  # what `watch --json` prints
    out = tmp_path / "notified.jsonl"
    n, _ = notifiers(recorder(out), token=hf_token())
    n.submit(ev)
    [got] = wait_until(lambda: lines(out), "the notification")
    assert token not in json.dumps(got)
    assert got["argv"][:3] == [
        "run_failed",
        str(tmp_path / "exp-***"),
        "exp-*** failed at epoch 1/2: HTTPError: 401 for token ***",
    ]
    assert got["hf"] is None  # not passed to the command's environment


def test_the_notifier_scrubs_its_token_from_an_event_that_was_not_cleaned(
    tmp_path: Path, notifiers
) -> None:
    """The Notifier's own scrub, not the EventEngine's: an event that arrives holding the
    token (in its run and its message), and a failing command whose output holds it. The
    token is not shaped like a Hugging Face token, so only the exact scrub can find it."""
    token = "tok" + "Z" * 30
    out = tmp_path / "notified.jsonl"
    n, _ = notifiers(recorder(out), token=token, host="box1")
    n.submit(event("run_failed", f"/runs/exp-{token}", f"exp-{token} failed: 401 for {token}"))
    [got] = wait_until(lambda: lines(out), "the notification")
    assert got["argv"] == ["run_failed", "/runs/exp-***", "exp-*** failed: 401 for ***", "box1"]
    secret = tmp_path / "secret"
    secret.write_text(token)
    code = "import sys; print('refused ' + open(sys.argv[1]).read(), file=sys.stderr); exit(3)"
    n2, reports = notifiers([sys.executable, "-c", code, str(secret), "{message}"], token=token)
    n2.submit(event(message=f"m {token}"))
    [said] = wait_until(reports.messages, "the failure")
    assert said.startswith("notify_command failed for run_dead: exit status 3: refused ***")
    assert token not in said


def test_a_failing_command_is_reported_once_until_it_works_again(tmp_path: Path, notifiers) -> None:
    flag = tmp_path / "fail"
    flag.touch()
    code = (
        "import os, sys\n"
        "if os.path.exists(sys.argv[1]):\n"
        "    print('curl: (6) Could not resolve host: ntfy.sh', file=sys.stderr)\n"
        "    sys.exit(6)\n"
        "open(sys.argv[2], 'a').write(sys.argv[3] + '\\n')\n"
    )
    ok = tmp_path / "ok.txt"
    n, reports = notifiers([sys.executable, "-c", code, str(flag), str(ok), "{event}"])
    for name in ("run_dead", "run_done", "idle"):
        n.submit(event(name))
    wait_until(lambda: n.idle() and n.failures == 3, "three failed runs")
    [said] = reports.messages()
    assert said.startswith("notify_command failed for run_dead: exit status 6: curl: (6)")
    assert reports.events[0].event == "notify_failed"
    flag.unlink()
    n.submit(event("run_started"))
    wait_until(lambda: ok.exists() and ok.read_text() == "run_started\n", "a success")
    wait_until(lambda: not n.failing, "the failure to end")
    flag.touch()
    n.submit(event("run_done"))
    wait_until(lambda: len(reports.events) == 2, "the next failure reported")


def test_a_command_that_cannot_start(notifiers) -> None:
    n, reports = notifiers(["/nonexistent/notify-me", "{message}"])
    n.submit(event())
    [said] = wait_until(reports.messages, "the failure")
    assert "cannot run /nonexistent/notify-me: No such file or directory" in said


def test_a_hanging_command_is_killed_with_its_children(tmp_path: Path, notifiers) -> None:
    child_pid = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "print('waiting for the server', flush=True)\n"
        "time.sleep(600)\n"
    )
    n, reports = notifiers([sys.executable, "-c", code, str(child_pid)], timeout=1.0)
    n.submit(event())
    [said] = wait_until(reports.messages, "the timeout", timeout=30)
    assert "timed out after 1 s (killed): waiting for the server" in said
    pid = int(child_pid.read_text())
    wait_until(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie",
        "the command's child to be killed",
    )


def test_a_slow_command_never_blocks_and_drops_the_oldest(tmp_path: Path, notifiers) -> None:
    gate = tmp_path / "gate"
    out = tmp_path / "out.txt"
    started = tmp_path / "started"
    code = (
        "import os, sys, time\n"
        "open(sys.argv[3], 'a').write('x')\n"
        "while not os.path.exists(sys.argv[1]):\n"
        "    time.sleep(0.02)\n"
        "open(sys.argv[2], 'a').write(sys.argv[4] + '\\n')\n"
    )
    argv = [sys.executable, "-c", code, str(gate), str(out), str(started), "{message}"]
    n, reports = notifiers(argv, max_pending=2)
    n.submit(event(message="m0"))
    wait_until(started.exists, "the first command to start")  # m0 is in flight
    for i in range(1, 6):
        n.submit(event(message=f"m{i}"))  # returns at once: the command is blocked
    [said] = reports.messages()  # the first drop only
    assert "2 notifications waiting, dropped the oldest (run_dead)" in said
    assert n.dropped == 3
    gate.touch()
    wait_until(lambda: n.idle() and out.exists() and len(out.read_text().split()) == 3, "the rest")
    assert out.read_text().split() == ["m0", "m4", "m5"]


def test_close_sends_what_is_queued_then_stops(tmp_path: Path) -> None:
    out = tmp_path / "notified.jsonl"
    n = Notifier(recorder(out), Reports())
    for i in range(3):
        n.submit(event(message=f"m{i}"))
    n.close(wait=30)
    assert [g["argv"][2] for g in lines(out)] == ["m0", "m1", "m2"]
    n.submit(event(message="late"))  # after close: nothing
    assert len(lines(out)) == 3


def test_close_kills_a_hanging_command(tmp_path: Path) -> None:
    started = tmp_path / "started"
    code = "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(600)"
    n = Notifier([sys.executable, "-c", code, str(started)], Reports(), timeout=600)
    n.submit(event())
    wait_until(started.exists, "the command to start")
    n.close(wait=0)
    assert n.idle()
    assert not [p for p in psutil.Process(os.getpid()).children() if p.status() != "zombie"]
