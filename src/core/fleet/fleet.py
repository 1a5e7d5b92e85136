"""The local end of the fleet: one HostLink per machine, each an `ssh HOST rgpu-tui agent
ROOT` subprocess (core.fleet.ssh.ssh_argv: an argv, no local shell) whose JSON lines
(core.fleet.agent) it reads on a thread of its own.

A link keeps the host's latest full Snapshot JSON (the agent's first snapshot, then each
delta applied with core.fleet.delta.apply: a new document each time, never changed once handed
out), at most DOC_MAX_BYTES of it as JSON (a delta grows the document by at most its own
size, so the document is measured only when the deltas since the last measure could have
taken it past the bound; past it, the link drops with one line and starts again from a
fresh snapshot), whether the host is reachable, the one-line error when it is not, and since when
either is so. A link that drops (ssh ended, the agent died, no line for three heartbeats,
a line that does not parse) is started again after a pause that doubles from 1 s to
60 s and starts over at 1 s once a connection delivered a snapshot. An agent of another
schema_version is refused in one line ("host h1 runs rgpu-tui 0.2.0 (schema 2); install
the same version (0.1.0 here)"), then asked again only at the longest pause.

Commands go through `HostLink.send(cmd)`: it returns a concurrent.futures.Future that
always ends in the agent's result object ({"result": id, "ok": ..., "error": ...}); when
the link is down or drops before the answer, in {"ok": false, "error": "..."} made here.
`on_change(link)` (from the link's thread) says the state changed: the place for the
fleet TUI to post a message. `fleet --json` and the table use `Fleet.wait_first`.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from ..base.hosts import HostSpec
from ..base.text import printable
from ..base.values import parse_json, value_text
from ..model.snapshot import SCHEMA_VERSION
from .delta import DeltaError, apply
from .ssh import remote_line, ssh_argv

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0)
HELLO_GRACE_S = 30.0  # after ConnectTimeout: the remote login and the agent's start
STALL_HEARTBEATS = 3  # no line for this many heartbeats: the link is stalled
MAX_LINE_BYTES = 32 * 1024 * 1024
DOC_MAX_BYTES = 64 * 1024 * 1024  # a host's Snapshot document, as JSON; past it the link drops
DOC_MEASURE_BYTES = 4 * 1024 * 1024  # delta bytes between two measures of a document near it
MAX_JUNK_LINES = 200  # lines before the hello that are not it (a chatty login shell)
STDERR_KEEP = 20
STDERR_LINE_BYTES = 4096
ERROR_CHARS = 300
CLOSE_GRACE_S = 2.0


def scrub(text: str) -> str:
    """One line, printable, at most ERROR_CHARS characters."""
    line = printable(" ".join(text.split()))
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 3] + "..."


def local_version() -> str:
    from .agent import agent_version

    return agent_version()


@dataclass(frozen=True)
class HostState:
    """A link's state at one moment (what a screen or `fleet --json` shows)."""

    name: str
    root: str
    reachable: bool
    error: str | None
    since: float | None  # wall clock: when `reachable` last changed (first try: its start)
    snapshot: dict | None  # the latest full Snapshot JSON (kept while unreachable: stale)
    seq: int
    version: str | None  # the agent's rgpu-tui version
    last_line_at: float | None  # wall clock of the agent's last line
    connects: int  # ssh processes started
    bytes_in: int  # bytes read from the agent, all connections
    settled: bool  # the first try ended: a snapshot, or an error

    def to_json(self) -> dict:
        return {
            "host": self.name,
            "root": self.root,
            "reachable": self.reachable,
            "error": self.error,
            "since": _iso(self.since),
            "snapshot": self.snapshot if self.reachable else None,
        }


def _iso(ts: float | None) -> str | None:
    from ..base.formatting import iso

    return iso(ts) if ts is not None else None


class _Dropped(Exception):
    """The connection is over; str(exc) is why (one line)."""


