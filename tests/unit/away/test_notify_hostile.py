"""notify_command against hostile input: a run or host name, or a
message, never becomes an option, a file to read or a header of the command; a command's
output is read as it comes into a bounded tail; a command that exits but leaves a child
holding its output is done when it exits.

Real commands (python, curl) against a local HTTP server; nothing is mocked.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tracemalloc
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from rgpu_tui.core.away.command import TAIL_BYTES, CommandRunner
from rgpu_tui.core.away.events import Event, EventEngine
from rgpu_tui.core.away.notify import Notifier, fill
from rgpu_tui.core.model.snapshot import RunInfo, Snapshot

from .test_notify import Reports, lines, recorder
from .test_readme_notify import Service, argv_of, examples

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
NOW = 1_800_000_000.0


def notified(tmp_path: Path, ev: Event, host: str = "box1") -> list[str]:
    """The argv the notifier ran for `ev` ({event} {run} {message} {host})."""
    out = tmp_path / "notified.jsonl"
    n = Notifier(recorder(out), Reports(), host=host)
    n.submit(ev)
    n.close(wait=30)
    [got] = lines(out)
    return got["argv"]


def run_event(tmp_path: Path, name: str) -> Event:
    """The run_dead event of a real run directory named `name` (through the engine)."""
    run_dir = str(tmp_path / name)
    info = RunInfo(run_dir=run_dir, name=name, state="running", pid=10, current_epoch=1)
    engine = EventEngine(pushes=False)

    def snap(t: float, run: RunInfo) -> Snapshot:
        return Snapshot(generated_at=t, root=str(tmp_path), root_exists=True, runs=(run,),
                        selected=None)  # fmt: skip

    engine.observe(snap(NOW, info))
    dead = RunInfo(**{**info.__dict__, "state": "dead", "error": "process 10 is gone"})
    [ev] = engine.observe(snap(NOW + 1, dead))
    return ev


@pytest.mark.parametrize(
    "name", ["@runs", "-dexp", "--data-binary=@x", "<secret", "+x", " @space", "\t-tab", "@"]
)
def test_a_message_never_starts_with_an_option_or_a_file_reference(tmp_path: Path, name) -> None:
    ev = run_event(tmp_path, name)
    _event, _run, message, _host = notified(tmp_path, ev)
    assert message[0].isalnum(), message
    assert message.startswith("run_dead: ") and name.strip() in message


def test_an_ordinary_message_is_left_as_it_is(tmp_path: Path) -> None:
    ev = run_event(tmp_path, "exp7")
    assert notified(tmp_path, ev)[2] == "exp7 is DEAD at epoch 1/?: process 10 is gone"


@pytest.mark.parametrize("bad", ["x\r\nX-Injected: 1", "x\nInjected", "x\x1b]0;t\x07", "x\x00y"])
def test_run_and_host_are_one_printable_line(tmp_path: Path, bad: str) -> None:
    ev = Event(at=NOW, event="run_dead", run=f"/runs/{bad}", message="m")
    _event, run, _message, host = notified(tmp_path, ev, host=f"-box{bad}")
    for value in (run, host):
        assert "\n" not in value and "\r" not in value and "\x1b" not in value
        assert "\x00" not in value and value.isprintable(), value
    assert run.startswith("/runs/x")
    assert host[0].isalnum(), host  # a host name never starts with '-' or '@' either


def test_fill_is_still_one_pass() -> None:
    """The guard is the notifier's; fill itself only substitutes (a test below runs curl
    with a raw value to check the README's --data-raw)."""
    assert fill(["{message}"], {"message": "@x", "event": "", "run": "", "host": ""}) == ["@x"]


# -- the docs' ntfy example, with hostile names ------------------------------------------


