"""Waiting on the app without fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.pilot import Pilot


async def wait_for(pilot: Pilot, cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:.1f} s")
        await pilot.pause(0.02)


def rendered(widget) -> str:
    """The plain text a widget renders now."""
    out = widget.render()
    if isinstance(out, Text):
        return out.plain
    if hasattr(out, "renderables"):  # rich Group
        return "\n".join(r.plain if isinstance(r, Text) else str(r) for r in out.renderables)
    return str(out)