class HostLink:
    def __init__(
        self,
        spec: HostSpec,
        *,
        ssh_config: str | None = None,
        connect_timeout: float = 10.0,
        ssh: str = "ssh",
        on_change: Callable[[HostLink], None] | None = None,
        reconnect: bool = True,
        backoff: tuple[float, ...] = BACKOFF_S,
        hello_grace: float = HELLO_GRACE_S,
    ) -> None:
        self.spec = spec
        self.argv = ssh_argv(spec, ssh_config=ssh_config, connect_timeout=connect_timeout, ssh=ssh)
        self.connect_timeout = connect_timeout
        self.reconnect = reconnect
        self.backoff = backoff
        self.hello_grace = hello_grace
        self._on_change = on_change
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closing = False
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None
        self._stdin_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[Future, Callable | None]] = {}
        self._stderr: deque[str] = deque(maxlen=STDERR_KEEP)
        # the state (under _lock)
        self._reachable = False
        self._error: str | None = None
        self._since: float | None = None
        self._snapshot: dict | None = None
        self._seq = -1
        self._version: str | None = None
        self._last_line_at: float | None = None
        self._connects = 0
        self._bytes_in = 0
        self._settled = False
        self._settled_event = threading.Event()
        self._skew = False  # the last try found an agent of another schema
        self._doc_bytes = 0  # the document's size as JSON when last measured (or its line)
        self._doc_unmeasured = 0  # delta bytes applied since

    # -- public ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    def state(self) -> HostState:
        with self._lock:
            return HostState(
                name=self.spec.name,
                root=self.spec.root,
                reachable=self._reachable,
                error=self._error,
                since=self._since,
                snapshot=self._snapshot,
                seq=self._seq,
                version=self._version,
                last_line_at=self._last_line_at,
                connects=self._connects,
                bytes_in=self._bytes_in,
                settled=self._settled,
            )

    def start(self) -> HostLink:
        self._since = time.time()
        self._thread = threading.Thread(
            target=self._run, name=f"rgpu-fleet-{self.spec.name}", daemon=True
        )
        self._thread.start()
        return self

    def wait_settled(self, timeout: float) -> bool:
        """Until the first try ended (a snapshot, or an error); False after `timeout`."""
        return self._settled_event.wait(timeout)

    def give_up_waiting(self, why: str) -> None:
        """The first try took too long (`fleet --json`'s deadline): say so as the error."""
        with self._lock:
            if self._settled:
                return
            tail = self._stderr_line()
            self._error = scrub(f"{why}: {tail}" if tail else why)
            self._settle()

    def send(self, cmd: dict, on_progress: Callable[[dict], None] | None = None) -> Future:
        """Send one command (a dict with "cmd"); the Future ends in its result object.
        on_progress(line) gets its progress lines, from the link's thread."""
        future: Future = Future()
        with self._lock:
            proc = self._proc if self._reachable else None
            ident = next(self._ids)
            if proc is None:
                future.set_result(self._failed(ident, f"{self.spec.name} is not reachable"))
                return future
            self._pending[ident] = (future, on_progress)
        data = json.dumps({**cmd, "id": ident}, separators=(",", ":")).encode() + b"\n"
        try:
            with self._stdin_lock:
                proc.stdin.write(data)
                proc.stdin.flush()
        except (OSError, ValueError):
            with self._lock:
                self._pending.pop(ident, None)
            if not future.done():
                future.set_result(self._failed(ident, f"the link to {self.spec.name} is down"))
        return future

    def close(self, timeout: float = 5.0) -> None:
        """Stop the link: the agent's stdin is closed (it ends, runs untouched), ssh is
        ended if it lingers; pending commands end with an error."""
        with self._lock:
            self._closing = True
            self._wake.notify_all()
            proc = self._proc
        if proc is not None:
            _end(proc)
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the link's thread ----------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while True:
            got_snapshot = False
            try:
                got_snapshot = self._connect_once()
            except Exception as exc:  # a bug here must not end the link for good
                self._set_down(f"fleet link failed: {type(exc).__name__}: {exc}")
            with self._lock:
                if self._closing or not self.reconnect:
                    self._settle()
                    break
            failures = 0 if got_snapshot else failures + 1
            delay = self.backoff[min(max(failures - 1, 0), len(self.backoff) - 1)]
            if self._skew:
                delay = self.backoff[-1]
            with self._lock:
                deadline = time.monotonic() + delay
                while not self._closing and time.monotonic() < deadline:
                    self._wake.wait(deadline - time.monotonic())
                if self._closing:
                    break
        self._fail_pending("the fleet view is closing")

    def _connect_once(self) -> bool:
        """One ssh process, read until it ends. True when it delivered a snapshot."""
        self._skew = False
        self._stderr.clear()
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C in the terminal is the fleet's, not ssh's
            )
        except OSError as exc:
            self._set_down(f"cannot start {self.argv[0]}: {exc.strerror or exc}")
            return False
        with self._lock:
            if self._closing:
                _end(proc)
                return False
            self._proc = proc
            self._connects += 1
        err_thread = threading.Thread(
            target=self._read_stderr, args=(proc,), name=f"rgpu-fleet-{self.spec.name}-err",
            daemon=True,
        )  # fmt: skip
        err_thread.start()
        got = [False]
        try:
            self._read(proc, got)
            why = None
        except _Dropped as exc:
            why = str(exc)
        _end(proc, grace=0.5 if why else CLOSE_GRACE_S)
        err_thread.join(2.0)
        with self._lock:
            self._proc = None
            closing = self._closing
        if not closing:
            self._set_down(why or self._exit_reason(proc, got[0]))
        return got[0]

    def _read(self, proc: subprocess.Popen, got: list) -> None:
        fd = proc.stdout.fileno()
        buffer = b""
        hello = None
        junk = 0
        started = time.monotonic()
        last = started
        while True:
            if hello is None:
                limit = started + self.connect_timeout + self.hello_grace
                if time.monotonic() > limit:
                    raise _Dropped(self._with_stderr("no answer from the agent"))
            else:
                stall = STALL_HEARTBEATS * hello
                if time.monotonic() - last > stall:
                    raise _Dropped(f"no data for {stall:.0f} s (the link stalled)")
            with self._lock:
                if self._closing:
                    return
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(fd, 256 * 1024)
            if not chunk:
                return  # EOF: ssh or the agent ended
            last = time.monotonic()
            buffer += chunk
            with self._lock:
                self._bytes_in += len(chunk)
                self._last_line_at = time.time()
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    if len(buffer) > MAX_LINE_BYTES:
                        raise _Dropped(f"a line from the agent over {MAX_LINE_BYTES} bytes")
                    break
                line, buffer = buffer[:end], buffer[end + 1 :]
                if hello is None:
                    hello = self._hello(line)
                    if hello is None:
                        junk += 1
                        if junk > MAX_JUNK_LINES:
                            raise _Dropped("the remote command does not speak the agent's lines")
                    continue
                self._line(line, got)

    def _hello(self, line: bytes) -> float | None:
        """The heartbeat (seconds) when `line` is the agent's hello; None for a line to
        skip. Raises _Dropped for an agent of another schema."""
        try:
            obj = parse_json(line)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(obj, dict) or obj.get("agent") != "rgpu-tui":
            return None
        version = obj.get("version")
        version = scrub(version) if isinstance(version, str) else "?"
        schema = obj.get("schema_version")
        if schema != SCHEMA_VERSION:
            self._skew = True
            raise _Dropped(
                f"host {self.spec.name} runs rgpu-tui {version} (schema {scrub(str(schema))}); "
                f"install the same version ({local_version()} here)"
            )
        with self._lock:
            self._version = version
        heartbeat = obj.get("heartbeat")
        if isinstance(heartbeat, (int, float)) and not isinstance(heartbeat, bool):
            return min(max(float(heartbeat), 1.0), 3600.0)
        return 10.0

    def _line(self, line: bytes, got: list) -> None:
        try:
            obj = parse_json(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _Dropped(f"a line from the agent is not JSON ({scrub(str(exc))})") from None
        if not isinstance(obj, dict):
            raise _Dropped("a line from the agent is not a JSON object")
        if "snapshot" in obj or "delta" in obj:
            self._apply(obj, got, len(line))
        elif "result" in obj:
            self._result(obj)
        elif "progress" in obj:
            with self._lock:
                entry = self._pending.get(obj.get("progress"))
            if entry is not None and entry[1] is not None:
                try:
                    entry[1](obj)
                except Exception:
                    pass
        elif "notice" in obj:
            with self._lock:
                self._stderr.append(scrub(value_text(obj["notice"], STDERR_LINE_BYTES)))
        # other lines: from a newer agent of the same schema; skipped

    def _apply(self, obj: dict, got: list, size: int = 0) -> None:
        seq = obj.get("seq")
        if "snapshot" in obj:
            doc = obj["snapshot"]
            if not isinstance(doc, dict) or type(seq) is not int:
                raise _Dropped("a snapshot line from the agent is malformed")
            self._doc_bytes, self._doc_unmeasured = size, 0
        else:
            with self._lock:
                base, expected = self._snapshot if got[0] else None, self._seq + 1
            if base is None or seq != expected:
                raise _Dropped(f"delta {seq!r} out of order (expected {expected})")
            try:
                doc = apply(base, obj["delta"])
            except DeltaError as exc:
                raise _Dropped(f"a delta from the agent does not apply: {exc}") from None
            if not isinstance(doc, dict):
                raise _Dropped("a delta from the agent left no snapshot")
            self._bound(doc, size)
        with self._lock:
            self._snapshot, self._seq = doc, seq
            if not self._reachable:
                self._reachable, self._error, self._since = True, None, time.time()
            self._settle()
        got[0] = True
        self._changed()

    def _bound(self, doc: dict, size: int) -> None:
        """Raise _Dropped when `doc` (after a delta line of `size` bytes) is over
        DOC_MAX_BYTES as JSON; measured only when it could be (see the module doc)."""
        self._doc_unmeasured += size
        if self._doc_bytes + self._doc_unmeasured <= DOC_MAX_BYTES:
            return
        if self._doc_unmeasured < DOC_MEASURE_BYTES and self._doc_bytes <= DOC_MAX_BYTES:
            return  # at most DOC_MEASURE_BYTES past the bound until the next measure
        measured = len(json.dumps(doc, separators=(",", ":")))
        self._doc_bytes, self._doc_unmeasured = measured, 0
        if measured > DOC_MAX_BYTES:
            raise _Dropped(
                f"the host's snapshot grew past {DOC_MAX_BYTES >> 20} MB ({measured >> 20} MB): "
                "the link is dropped and starts again"
            )

    def _result(self, obj: dict) -> None:
        with self._lock:
            entry = self._pending.pop(obj.get("result"), None) if _hashable(obj) else None
        if entry is not None and not entry[0].done():
            entry[0].set_result(obj)

    def _read_stderr(self, proc: subprocess.Popen) -> None:
        try:
            while raw := proc.stderr.readline(STDERR_LINE_BYTES):  # bounded: a line without
                text = scrub(raw.decode("utf-8", "replace"))  # an end comes in pieces
                if text:
                    with self._lock:
                        self._stderr.append(text)
        except (OSError, ValueError):
            pass

    # -- state changes --------------------------------------------------------------------

    def _stderr_line(self) -> str | None:
        """ssh's (or the agent's) last line on stderr worth showing (under _lock)."""
        for text in reversed(self._stderr):
            if not text.startswith("Warning: Permanently added"):
                return text
        return None

    def _with_stderr(self, why: str) -> str:
        with self._lock:
            tail = self._stderr_line()
        return scrub(f"{why}: {tail}" if tail else why)

    def _exit_reason(self, proc: subprocess.Popen, got_snapshot: bool) -> str:
        rc = proc.returncode
        with self._lock:
            tail = self._stderr_line()
        if rc == 255:  # ssh's own failure: its message says it best
            return scrub(tail or "ssh failed (status 255)")
        if rc == 127:
            return scrub(
                f"{remote_line(self.spec).split()[0]} is not installed on {self.spec.name} "
                f"({tail or 'command not found'}): install rgpu-tui there (pipx) or set "
                "remote_command"
            )
        what = "the agent ended" if got_snapshot else "the agent did not start"
        status = f" (status {rc})" if rc is not None else ""
        return scrub(f"{what}{status}: {tail}" if tail else f"{what}{status}")

    def _set_down(self, why: str) -> None:
        with self._lock:
            if self._reachable or self._since is None:
                self._since = time.time()
            self._reachable = False
            self._error = scrub(why)
            self._settle()
        self._fail_pending(f"the link to {self.spec.name} dropped: {scrub(why)}")
        self._changed()

    def _settle(self) -> None:
        """Under _lock: the first try is over."""
        if not self._settled:
            self._settled = True
            self._settled_event.set()

    def _fail_pending(self, why: str) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for ident, (future, _progress) in pending.items():
            if not future.done():
                future.set_result(self._failed(ident, why))

    @staticmethod
    def _failed(ident: int, why: str) -> dict:
        return {"result": ident, "ok": False, "error": why}

    def _changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:
                pass


def _hashable(obj: dict) -> bool:
    key = obj.get("result")
    return key is None or isinstance(key, (str, int, float))


def _end(proc: subprocess.Popen, grace: float = CLOSE_GRACE_S) -> None:
    """Close the agent's stdin (it ends by itself), then SIGTERM, then SIGKILL ssh."""
    try:
        proc.stdin.close()
    except (OSError, ValueError):
        pass
    for sig, wait in ((None, grace), (signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        if sig is not None:
            try:
                proc.send_signal(sig)
            except OSError:
                pass
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except (OSError, ValueError):
            pass


class Fleet:
    """The links of several hosts, started together."""

    def __init__(self, specs, **link_options) -> None:
        self.links = [HostLink(spec, **link_options) for spec in specs]

    def start(self) -> Fleet:
        for link in self.links:
            link.start()
        return self

    def wait_first(self, timeout: float) -> None:
        """Until every host's first try ended (a snapshot or an error), at most `timeout`
        seconds for all (they run at once); a host still trying then gets that as its
        error."""
        deadline = time.monotonic() + timeout
        for link in self.links:
            if not link.wait_settled(max(0.0, deadline - time.monotonic())):
                link.give_up_waiting(f"no snapshot within {timeout:g} s")

    def states(self) -> list[HostState]:
        return [link.state() for link in self.links]

    def to_json(self) -> dict:
        return {"hosts": [state.to_json() for state in self.states()]}

    def close(self) -> None:
        threads = []
        for link in self.links:
            t = threading.Thread(target=link.close, daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(10.0)
