"""`rgpu-tui agent [ROOT]`: the remote end of the fleet view, spoken over `ssh HOST`.

It runs the app's refresh loop (core.picture.collect.Collector, one refresh every `interval`)
and writes JSON lines on its stdout, each one whole and flushed:

    {"agent": "rgpu-tui", "version": "0.1.0", "schema_version": 1, "root": ROOT,
     "interval": 1.0, "heartbeat": 10.0}               hello, once, first
    {"seq": 0, "snapshot": {...}}                       the full Snapshot JSON (the schema
                                                        of `rgpu-tui snapshot --json`)
    {"seq": N, "delta": [op, ...]}                      what changed since seq N-1
                                                        (core.fleet.delta: set, remove, slide)
    {"result": ID, "ok": true|false, "error": ..., ...} the answer to one command
    {"progress": ID, ...}                               a push's or a stop's progress
    {"notice": "..."}                                   the agent about itself (a refresh
                                                        that failed, said once)

Until a run is selected the snapshot carries no run's details (`selected` and `pushes`
are null): a table of hosts needs the runs, the GPUs, the machine and the money, while a
live run's metrics and log tail are most of what changes (about 5 KB/s for a run with 40
metric columns and 10 log lines a second). The fleet selects a run when it shows it.

A refresh where nothing changed but the clock (`generated_at`) sends nothing; when
nothing was sent for `heartbeat` seconds, a delta that sets only `generated_at` goes
out, so the other end tells a stalled link from a quiet host.

Commands come on stdin, one JSON object a line, each with an optional "id" (a string
or a number, echoed in its result):

    {"cmd": "refresh"}                                  refresh now; answered after the
                                                        line it made ("seq")
    {"cmd": "select", "run": RUN_DIR | null}            whose metrics, log, checkpoints and
                                                        pushes the snapshot carries; null:
                                                        none (the start: `selected` and
                                                        `pushes` are null)
    {"cmd": "chart", "runs": [RUN_DIR, ...],             whose charts the snapshot carries
     "metrics": [NAME, ...], "defaults": true}          (`charts`, core.picture.charts: at
                                                        most 6 runs and 16 metrics, then
                                                        each run's default panels unless
                                                        "defaults" is false; no runs:
                                                        none, the start)
    {"cmd": "push", "run": RUN_DIR, "file": "best"}     core.hub's PushQueue (best, last,
                                                        epoch_N, artifacts, a path); "push"
                                                        in the result is its PushResult
    {"cmd": "stop", "run": RUN_DIR}                     core.launch.stop.stop_run; "stop" in the
                                                        result is its StopResult
    {"cmd": "resume", "run": RUN_DIR, "check": false,   core.launch.resume: "check" only plans
     "data": PATH, "device": D, "from": "epoch_20"}     (the confirm dialog's command),
                                                        else starts it, from the newest
                                                        complete checkpoint or "from";
                                                        "plan", "launch"

RUN_DIR must be one of the runs of the last snapshot. A push, a stop and a resume run
in threads of their own, so the refresh stream never stops. The agent ends when stdin
closes (the SSH session ended) or on SIGINT/SIGTERM, with status 0: runs are never
touched by its ending. After stdin closed, a push or stop already running is finished
(its record is written, as when it was asked from the app); queued pushes are dropped.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ..base.values import value_text
from ..model.snapshot import SCHEMA_VERSION
from ..model.snapshot_json import snapshot_to_json
from ..picture.refresh import RefreshDriver, one_line
from .delta import diff

HEARTBEAT_S = 10.0  # at most this long without a line
MAX_COMMAND_BYTES = 64 * 1024
PROGRESS_EVERY_S = 1.0  # a push's progress lines, at most one a second per push
FINISH_WAIT_S = 600.0  # after stdin closed: the longest wait for a push or stop in flight
COMMANDS = ("refresh", "select", "chart", "push", "stop", "resume")
GENERATED_AT = ["generated_at"]


def agent_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rgpu-tui")
    except PackageNotFoundError:
        return "unknown"


def encode(obj) -> bytes:
    """One line: compact, ASCII only (a name that is not UTF-8 stays a lone surrogate,
    escaped as \\udcff, as in `snapshot --json`)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


