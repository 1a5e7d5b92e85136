"""What every rgpu-tui app (the local one and the fleet's) does the same way: notices made
printable and never read as markup, the layout classes app.tcss keys on, the terminal
given back on SIGTERM and SIGHUP, and the command palette listing every key (tui.commands)."""

from __future__ import annotations

import asyncio
import signal

from textual.app import App

from ..core.base.text import printable, shorten_middle
from .commands import KeysProvider

WIDE_COLUMNS = 140  # from here the runs list is wider ("-wide")
NARROW_COLUMNS = 100  # below this the runs list narrows to state and name ("-narrow")
SHORT_ROWS = 32  # below this the metrics pane drops its border ("-short")
TALL_ROWS = 40  # from here the metrics keep 8 rows beside a full log (widgets.run_panes)


NOTICE_WIDTH = 60  # Textual's Toast: width 60, max-width 50%
NOTICE_FRAME = 4  # its border and padding: 36 cells of text at 80 columns, 56 at 120 (measured)


def notice_width(screen_width: int) -> int:
    """The cells a notice's text has on a screen this wide (Textual's Toast box)."""
    return max(min(NOTICE_WIDTH, screen_width // 2) - NOTICE_FRAME, 8)


def fit_words(text: str, width: int) -> str:
    """`text` with each word wider than `width` (a path) shortened in its middle: the
    notice wraps between words and never cuts a path in two (`…/weights/be` / `st.pt`).
    A URL stays whole (folded at the edge): it is there to be copied."""
    return "\n".join(
        " ".join(w if "://" in w else shorten_middle(w, width) for w in line.split(" "))
        for line in text.split("\n")
    )


class AppRules:
    """A mixin before textual's App in the bases. Call `_set_layout(self.size)` in
    on_mount; resizes follow by themselves.

    SIGTERM and SIGHUP (`kill PID`, a closed tmux window or SSH session) end the app as `q`
    does: Python's default would end the process at once and leave the terminal in the
    alternate screen with mouse reporting on; here the app exits (status 128 + the
    signal's number) and Textual gives the terminal back first. The handler is taken off
    once it fired, so the same signal again ends the process at once (an exit that hangs
    can still be killed)."""

    EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
    COMMANDS = App.COMMANDS | {KeysProvider}  # ctrl+p: Textual's commands and every key

    def on_mount(self) -> None:  # Textual calls each class's handler along the MRO
        if self.is_headless:  # under Pilot: the test runner's signals are its own
            return
        try:
            loop = asyncio.get_running_loop()
            for sig in self.EXIT_SIGNALS:
                loop.add_signal_handler(sig, self._exit_on_signal, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # no such signal, not main
            pass

    def _exit_on_signal(self, sig: int) -> None:
        try:
            asyncio.get_running_loop().remove_signal_handler(sig)
        except (RuntimeError, ValueError):
            pass
        self.exit(return_code=128 + int(sig))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice (screens and widgets call the app's) names runs, hosts, files and
        errors from the runs: made printable, and never read as markup (a run named "[/]"
        would raise, one named "[bold]" would restyle it). No notice of ours uses markup.
        A word wider than the notice (a path) is shortened in its middle (`fit_words`)."""
        super().notify(
            fit_words(printable(message, newlines=True), notice_width(self.size.width)),
            title=printable(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def action_help_quit(self) -> None:
        """ctrl+c: say which keys quit. Textual's own notice is markup ("Press [b]ctrl+q[/b]")
        and every notice here is plain text, so it showed the brackets."""
        quits = [
            active.binding
            for active in self.active_bindings.values()
            if active.binding.action in ("quit", "app.quit")
        ]
        quits.sort(key=lambda b: not b.show)  # stable: the footer's key first
        keys = [self.get_key_display(b) for b in quits]
        if keys:
            said = " or ".join(dict.fromkeys(keys))
            self.notify(f"Press {said} to quit the app.", title="Do you want to quit?")

    def on_resize(self, event) -> None:
        self._set_layout(event.size)

    def _set_layout(self, size) -> None:
        self.set_class(size.width >= WIDE_COLUMNS, "-wide")
        self.set_class(size.width < NARROW_COLUMNS, "-narrow")
        self.set_class(size.height < SHORT_ROWS, "-short")
