"""Messages the app's workers post to the UI thread."""

from __future__ import annotations

from textual.message import Message

from ..core.snapshot import Snapshot


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
