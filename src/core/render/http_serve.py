"""A small HTTP server for one WSGI app that slow, silent or numerous clients cannot take
over: what `rgpu-tui exporter` serves /metrics with (core.render.metrics_app).

- One thread runs an asyncio loop that holds every connection: no thread and no stack per
  client, only its socket.
- At most `max_connections` are open (and never more than a quarter of the file
  descriptors the process may open, less a reserve). One more closes the oldest connection
  whose request has not arrived whole yet, so a client that sends its request at once (a
  Prometheus scrape) is always let in, however many slow ones are waiting; when every open
  connection is being answered, the new one is closed.
- Each request must arrive whole (its request line and headers: a body is never read)
  within `deadline` seconds of its connection, however it drips (a header line every 2 s
  never resets it), and its answer must be taken within `deadline` seconds more; then the
  connection is closed.
- The request is parsed by h11 (a maintained HTTP/1.1 parser: a head over 16 KB, a
  malformed or smuggling request is a 400); the app runs on a pool of `workers` threads
  (it may wait for a slow read); every answer says `Connection: close`.
- A client dropped costs at most one short line: the first says why, later ones are
  counted and told in one line at most every `quiet` seconds (`log`); no request is logged,
  and nothing from a client reaches the log. An error of the loop itself is one line too,
  never a traceback.

Why not a maintained server (evaluated for issue 34): prometheus_client's own
(`start_http_server`) and wsgiref are a thread per connection with no cap and a per-read
timeout; uvicorn has no deadline for the request to arrive (its keep-alive timeout is
reset by every byte received, and `limit_concurrency` answers 503, the scrape included);
waitress's `channel_timeout` is an inactivity timeout and its `connection_limit` stops
accepting (the scrape waits in the backlog); hypercorn and aiohttp bring several
packages and no whole-request deadline either. This is the bounded loop the issue asks
for, over h11 (pure Python, already installed with huggingface_hub).
"""

from __future__ import annotations

import asyncio
import io
import resource
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from urllib.parse import unquote

import h11

from ..base.text import printable

MAX_CONNECTIONS = 64
DEADLINE_S = 5.0  # for a request to arrive whole, and again for its answer to be taken
WORKERS = 2
QUIET_S = 60.0  # drops are told at most once in this long
MAX_HEAD = 16 * 1024  # request line and headers
FD_RESERVE = 64  # descriptors left for the rest of the process (runs, NVML, ...)

REASONS = {
    "deadline": "sent no whole request within {deadline:g} s",
    "malformed": "sent a malformed request",
    "room": "made room for a newer one ({cap} connections open)",
    "busy": "refused: {cap} connections open, all being answered",
    "slow_reader": "did not take its answer within {deadline:g} s",
    "gone": "went away before its answer",
}


