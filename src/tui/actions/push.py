"""Pushing to the Hub from this machine: the one queue's requests and events.

The confirm dialogs of `p` and `P` are the run view's (tui.screens.runs_view), the same for
a fleet host; their last step here submits to the app's queue (core.hub.push_queue.PushQueue,
which RgpuApp creates once, and which the auto-pusher feeds from the refresh thread too). The
queue's events come back on the UI thread as PushUpdate messages: the push bar, the notices,
and a refresh (the header's "pushed ... ago" comes from the records).
"""

from __future__ import annotations

import os

from ...core.base.text import printable
from ...core.hub.push import PushRequest
from ...core.hub.push_queue import PushEvent
from ..messages import PushUpdate


class LocalPushes:
    """The app's push queue, as the local run source uses it."""

    def __init__(self, app) -> None:
        self.app = app
        self.exiting = False  # the app closed the queue

    def submit(self, req: PushRequest) -> None:
        """From the UI thread (a key) or the refresher's (auto-push): the one queue."""
        try:
            self.app.push_queue.submit(req)
        except RuntimeError:
            if not self.exiting:
                raise
            # closed: the app is exiting and a refresh in flight asked late; nothing starts

    def event_from_thread(self, event: PushEvent) -> None:
        self.app.post_message(PushUpdate(event))  # thread-safe, never blocks the uploader

    def update(self, ev: PushEvent, push_bar) -> None:
        app = self.app
        queue = app.push_queue
        queued = len(queue.pending())
        req = ev.request
        if ev.kind in ("started", "progress"):
            push_bar.show(req.file, req.run_dir, ev.phase, ev.bytes_done, ev.bytes_total, queued)
        elif ev.kind == "queued":
            current = queue.current()
            if current is None:
                push_bar.show(None, None, None, 0, 0, queued)
        elif ev.kind == "finished" and ev.result is not None:
            push_bar.show(None, None, None, 0, 0, queued)
            r = ev.result
            run = os.path.basename(req.run_dir)
            for notice in r.notices:  # an artifact skipped (outside the run, not a file)
                app.notify(
                    printable(notice), title="push", severity="warning", timeout=15, markup=False
                )
            if r.ok and r.skipped_unchanged:
                app.notify(
                    f"{r.file or req.file} of {run} is unchanged on {r.repo}: no new commit."
                )
            elif r.ok:
                app.notify(
                    f"Pushed {r.file or req.file} of {run} to {r.repo}\n{r.commit_url or ''}",
                    title="pushed",
                    timeout=10,
                )
            else:
                app.notify(
                    r.error or "push failed", title="push failed", severity="error", timeout=20
                )
            app.request_refresh()  # the header's "pushed ... ago" comes from the records
