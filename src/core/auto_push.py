"""Auto-push for the app: after each refresh, what settings.auto_push asks to push now.

This acts (its requests go to the PushQueue), so it lives apart from the read path: the
Collector builds Snapshots and knows nothing of pushing; the app calls `AutoPusher` with
each new Snapshot (core.push.auto_push_requests holds the policy).
"""

from __future__ import annotations

from .push import AutoPushState, PushRequest, auto_push_requests
from .snapshot import Snapshot
from .watch import RunsWatcher


class AutoPusher:
    """Keeps what auto-push has seen of each run (one AutoPushState per run)."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self._state: dict[str, AutoPushState] = {}

    def requests(self, snap: Snapshot, runs: RunsWatcher) -> list[PushRequest]:
        """What settings.auto_push asks to push now, for every running run."""
        out: list[PushRequest] = []
        for run in snap.runs:
            if run.state != "running":
                continue
            watcher = runs.watcher(run.run_dir)
            if watcher is None:
                continue
            state = self._state.setdefault(run.run_dir, AutoPushState())
            out.extend(
                auto_push_requests(run.run_dir, self.settings, watcher.metrics.last_row, state)
            )
        return out
