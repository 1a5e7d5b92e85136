"""The log tail: the selected run's train.log, newest line at the bottom."""

from __future__ import annotations

import os
import re
import time

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widgets import Log

from ...core.base.text import printable
from ...core.model.snapshot import LogView
from .. import compat
from .lines import LinePane

SHOWN_LINES = 200
# While lines stream in, the pane scrolls at most once per LOG_PERIOD seconds, with the app's
# refresh: the terminal moves the rows (compat's band, when the partial-updates fast path is
# on) and only the new lines are sent; when more lines came than the pane has rows, every
# row is new anyway, and fewer scrolls send fewer rows (10 lines a second in 15 rows: 7.5
# rows a second instead of 10).
LOG_PERIOD = 2.0
# libreyolo's log format: "2026-12-02 15:19:30 | INFO     | message"
_LIBREYOLO_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d) \| (\w+)\s*\| ")


def compact(line: str) -> str:
    """The line as the pane shows it: made printable (an ESC sequence from the run shows
    as ``^[``; done once, when it is written, not at every repaint), libreyolo's
    33-character prefix shortened to the time (and the level unless INFO)."""
    line = printable(line)
    m = _LIBREYOLO_PREFIX.match(line)
    if m is None:
        return line
    level = "" if m.group(2) == "INFO" else f"{m.group(2)} "
    return f"{m.group(1)} {level}{line[m.end() :]}"


def appended(old: tuple[str, ...], new: tuple[str, ...]) -> tuple[str, ...] | None:
    """The lines `new` adds after `old`, when `new` continues `old` (its last three lines
    found in `new` in order); None when it does not (truncated, replaced, a partial last
    line that changed), and the pane is rewritten."""
    if not old or not new:
        return None
    tail = old[-3:]
    for end in range(len(new), len(tail) - 1, -1):
        if new[end - len(tail) : end] == tail:
            return new[end:] if end < len(new) else ()
    return None


def quick_line(line: str, index: int, scroll_x: int, width: int, style: Style) -> Strip | None:
    """What Textual's Log renders for line `index` when the line is non-empty printable
    ASCII and the log is not scrolled sideways: the visible text and the padding, each
    with the "offset" meta that text selection reads (a test compares them with Log's).
    Log gets there through Rich Text and three strips, 49 us a line in a loop against
    8 us; None for any other line, which Log renders."""
    if width <= 0 or scroll_x or not (line and line.isascii() and line.isprintable()):
        return None
    text = line[:width]
    segments = [Segment(text, style + Style.from_meta({"offset": (0, index)}))]
    if len(text) < width:
        pad = Style.from_meta({"offset": (len(text), index)})
        segments.append(Segment(" " * (width - len(text)), style + pad))
    return Strip(segments, width)


def mark_cut(strip: Strip, line: str, scroll_x: int, width: int) -> Strip:
    """`strip` (line's row, scrolled sideways by `scroll_x`) with "…" in its last cell when
    the line goes on past the pane's right edge: a cut line says so."""
    if width < 2 or cell_len(line.expandtabs()) <= scroll_x + width:
        return strip
    last = list(strip.crop(width - 1, width))
    style = last[-1].style if last else None
    return Strip([*strip.crop(0, width - 1), Segment("…", style)], width)


