"""Messages the fleet's link threads post to the UI thread."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from ...core.model.snapshot import Snapshot


@dataclass(frozen=True)
class HostView:
    """What the screens know of one host: its link's state (core.fleet.fleet.HostState), its
    snapshot as dataclasses (None before the first; kept, stale, while unreachable) and
    why that snapshot could not be read."""

    state: object
    snapshot: Snapshot | None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.state.name


class HostChanged(Message):
    """A host's link changed (a snapshot, a delta, up, down); a newer one for the same
    host replaces one not handled yet."""

    def __init__(self, view: HostView) -> None:
        super().__init__()
        self.view = view

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostChanged) and message.view.name == self.view.name


class CommandAnswered(Message):
    """A command's result (or progress line) came back from a host's agent."""

    def __init__(self, host: str, kind: str, answer: dict, context: object = None) -> None:
        super().__init__()
        self.host = host
        self.kind = kind  # "select", "push", "push-progress", "stop", "stop-progress", ...
        self.answer = answer
        self.context = context