def connection_cap(wanted: int = MAX_CONNECTIONS) -> int:
    """`wanted`, or fewer when the process may open few files (RLIMIT_NOFILE)."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        return wanted
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(4, min(wanted, (soft - FD_RESERVE) // 4))


class DropLog:
    """Dropped clients told in at most one line every `quiet` seconds."""

    def __init__(self, log: Callable[[str], None], quiet: float, words: dict[str, str]):
        self._log = log
        self._quiet = quiet
        self._words = words
        self._counts: dict[str, int] = {}
        self._told_at: float | None = None
        self.total = 0

    def note(self, kind: str, now: float) -> None:
        self.total += 1
        if self._told_at is None:
            self._told_at = now
            why = self._words.get(kind, kind)
            self._say(
                f"a client dropped: {why} (dropped clients are told at most once every "
                f"{self._quiet:g} s)"
            )
            return
        self._counts[kind] = self._counts.get(kind, 0) + 1
        self.flush(now)

    def flush(self, now: float, *, force: bool = False) -> None:
        """Tell the drops counted since the last line, if `quiet` seconds have passed."""
        if not self._counts:
            return
        if not force and self._told_at is not None and now - self._told_at < self._quiet:
            return
        n = sum(self._counts.values())
        parts = ", ".join(f"{c} {self._words.get(k, k)}" for k, c in self._counts.items())
        self._counts.clear()
        self._told_at = now
        self._say(f"{n} more client{'s' if n != 1 else ''} dropped: {parts}")

    def _say(self, text: str) -> None:
        try:
            self._log(text)
        except Exception:  # a closed stderr: nothing to tell it with
            pass


class _Conn:
    __slots__ = ("writer", "task", "complete")

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.task = asyncio.current_task()
        self.complete = False  # its request arrived whole: it is being answered


class BoundedHTTPServer:
    """Bound and listening at construction (OSError when it cannot bind); serve_forever on
    a thread, shutdown from another, server_close: socketserver's names."""

    def __init__(
        self,
        host: str,
        port: int,
        app: Callable,
        *,
        family: int = socket.AF_INET,
        max_connections: int = MAX_CONNECTIONS,
        deadline: float = DEADLINE_S,
        workers: int = WORKERS,
        quiet: float = QUIET_S,
        log: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.address_family = family
        self.max_connections = connection_cap(max_connections)
        self.deadline = deadline
        self.workers = workers
        self._clock = clock
        words = {
            k: v.format(deadline=deadline, cap=self.max_connections) for k, v in REASONS.items()
        }
        self.drops = DropLog(log or _stderr, quiet, words)
        self._quiet = quiet
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.socket = sock
        self.server_address = sock.getsockname()
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]
        self._conns: dict[int, _Conn] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopping = False
        self._done = threading.Event()
        self._pool: ThreadPoolExecutor | None = None

    # -- lifecycle (socketserver's names) -------------------------------------------------

    def serve_forever(self) -> None:
        loop = asyncio.new_event_loop()
        with self._lock:
            if self._stopping:
                loop.close()
                self._done.set()
                return
            self._loop = loop
        loop.set_exception_handler(self._loop_error)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="rgpu-http")
        try:
            loop.run_until_complete(self._serve())
        finally:
            self._pool.shutdown(wait=False)
            loop.close()
            self._done.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._stopping = True
            loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._request_stop)
        except RuntimeError:  # the loop already closed
            pass
        self._done.wait(timeout)

    def server_close(self) -> None:
        self.socket.close()

    def _request_stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        if self._stopping:
            return
        server = await asyncio.start_server(self._client, sock=self.socket, limit=MAX_HEAD)
        try:
            while not self._stop.is_set():
                try:
                    await asyncio.wait_for(self._stop.wait(), self._quiet)
                except asyncio.TimeoutError:
                    pass
                self.drops.flush(self._clock())
        finally:
            self.drops.flush(self._clock(), force=True)  # what was counted, said at the end
            server.close()
            for conn in list(self._conns.values()):
                conn.writer.transport.abort()
                if conn.task is not None:
                    conn.task.cancel()
            self._conns.clear()
            await asyncio.sleep(0)

    def _loop_error(self, loop, context: dict) -> None:
        # asyncio's own reports (an accept that ran out of descriptors, a callback that
        # raised): one line through the drop log's rate, never a traceback
        exc = context.get("exception")
        text = context.get("message") or "error"
        if exc is not None:
            text = f"{text}: {' '.join(str(exc).split())[:120]}"
        self.drops.note(printable(text[:160]), self._clock())

    # -- one client -----------------------------------------------------------------------

    def _admit(self, conn: _Conn) -> bool:
        if len(self._conns) < self.max_connections:
            return True
        for key, old in self._conns.items():  # oldest first
            if not old.complete:
                del self._conns[key]
                old.writer.transport.abort()
                if old.task is not None:
                    old.task.cancel()
                self.drops.note("room", self._clock())
                return True
        return False

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer)
        if not self._admit(conn):
            writer.transport.abort()
            self.drops.note("busy", self._clock())
            return
        key = id(conn)
        self._conns[key] = conn
        kind = None
        try:
            kind = await self._answer(conn, reader, writer)
        except asyncio.CancelledError:
            kind = None  # made room, or the server stops: told where it was decided
        except Exception as exc:  # a bug of ours: one line, the others go on
            kind = f"an error answering it ({printable(' '.join(str(exc).split())[:80])})"
        finally:
            self._conns.pop(key, None)
            writer.transport.abort()
        if kind is not None:
            self.drops.note(kind, self._clock())

    async def _answer(self, conn: _Conn, reader, writer) -> str | None:
        http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        try:
            request = await asyncio.wait_for(self._request(http, reader), self.deadline)
        except asyncio.TimeoutError:
            return "deadline"
        except h11.RemoteProtocolError:
            await self._send_bad_request(http, writer)
            return "malformed"
        if request is None:  # closed before a whole request: nothing to answer
            return None
        conn.complete = True
        loop = asyncio.get_running_loop()
        status, headers, body = await loop.run_in_executor(
            self._pool, self._call_app, request, writer.get_extra_info("peername")
        )
        data = http.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
        if request.method != b"HEAD":
            data += http.send(h11.Data(data=body))
        data += http.send(h11.EndOfMessage())
        writer.write(data)
        try:
            await asyncio.wait_for(writer.drain(), self.deadline)
        except asyncio.TimeoutError:
            return "slow_reader"
        except OSError:
            return "gone"
        return None

    async def _request(self, http: h11.Connection, reader) -> h11.Request | None:
        while True:
            event = http.next_event()
            if isinstance(event, h11.Request):
                return event
            if event is h11.NEED_DATA:
                data = await reader.read(4096)
                http.receive_data(data)
                if not data:
                    event = http.next_event()
                    if isinstance(event, h11.Request):
                        return event
                    return None
            elif isinstance(event, h11.ConnectionClosed):
                return None

    async def _send_bad_request(self, http: h11.Connection, writer) -> None:
        body = b"bad request\n"
        headers = [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        headers.append(("Connection", "close"))
        try:
            if http.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                data = http.send(
                    h11.Response(status_code=400, headers=headers, reason=_reason(400))
                )
                data += http.send(h11.Data(data=body)) + http.send(h11.EndOfMessage())
                writer.write(data)
        except h11.LocalProtocolError:
            pass

    def _call_app(self, request: h11.Request, peer) -> tuple[int, list, bytes]:
        """The WSGI app on a worker thread: (status, headers, body)."""
        target = request.target.decode("latin-1")
        path, _, query = target.partition("?")
        environ = {
            "REQUEST_METHOD": request.method.decode("latin-1"),
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path, "latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": self.server_name,
            "SERVER_PORT": str(self.server_port),
            "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("latin-1"),
            "REMOTE_ADDR": str(peer[0]) if peer else "",
            "CONTENT_LENGTH": "",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(b""),
            "wsgi.errors": io.StringIO(),
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in request.headers:
            key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
            text = value.decode("latin-1")
            environ[key] = f"{environ[key]},{text}" if key in environ else text
        got: list = []

        def start_response(status, headers, exc_info=None):
            got[:] = [status, headers]

        result = self.app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status_line, app_headers = got
        headers = [(k, v) for k, v in app_headers if k.lower() not in _FRAMING]
        headers += [("Content-Length", str(len(body))), ("Connection", "close")]
        return int(status_line.split(None, 1)[0]), headers, body


_FRAMING = ("content-length", "transfer-encoding", "connection")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
