"""The autostop line: the watcher's countdown, and the key that cancels it for this session.

`rgpu-tui watch` is the one process that runs autostop_command (core.away.autostop); the app
never runs it. This line shows what the root's watcher is doing, from the plan it writes
(core.records.autostop_files): "autostop in 4m30s: all weights on the Hub — a cancels", held and
why, running, ran or failed. `a` (or `--no-autostop` from the start) takes the hold: the
watcher does not run the command while this app is open, and counts the idle time again
once it lets go (`a` again, or quitting). With autostop_command set here and no watcher on
the root, the line says so while the machine idles: nothing would stop it.

The plan comes with each Snapshot (core.records.autostop_files.PlanReader, on the refresh thread:
a stat, the file only when it changed, the watcher's pid checked alive); the line is hidden
while the machine is busy.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from ...core.away.autostop import enabled
from ...core.base.config import Settings
from ...core.base.formatting import fmt_duration
from ...core.base.invocation import command
from ...core.base.text import printable
from ...core.model.snapshot import AutostopPlan, CostView
from ...core.records.autostop_files import AutostopFiles, Hold
from .lines import cut_words

SHOWN = (
    "counting", "held", "checking", "pushing", "notifying", "running", "ran", "failed",
    "held_by_app",
)  # fmt: skip


class AutostopLine(Widget):
    DEFAULT_CSS = """
    AutostopLine {
        height: 1; padding: 0 1; display: none;
        background: $warning-darken-2; color: $text;
    }
    AutostopLine.-on { display: block; }
    """

    def __init__(
        self,
        root: str,
        settings: Settings,
        *,
        hold: bool = False,
        clock: Callable[[], float],
        files: AutostopFiles | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.files = files or AutostopFiles.for_root(os.path.abspath(root))
        self.settings = settings
        self.clock = clock
        self.hold = Hold(self.files.hold)
        self.hold_at_start = hold
        self.plan: AutostopPlan | None = None
        self._cost: CostView | None = None
        self._text = ""

    def on_mount(self) -> None:
        if self.hold_at_start:
            self.take_hold()

    def on_unmount(self) -> None:
        self.hold.release()

    # -- what the app calls ------------------------------------------------------------

    def show(self, cost: CostView | None, plan: AutostopPlan | None) -> None:
        """From each Snapshot: the watcher's plan, and whether the machine idles (for the
        no-watcher line)."""
        self._cost = cost
        self.plan = plan
        self._update()

    def toggle(self) -> str:
        """`a`: take or release the hold; the notice to show. With no autostop configured
        here and no watcher planning one on this root there is nothing to cancel: it says
        so, and takes no hold."""
        if self.hold.held:
            self.hold.release()
            self._update()
            return "Autostop is back on: the watcher counts the idle time again from now."
        off = enabled(self.settings)
        if self.plan is None and off is not None:
            why = off.removeprefix("autostop off").strip(" :()")
            return (
                f"No autostop to cancel: {why}, and no `{command()} watch` plans one for this "
                "root (docs/away.md sets it up)."
            )
        problem = self.take_hold()
        if problem:
            return problem
        return "Autostop cancelled for this session: the machine stays up while this app runs."

    def take_hold(self) -> str | None:
        try:
            self.hold.take()
        except OSError as exc:
            return f"Cannot hold autostop: {self.files.hold}: {exc.strerror or exc}"
        self._update()
        return None

    def _update(self) -> None:
        text = self.line_text()
        self.set_class(bool(text), "-on")
        if text != self._text:
            self._text = text
            self.refresh()

    def line_text(self) -> str:
        plan = self.plan
        if plan is None:
            c = self._cost
            idle = c is not None and c.idle_now_seconds is not None
            if self.settings.autostop_command and idle:
                return (
                    f"autostop_command is set, but no `{command()} watch` runs on this root: "
                    "nothing will stop the machine (the app never runs it)"
                )
            return ""
        phase = plan.phase
        message = plan.message
        if phase not in SHOWN:
            return ""
        if self.hold.held:
            return "autostop cancelled for this session — a turns it back on"
        if phase == "held_by_app":
            return "autostop held by another rgpu-tui app (its `a`, or --no-autostop)"
        if phase == "counting":
            fires_at = plan.fires_at
            left = fires_at - self.clock() if fires_at is not None else None
            when = f"in {fmt_duration(max(left, 0))}" if left is not None else "soon"
            return f"autostop {when}: {message} — a cancels"
        if phase in ("held", "checking", "pushing"):
            lead = "" if message.startswith("autostop") else "autostop due: "
            return f"{lead}{message} — a cancels"
        if phase == "notifying":
            return f"autostop now: {message} — a cancels"
        if phase == "running":
            return f"autostop: {message}"
        return message  # ran / failed: what the watcher says

    def render(self) -> Text:
        """The line; narrower than it, the message is cut between two words and the key
        after the dash ("— a cancels") stays."""
        text = printable(self._text)
        width = self.size.width
        head, dash, key = text.rpartition(" — ")
        if not width or len(text) <= width or not (dash and key.startswith("a ")):
            row = Text(text, no_wrap=True, overflow="ellipsis")
            return cut_words(row, width) if width else row
        row = cut_words(Text(head, no_wrap=True, overflow="ellipsis"), width - len(dash + key))
        row.append(dash + key)
        return row