class LogTitle(LinePane):
    """The log's title as a rule above it: the file, and whether the log follows its
    newest line or is paused (how many lines came since, and the key that follows again);
    brighter while the log has the focus. The log has no border: a border would add its
    top and bottom rows (~350 bytes each), two segments to every row the log sends, and a
    right edge that keeps a row's trailing blanks from going as one erase."""

    DEFAULT_CSS = """
    LogTitle { height: 1; color: $primary; }
    LogTitle.-focused { color: $accent; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title = "log"
        self.state = ""  # "following", "paused, 12 new lines"
        self.hint = ""  # shown after the state when it fits: "end: follow"

    def set_title(self, title: str, state: str = "", hint: str = "") -> None:
        if (title, state, hint) != (self.title, self.state, self.hint):
            self.title, self.state, self.hint = title, state, hint
            self.repaint_rows()

    def build_rows(self, width: int) -> list[Text]:
        state = self.state
        if state and self.hint and len(self.title) + len(state) + len(self.hint) + 11 <= width:
            state = f"{state} ({self.hint})"
        row = Text("─ ", no_wrap=True, overflow="ellipsis")
        row.append(self.title, style="bold")
        used = len(self.title) + 3
        if state and used + len(state) + 4 <= width:
            row.append(" ─ ")
            row.append(state, style="bold yellow" if state.startswith("paused") else "")
            used += len(state) + 3
        row.append(" " + "─" * max(width - used, 0))
        return [row]


class LogPane(Log):
    """Rewritten only when the log view changed (new lines, another run); new lines of
    the same log are shown at most once per LOG_PERIOD (with the app's next refresh),
    another run's log at once.

    It follows the newest line until the user scrolls back (tab gives it the focus; ↑,
    pgup, home, or the mouse wheel): then it is paused, keeps its place while lines come,
    and its title counts them; `end` (or scrolling back down to the last line) follows
    again.

    `fast` (the app's log fast path, `compat.LOG`): new lines are measured in place
    (`compat.speed_up_log`), rows come from a small cache or `quick_line`, and the style
    is kept until the next repaint. Without it the pane is Textual's Log as it is."""

    DEFAULT_CSS = """
    LogPane { scrollbar-size: 0 0; }
    """
    _style: Style | None = None  # rich_style until the next repaint

    def __init__(self, title: LogTitle | None = None, *, fast: bool = False, **kwargs) -> None:
        super().__init__(max_lines=SHOWN_LINES, auto_scroll=True, **kwargs)
        self.title_row = title
        self.fast = fast
        if fast:
            compat.speed_up_log(self)
        compat.scroll_in_terminal(self)  # a new line moves the rows in the terminal
        self._view: LogView | None = None  # what the pane shows
        self._latest: LogView | None = None  # the newest view it was given
        self._painted_at = -LOG_PERIOD
        self._auto_y = 0  # the scroll offset our last follow-scroll left
        self._strips: dict[tuple, Strip] = {}  # (index, text, scroll_x, width, style) -> row
        self._title = "log"  # the title's file part
        self.unseen = 0  # lines written since it was paused (0 while it follows)

    def show(self, view: LogView | None) -> None:
        self._latest = view
        held = self.pending_in()
        if held == 0 or (held is not None and self._switched(view)):
            self._paint(view)

    def _switched(self, view: LogView | None) -> bool:
        """Another log (or none) than the one shown: it is rewritten, never held back."""
        old = self._view
        return old is None or view is None or view.path != old.path

    def pending_in(self) -> float | None:
        """Seconds until the newer lines it holds back may be shown (0: now); None when
        it shows the newest. The app refreshes by then: no frame of its own."""
        if self._latest is self._view or self._latest == self._view:
            return None
        return max(self._painted_at + LOG_PERIOD - time.monotonic(), 0.0)

    def _paint(self, view: LogView | None) -> None:
        old = self._view
        switched = self._switched(view)
        # follow the newest line unless the user scrolled up since we last scrolled down
        follow = switched or self._following()
        self._view = view
        self._painted_at = time.monotonic()
        new = appended(old.lines, view.lines) if not switched and view.lines else None
        if new is not None:
            # the common case, the same log grew: write only the new lines (one repaint)
            at_end = self._following()
            self.write_lines([compact(line) for line in new], scroll_end=False)
            if at_end:
                self._to_end()
            else:
                self.unseen += len(new)
            self.show_state()
            return
        self.clear()
        if switched:
            self.unseen = 0
        self._title = "log" if view is None else f"log  {os.path.basename(view.path)}"
        self.show_state()
        if view is None:
            return
        lines = [compact(line) for line in view.lines[-SHOWN_LINES:]]
        if not lines and view.problem:
            lines = [printable(view.problem)]
        # one batched write: write_line in a loop costs ~250x more
        self.write_lines(lines, scroll_end=False)
        if follow:
            # after clear() Log's own auto-scroll sees a stale offset, and the pane's
            # height may change in this same refresh: scroll once the layout is done
            self.call_after_refresh(self._to_end)
        else:
            self.show_state()

    def render_line(self, y: int) -> Strip:
        """A scroll renders every row again (the compositor compares them to what the
        terminal shows), but most rows show a line shown a moment ago one row lower: those
        come from a small cache instead of being rendered again. A new
        plain line renders through `quick_line`, anything else as Log renders it. A line
        wider than the pane ends with "…" (`mark_cut`), fast or not."""
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        lines = self.lines
        width = self.size.width
        if not self.fast or self.text_selection is not None or index >= len(lines):
            strip = super().render_line(y)
            return mark_cut(strip, lines[index], scroll_x, width) if index < len(lines) else strip
        line = lines[index]
        style = self.rich_style
        key = (index, line, scroll_x, width, style)
        strips = self._strips
        strip = strips.get(key)
        if strip is None:
            strip = quick_line(line, index, scroll_x, width, style) or super().render_line(y)
            strip = mark_cut(strip, line, scroll_x, width)
            strips[key] = strip
            if len(strips) > 3 * self.size.height + 16:
                for old in list(strips)[: len(strips) // 2]:  # the oldest half
                    del strips[old]
        return strip

    @property
    def rich_style(self) -> Style:
        """Log asks for it once per line it renders, and the answer walks every ancestor's
        styles: kept until the next repaint or style change, where Textual drops its own
        style caches."""
        if not self.fast:
            return super().rich_style
        if self._style is None:
            self._style = super().rich_style
        return self._style

    def refresh(self, *regions, **kwargs):
        self._style = None
        return super().refresh(*regions, **kwargs)

    def notify_style_update(self) -> None:
        self._style = None
        super().notify_style_update()

    def _to_end(self) -> None:
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self._auto_y = self.scroll_offset.y
        self.show_state()

    def show_state(self) -> None:
        """The title: following, or paused with the lines that came since."""
        if self.title_row is None:
            return
        if self._view is None or not self.lines:
            self.title_row.set_title(self._title)
        elif self._following():
            self.unseen = 0
            self.title_row.set_title(self._title, "following")
        else:
            n = self.unseen
            state = f"paused, {n} new line{'' if n == 1 else 's'}" if n else "paused"
            self.title_row.set_title(self._title, state, "end: follow")

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.show_state()  # scrolled back (paused), or down to the end (follows)

    def on_focus(self) -> None:
        if self.title_row is not None:
            self.title_row.add_class("-focused")

    def on_blur(self) -> None:
        if self.title_row is not None:
            self.title_row.remove_class("-focused")

    def _following(self) -> bool:
        """At the end, or where our last scroll-down left it (a height change since can
        clamp the offset below that): the user has not scrolled up to read."""
        return self.is_vertical_scroll_end or self.scroll_offset.y >= self._auto_y

    def on_resize(self) -> None:
        if self._following():
            self.call_after_refresh(self._to_end)
