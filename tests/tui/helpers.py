"""Waiting on the app without fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.pilot import Pilot

from rgpu_tui.core.base.config import Settings
from rgpu_tui.tui.app import RgpuApp


def make_app(
    runs_root,
    interval: float = 3600.0,
    root=None,
    gpus: int | None = 2,
    settings: Settings | None = None,
) -> RgpuApp:
    """The app on the fixed runs root (or `root`), with its frozen clock."""
    return RgpuApp(
        root=str(root or runs_root.root),
        interval=interval,
        clock=runs_root.clock,
        fake_gpus=gpus,
        settings=settings,
    )


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


def rendered_words(widget) -> str:
    """What a widget renders with its rows joined by one space: a sentence checked whatever
    the row it wraps at (the length of a temp path moves the breaks)."""
    return " ".join(rendered(widget).split("\n"))


def notices(app) -> list[str]:
    """The messages of the notices the app is showing now."""
    return [str(n.message) for n in app._notifications]
