"""Waiting on the app without fixed sleeps."""

from __future__ import annotations

import io
from collections.abc import Callable

from rich.console import Console, ConsoleRenderable
from rich.text import Text
from support.waiting import wait_until_pilot
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


async def wait_for(
    pilot: Pilot, cond: Callable[[], bool], timeout: float = 10.0, what: str = "condition"
) -> None:
    await wait_until_pilot(pilot, cond, what, timeout)


def rendered(widget) -> str:
    """The plain text a widget renders now (a Rich renderable, a table in a group: as a
    console of the widget's width prints it)."""
    out = widget.render()
    if isinstance(out, Text):
        return out.plain
    content = getattr(widget, "content", None)  # a Static: what it was given, not its Visual
    if not isinstance(content, (str, Text)) and (
        isinstance(content, ConsoleRenderable) or hasattr(content, "renderables")
    ):
        out = content  # a group, a table: the help
    parts = getattr(out, "renderables", None)  # rich Group
    if parts is not None and all(isinstance(r, Text) for r in parts):
        return "\n".join(r.plain for r in parts)
    if parts is not None or isinstance(out, ConsoleRenderable):
        console = Console(
            width=widget.content_size.width or 80, file=io.StringIO(), color_system=None
        )
        with console.capture() as captured:
            console.print(out)
        return "\n".join(line.rstrip() for line in captured.get().splitlines())
    return str(out)


def rendered_words(widget) -> str:
    """What a widget renders with its rows joined by one space: a sentence checked whatever
    the row it wraps at (the length of a temp path moves the breaks)."""
    return " ".join(rendered(widget).split("\n"))


def notices(app) -> list[str]:
    """The messages of the notices the app is showing now."""
    return [str(n.message) for n in app._notifications]