@needs_curl
def test_the_ntfy_example_never_sends_a_local_file(tmp_path: Path) -> None:
    """A run folder named `@runs/x` with a planted file: the example sent the file's bytes
    with `-d @...`; with --data-raw (and messages that start with the event) only text
    goes, even when the message itself starts with '@'."""
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY\n")
    service = Service()
    try:
        argv = [
            a.replace("https://ntfy.sh", service.url) for a in argv_of(examples()["ntfy"], tmp_path)
        ]
        assert "--data-raw" in argv and "-d" not in argv
        # straight through curl: a raw value that names a file
        runner = CommandRunner(30)
        values = {"event": "run_dead", "run": "/r", "host": "h", "message": f"@{secret}"}
        assert runner.run(fill(argv, values)).ok
        # through the notifier, from a real event of a run named so
        n = Notifier(argv, Reports(), host="gpu-box-1")
        n.submit(Event(at=NOW, event="run_dead", run="/r/@x", message=f"@{secret} is DEAD"))
        n.close(wait=30)
    finally:
        service.close()
    bodies = [body for _path, _headers, body in service.requests]
    assert bodies == [f"@{secret}".encode(), f"run_dead: @{secret} is DEAD".encode()]
    assert not any(b"PRIVATE KEY" in body for body in bodies)


@needs_curl
def test_a_crlf_in_a_run_name_injects_no_header(tmp_path: Path) -> None:
    service = Service()
    try:
        argv = ["curl", "-sS", "--fail", "-H", "X-Run: {run}", "--data-raw", "{message}",
                f"{service.url}/topic"]  # fmt: skip
        n = Notifier(argv, Reports(), host="h")
        n.submit(Event(at=NOW, event="run_dead", run="/r/x\r\nX-Injected: 1", message="m"))
        n.close(wait=30)
    finally:
        service.close()
    [(_path, headers, _body)] = service.requests
    assert "X-Injected" not in headers
    assert headers["X-Run"] == "/r/x^M^JX-Injected: 1"


# -- the command's output ------------------------------------------------------------------


def test_a_command_printing_a_lot_is_read_into_a_bounded_tail() -> None:
    """600 MB of output took the watcher to 1.2 GB (all of it held); 64 MB here, and the
    memory Python allocates while reading it stays under 1 MB."""
    code = (
        "import sys\n"
        "block = b'x' * (1 << 20)\n"
        "for _ in range(64): sys.stdout.buffer.write(block)\n"
        "sys.stdout.buffer.write(b'\\nthe last line\\n')\n"
    )
    tracemalloc.start()
    try:
        result = CommandRunner(120).run([sys.executable, "-c", code])
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok and result.tail() == "the last line"
    assert len(result.output) <= TAIL_BYTES
    assert peak < 1 << 20, f"peak {peak} bytes"


def test_a_command_that_leaves_a_child_on_its_output_is_done_when_it_exits(
    tmp_path: Path,
) -> None:
    """`server &`: the child keeps the pipe open; the command was waited for until the
    timeout, the child killed and notify_failed reported. Now it is done when it exits."""
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "print('sent', flush=True)\n"
    )
    reports = Reports()
    n = Notifier([sys.executable, "-c", code, str(pid_file)], reports, timeout=20)
    try:
        n.submit(Event(at=NOW, event="run_dead", run=None, message="m"))
        wait_until(lambda: n.sent == 1, "the command to be done", timeout=15)
        assert reports.events == [] and n.failures == 0
        child = psutil.Process(int(pid_file.read_text()))
        assert child.is_running() and child.status() != psutil.STATUS_ZOMBIE  # not killed
    finally:
        n.close(wait=0)
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_child_that_writes_on_after_the_command_exits_does_not_keep_it_running(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "child.pid"
    chatter = "import sys, time\nwhile True:\n    print('x' * 1000, flush=True)\n"
    code = (
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {chatter!r}])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "print('done', flush=True)\n"
    )
    try:
        result = CommandRunner(20).run([sys.executable, "-c", code, str(pid_file)])
        assert result.ok, result.problem
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
