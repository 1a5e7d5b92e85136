"""The app has one push queue: pushes asked at the same moment from the
UI thread (a key) and the refresher's thread (auto-push) go to that one queue and run one
at a time; making it costs no thread until the first push; a push asked while the app
exits starts nothing."""

from __future__ import annotations

import threading

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.push import PushRequest, PushResult
from rgpu_tui.core.hub.push_queue import PushQueue
from rgpu_tui.tui import app as app_module

from .helpers import make_app, wait_for

PER_THREAD = 10


class Uploads:
    """A stand-in for `hub.push`: holds every push until released, and counts how many
    run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.running = 0
        self.most = 0
        self.done = 0

    def push(self, req: PushRequest, settings, **kwargs) -> PushResult:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.release.wait(30)
        with self.lock:
            self.running -= 1
            self.done += 1
        return PushResult(
            ok=True, skipped_unchanged=True, repo="alice/ckpts", path=None, commit_url=None,
            sha256=None, size=None, epoch=None, metric_name=None, metric=None, error=None,
            file=req.file,
        )  # fmt: skip


def push_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rgpu-push")]


async def test_pushes_from_two_threads_at_once_share_one_queue(runs_root, monkeypatch):
    uploads = Uploads()
    made: list[PushQueue] = []
    # A queue made lazily off the main thread (the old `_submit_push`) waits here for a
    # second one: two threads that both found no queue both make one, every time.
    both_made = threading.Barrier(2)

    class CountedQueue(PushQueue):
        def __init__(self, settings, on_event) -> None:
            if threading.current_thread() is not threading.main_thread():
                try:
                    both_made.wait(timeout=10)
                except threading.BrokenBarrierError:
                    pass
            super().__init__(settings, on_event, push_fn=uploads.push)
            made.append(self)

    monkeypatch.setattr(app_module, "PushQueue", CountedQueue)
    app = make_app(runs_root, settings=Settings(hub_repo="alice/ckpts"))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert push_threads() == []  # nobody pushed: no thread

        go = threading.Barrier(2)

        def submit(tag: str) -> None:  # as a key (UI thread) and auto-push (refresher) do
            go.wait(timeout=10)
            for i in range(PER_THREAD):
                app.runs.submit_push(PushRequest(run_dir=f"/runs/{tag}{i}", file="best.pt"))

        threads = [threading.Thread(target=submit, args=(tag,)) for tag in ("ui", "refresh")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(made) == 1 and app.push_queue is made[0]
        queue = made[0]
        await wait_for(pilot, lambda: uploads.running == 1)
        assert len(queue.pending()) + 1 == 2 * PER_THREAD  # all of them, on the one queue

        uploads.release.set()
        await wait_for(pilot, lambda: uploads.done == 2 * PER_THREAD, timeout=30)
        assert uploads.most == 1  # one upload at a time
        assert len([t for t in push_threads() if t.name == "rgpu-push"]) == 1

    # a refresh still in flight when the app exits asks for an auto-push: nothing starts
    app.runs.submit_push(PushRequest(run_dir="/runs/late", file="best.pt"))
    assert len(made) == 1 and not made[0].busy()
