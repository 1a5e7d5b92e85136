"""Messages the app's workers post to the UI thread."""

from __future__ import annotations

from textual.message import Message

from ..core.model.snapshot import Snapshot


class SnapshotReady(Message):
    """A refresh worker built the next Snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class RefreshFailed(Message):
    """A refresh raised: the app says so and keeps the last Snapshot."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class PushUpdate(Message):
    """A PushQueue event (queued, started, progress, finished), from its thread."""

    def __init__(self, event) -> None:
        super().__init__()
        self.event = event


class StopProgress(Message):
    """A stop in progress (phase, seconds to the next step) or its result."""

    def __init__(self, name: str, phase: str, seconds_left, result) -> None:
        super().__init__()
        self.name = name
        self.phase = phase
        self.seconds_left = seconds_left
        self.result = result
