"""The push bar: one line while checkpoints are being pushed, hidden otherwise."""

from __future__ import annotations

import os

from rich.text import Text
from textual.widget import Widget

from ..inert import inert
from .run_header import text_bar

MB = 1_000_000


class PushBar(Widget):
    DEFAULT_CSS = """
    PushBar { height: 1; padding: 0 1; display: none; background: $boost; }
    PushBar.-on { display: block; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._state: tuple | None = None

    def show(
        self,
        file: str | None,
        run_dir: str | None,
        phase: str | None,
        done: int,
        total: int,
        queued: int,
    ) -> None:
        state = (file, run_dir, phase, done // (MB // 10), total, queued)
        if state == self._state:
            return
        self._state = state
        self.set_class(file is not None or queued > 0, "-on")
        self.refresh()

    def render(self) -> Text:
        if self._state is None:
            return Text()
        file, run_dir, phase, _, total, queued = self._state
        done = self._state[3] * (MB // 10)
        line = Text(no_wrap=True, overflow="ellipsis")
        if file is not None:
            line.append(f"push {file} ", style="bold")
            line.append(f"({os.path.basename(run_dir or '')}) ")
            if total:
                width = max(min((self.size.width or 80) // 4, 30), 10)
                line.append(text_bar(done / total, width), style="green")
                line.append(f" {done / MB:.1f}/{total / MB:.1f} MB")
            else:
                line.append(f"{phase or 'starting'}…", style="italic")
        if queued:
            line.append(f"  +{queued} queued", style="dim")
        return inert(line)  # the file and the run's name come from the run