class LineWriter:
    """Whole lines to a binary stream from any thread, flushed at once; counts the bytes.
    A reader that went away (the SSH session ended) makes it quiet, never raise."""

    def __init__(self, out) -> None:
        self._out = out
        self._lock = threading.Lock()
        self.bytes = 0
        self.lines = 0
        self.gone = False

    def send(self, obj) -> None:
        data = encode(obj)
        with self._lock:
            if self.gone:
                return
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ConnectionError, OSError, ValueError):
                self.gone = True
                return
            self.bytes += len(data)
            self.lines += 1


class CommandError(Exception):
    """A command refused before anything was done; str(error) is its one line."""


def _text(value, name: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise CommandError(f'"{name}" must be a non-empty string')
    return value


class Agent:
    """The loop and the commands; `run()` is the process's main loop (see the module doc).

    `collector` is a core.picture.collect.Collector (or anything with its refresh(now, selected));
    `push_queue`, `stop_fn`, `plan_resume_fn` and `start_resume_fn` default to core's."""

    def __init__(
        self,
        collector,
        settings,
        writer: LineWriter,
        *,
        root: str,
        interval: float = 1.0,
        heartbeat: float = HEARTBEAT_S,
        push_queue=None,
        stop_fn: Callable | None = None,
        plan_resume_fn: Callable | None = None,
        start_resume_fn: Callable | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.collector = collector
        self.settings = settings
        self.writer = writer
        self.root = root
        self.interval = interval
        self.heartbeat = heartbeat
        self.clock = clock
        self._push_queue = push_queue
        self._stop_fn = stop_fn
        self._plan_resume_fn = plan_resume_fn
        self._start_resume_fn = start_resume_fn
        self.selected: str | None = None
        self.charts = None  # a core.picture.charts.ChartRequest: the chart view's runs
        self.sent: dict | None = None  # the document the other end holds
        self.seq = -1
        self.sent_at = 0.0
        self.runs: frozenset[str] = frozenset()  # run_dir of each run of the last snapshot
        self._driver = RefreshDriver(collector, on_failure=self._refresh_failed)
        self._wanted: list = []  # ids of refresh/select commands answered after the refresh
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._pushes: dict[int, object] = {}  # id(PushRequest) -> command id
        self._push_waiting: dict[tuple[str, str], list] = {}  # queued, per (run, file)
        self._push_running: dict[int, list] = {}  # id(PushRequest) -> command ids
        self._push_progress_at: dict[int, float] = {}
        self._buffer = b""
        self._skipping = False  # the rest of a command line that was too long

    # -- the stream ---------------------------------------------------------------------

    def hello(self) -> dict:
        return {
            "agent": "rgpu-tui",
            "version": agent_version(),
            "schema_version": SCHEMA_VERSION,
            "root": self.root,
            "interval": self.interval,
            "heartbeat": self.heartbeat,
        }

    def tick(self) -> None:
        """One refresh, and the line it makes (the full snapshot, a delta, a heartbeat or
        nothing); then the answers to the refresh/select commands that waited for it."""
        wanted, self._wanted = self._wanted, []
        more = {"charts": self.charts} if self.charts is not None else {}
        snap = self._driver.refresh(selected=self.selected, **more)
        if snap is None:
            for ident in wanted:
                self._answer(ident, False, f"refresh failed: {self._driver.failure}")
            return
        self.runs = frozenset(r.run_dir for r in snap.runs)
        if self.selected is None:  # no run's details until one is selected
            snap = replace(snap, selected=None)
        doc = snapshot_to_json(snap)
        now = self.clock()
        if self.sent is None:
            self.seq = 0
            self.writer.send({"seq": 0, "snapshot": doc})
            self.sent, self.sent_at = doc, now
        else:
            ops = diff(self.sent, doc)
            news = any(op[1] != GENERATED_AT for op in ops)
            if news or (ops and now - self.sent_at >= self.heartbeat):
                self.seq += 1
                self.writer.send({"seq": self.seq, "delta": ops})
                self.sent, self.sent_at = doc, now
        for ident in wanted:
            self._answer(ident, True, None, seq=self.seq)

    def _refresh_failed(self, failure: str) -> None:
        self.writer.send({"notice": f"refresh failed: {failure}"})

    def _answer(self, ident, ok: bool, error: str | None, **extra) -> None:
        self.writer.send({"result": ident, "ok": ok, "error": error, **extra})

    # -- commands ------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes from stdin: each whole line is one command."""
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > MAX_COMMAND_BYTES:
                    if not self._skipping:
                        self._answer(None, False, f"command over {MAX_COMMAND_BYTES} bytes")
                    self._skipping, self._buffer = True, b""
                return
            line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
            if self._skipping:  # the end of a line already answered as too long
                self._skipping = False
                continue
            if len(line) > MAX_COMMAND_BYTES:
                self._answer(None, False, f"command over {MAX_COMMAND_BYTES} bytes")
            elif line.strip():
                self.command(line)

    def command(self, line: bytes) -> None:
        """One command line; every one is answered (now, or when its work ends)."""
        from ..base.values import parse_json

        ident = None
        try:
            try:
                cmd = parse_json(line)
            except (ValueError, UnicodeDecodeError):
                raise CommandError("a command must be one JSON object per line") from None
            if not isinstance(cmd, dict):
                raise CommandError("a command must be one JSON object per line")
            ident = cmd.get("id")
            if isinstance(ident, bool) or not isinstance(ident, (str, int, float, type(None))):
                ident = None
                raise CommandError('"id" must be a string or a number')
            name = cmd.get("cmd")
            handler = (
                {
                    "refresh": self._cmd_refresh,
                    "select": self._cmd_select,
                    "chart": self._cmd_chart,
                    "push": self._cmd_push,
                    "stop": self._cmd_stop,
                    "resume": self._cmd_resume,
                }.get(name)
                if isinstance(name, str)
                else None
            )
            if handler is None:
                shown = json.dumps(value_text(name, 40))
                raise CommandError(f"unknown command {shown} (one of {', '.join(COMMANDS)})")
            handler(ident, cmd)
        except CommandError as exc:
            self._answer(ident, False, str(exc))

    def _run_dir(self, cmd: dict) -> str:
        run = _text(cmd.get("run"), "run")
        if run not in self.runs:
            raise CommandError(f"no run {run} under {self.root}")
        return run

    def _cmd_refresh(self, ident, cmd: dict) -> None:
        self._wanted.append(ident)

    def _cmd_select(self, ident, cmd: dict) -> None:
        run = cmd.get("run")
        self.selected = None if run is None else self._run_dir(cmd)
        self._wanted.append(ident)

    def _cmd_chart(self, ident, cmd: dict) -> None:
        from ..picture.charts import ChartRequest

        try:
            request = ChartRequest.from_json(
                {k: cmd[k] for k in ("runs", "metrics", "defaults") if k in cmd}
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.charts = request if request.runs else None
        self._wanted.append(ident)

    def _cmd_push(self, ident, cmd: dict) -> None:
        from ..hub.push import PushRequest, file_for_arg

        run_dir = self._run_dir(cmd)
        file = _text(cmd.get("file"), "file", required=False)
        request = PushRequest(run_dir, file_for_arg(file, run_dir))
        queue = self._queue()
        with self._lock:
            self._pushes[id(request)] = ident
        try:
            queue.submit(request)
        except RuntimeError as exc:  # closed: stdin ended while this line was read
            with self._lock:
                self._pushes.pop(id(request), None)
            raise CommandError(str(exc)) from None

    def _queue(self):
        if self._push_queue is None:
            from ..hub.push_queue import PushQueue

            self._push_queue = PushQueue(self.settings, self._push_event)
        return self._push_queue

    def _push_event(self, event) -> None:
        """From the queue's event thread, in order: which commands a push answers (a newer
        request for a queued file replaces it: both commands get that push's result)."""
        req = event.request
        key = (os.path.abspath(req.run_dir), req.file)  # what the queue replaces by
        with self._lock:
            if event.kind == "queued":
                self._push_waiting.setdefault(key, []).append(self._pushes.pop(id(req), None))
                return
            if event.kind == "started":
                self._push_running[id(req)] = self._push_waiting.pop(key, [])
                return
            idents = list(self._push_running.get(id(req), []))
            if event.kind == "finished":
                self._push_running.pop(id(req), None)
                self._push_progress_at.pop(id(req), None)
            else:
                now = self.clock()
                last = self._push_progress_at.get(id(req))
                phase_changed = event.bytes_total == 0
                if not phase_changed and last is not None and now - last < PROGRESS_EVERY_S:
                    return
                self._push_progress_at[id(req)] = now
        for ident in idents:
            if event.kind == "finished":
                result = event.result
                self._answer(ident, result.ok, result.error, push=result.to_json())
            else:
                self.writer.send(
                    {
                        "progress": ident,
                        "cmd": "push",
                        "phase": event.phase,
                        "done": event.bytes_done,
                        "total": event.bytes_total,
                    }
                )

    def _cmd_stop(self, ident, cmd: dict) -> None:
        run_dir = self._run_dir(cmd)
        stop_fn = self._stop_fn
        if stop_fn is None:
            from ..launch.stop import stop_run as stop_fn

        last_phase = [None]

        def progress(phase: str, seconds_left: float | None) -> None:
            if phase != last_phase[0]:  # the phases, not the countdown: the other end counts
                last_phase[0] = phase
                self.writer.send(
                    {"progress": ident, "cmd": "stop", "phase": phase, "seconds_left": seconds_left}
                )

        def work() -> None:
            try:
                result = stop_fn(run_dir, self.settings, on_progress=progress, by="fleet")
            except Exception as exc:  # stop_run reports its failures; a bug must not vanish
                self._answer(ident, False, f"stop failed: {one_line(exc)}")
                return
            self._answer(ident, result.ok, result.error, stop=result.to_json())

        self._start(work, "rgpu-agent-stop")

    def _cmd_resume(self, ident, cmd: dict) -> None:
        from ..launch.resume import ResumeError

        run_dir = self._run_dir(cmd)
        data = _text(cmd.get("data"), "data", required=False)
        device = _text(cmd.get("device"), "device", required=False)
        choice = _text(cmd.get("from"), "from", required=False)
        check = cmd.get("check", False)
        if not isinstance(check, bool):
            raise CommandError('"check" must be true or false')
        plan_fn, start_fn = self._plan_resume_fn, self._start_resume_fn
        if plan_fn is None or start_fn is None:
            from ..launch.resume import plan_resume, start_resume

            plan_fn, start_fn = plan_fn or plan_resume, start_fn or start_resume

        def work() -> None:
            try:
                choose = {"choice": choice} if choice is not None else {}
                if check:
                    plan = plan_fn(run_dir, data=data, device=device, **choose)
                    self._answer(ident, True, None, plan=plan.to_json())
                    return
                plan, record = start_fn(run_dir, data=data, device=device, **choose)
            except ResumeError as exc:
                self._answer(ident, False, str(exc))
                return
            except Exception as exc:
                self._answer(ident, False, f"resume failed: {one_line(exc)}")
                return
            self._answer(ident, True, None, plan=plan.to_json(), launch=record.to_json())

        self._start(work, "rgpu-agent-resume")

    def _start(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._lock:
            self._workers = [t for t in self._workers if t.is_alive()]
            self._workers.append(thread)
        thread.start()

    # -- the loop -----------------------------------------------------------------------

    def run(self, stop, stdin_fd: int) -> None:
        """Hello, then refresh every `interval` (sooner when a command asks) and read
        commands in between, until stdin ends or `stop` (a core.away.headless.Stop) is
        requested; then `finish`."""
        self.writer.send(self.hello())
        due = self.clock()
        eof = False
        while not stop.requested and not eof:
            if self.clock() >= due or self._wanted:
                began = self.clock()
                self.tick()
                due = began + self.interval
            if stop.wait(due - self.clock(), (stdin_fd,)):
                try:
                    data = os.read(stdin_fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    self.feed(data)
                else:
                    eof = True
        self.finish(wait=FINISH_WAIT_S if eof else 0.0)

    def finish(self, wait: float) -> None:
        """Queued pushes are dropped; a push or stop in flight gets up to `wait` seconds."""
        deadline = time.monotonic() + wait
        if self._push_queue is not None:
            self._push_queue.close(timeout=wait)
        with self._lock:
            workers = list(self._workers)
        for thread in workers:
            thread.join(max(0.0, deadline - time.monotonic()))
