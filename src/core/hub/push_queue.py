"""PushQueue: one upload at a time in a daemon thread, its events in order.

Pushes in one process share one HTTP client (core.hub.hub_client), so they run one at a
time: the app keeps one queue and submits every push (a key, auto-push) to it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .push import PushRequest, PushResult, push


@dataclass(frozen=True)
class PushEvent:
    """What PushQueue reports, in order, from its event thread.

    kind "queued": request accepted (or it replaced a queued one for the same file);
    "started": its push began; "progress": bytes_done/bytes_total of the upload (0/0
    while staging) and phase ("settling", "staging", "connecting", "uploading");
    "finished": result holds the PushResult."""

    kind: str
    request: PushRequest
    bytes_done: int = 0
    bytes_total: int = 0
    phase: str | None = None
    result: PushResult | None = None


def _key(req: PushRequest) -> tuple[str, str]:
    return os.path.abspath(req.run_dir), req.file


class PushQueue:
    """One upload at a time in a daemon thread. A request for a (run_dir, file) that
    is already queued (not started) replaces it in place.

    on_event(PushEvent) is called, in order, from one background thread (never the
    caller's): "queued" then "started", "progress"..., "finished" for each request.
    `settings` may be reassigned; each push reads it when it starts."""

    def __init__(
        self,
        settings,
        on_event: Callable[[PushEvent], None],
        *,
        push_fn: Callable[..., PushResult] | None = None,
        **push_kwargs,
    ):
        self.settings = settings
        self._on_event = on_event
        self._push = push_fn or push
        self._kwargs = push_kwargs
        self._cond = threading.Condition()
        self._queue: list[PushRequest] = []
        self._current: PushRequest | None = None
        self._closed = False
        self._worker: threading.Thread | None = None
        self._events: list[PushEvent | None] = []
        self._events_cond = threading.Condition()
        self._dispatcher: threading.Thread | None = None

    # -- public
    def submit(self, req: PushRequest) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the push queue is closed")
            key = _key(req)
            for i, queued in enumerate(self._queue):
                if _key(queued) == key:
                    self._queue[i] = req
                    break
            else:
                self._queue.append(req)
            self._emit(PushEvent("queued", req))
            self._start_threads()
            self._cond.notify_all()

    def pending(self) -> list[PushRequest]:
        """Queued requests, not the one being pushed."""
        with self._cond:
            return list(self._queue)

    def current(self) -> PushRequest | None:
        with self._cond:
            return self._current

    def busy(self) -> bool:
        with self._cond:
            return self._current is not None or bool(self._queue)

    def close(self, timeout: float | None = None) -> bool:
        """Drop queued requests, wait up to `timeout` for the running push and the
        events. True when everything finished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()
            worker = self._worker
        if worker is not None:
            worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with self._events_cond:
            self._events.append(None)
            self._events_cond.notify_all()
            dispatcher = self._dispatcher
        if dispatcher is not None:
            dispatcher.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t is not None and t.is_alive() for t in (worker, dispatcher))

    # -- threads
    def _start_threads(self) -> None:
        if self._worker is None:
            self._dispatcher = threading.Thread(
                target=self._dispatch, name="rgpu-push-events", daemon=True
            )
            self._dispatcher.start()
            self._worker = threading.Thread(target=self._work, name="rgpu-push", daemon=True)
            self._worker.start()

    def _emit(self, event: PushEvent) -> None:
        with self._events_cond:
            self._events.append(event)
            self._events_cond.notify_all()

    def _dispatch(self) -> None:
        while True:
            with self._events_cond:
                while not self._events:
                    self._events_cond.wait()
                event = self._events.pop(0)
            if event is None:
                return
            try:
                self._on_event(event)
            except Exception:
                pass

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                req = self._queue.pop(0)
                self._current = req
                self._emit(PushEvent("started", req))
            phase_now = [None]

            def on_phase(name: str, req=req, phase_now=phase_now) -> None:
                phase_now[0] = name
                self._emit(PushEvent("progress", req, 0, 0, phase=name))

            def on_progress(done: int, total: int, req=req, phase_now=phase_now) -> None:
                self._emit(PushEvent("progress", req, done, total, phase=phase_now[0]))

            try:
                result = self._push(
                    req, self.settings, progress=on_progress, on_phase=on_phase, **self._kwargs
                )
            except Exception as exc:  # push() never raises; a stand-in might
                result = PushResult(
                    ok=False, skipped_unchanged=False, repo=self.settings.hub_repo or "",
                    path=None, commit_url=None, sha256=None, size=None, epoch=None,
                    metric_name=None, metric=None, error=f"push failed: {type(exc).__name__}",
                    file=req.file,
                )  # fmt: skip
            with self._cond:
                self._current = None
                self._emit(PushEvent("finished", req, result=result))
