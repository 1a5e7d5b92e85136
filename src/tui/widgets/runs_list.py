"""The runs list: one line per run, newest activity first; space marks a run to compare
(a dot in its chart colour before its state). A narrow list (the 80-column screen's)
leaves out the progress: state and name, and the log keeps the width."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ...core.base.text import printable, shorten_middle
from ...core.model.snapshot import RunInfo
from ...core.run.discovery import deep_dirs_text
from ..inert import inert
from .style import STATE_STYLE, state_badge

MARK = "◉"
PROGRESS_FROM = 26  # a list this wide inside (or wider) shows each run's progress


LAUNCH_MARK = " (launch)"  # a launch before its run directory (core.picture.launch_rows)


def run_line(
    r: RunInfo, mark: str | None = None, progress: bool = True, width: int | None = None
) -> Text:
    """`mark`: the colour of a run marked to compare (None: not marked); `progress`: the
    percentage between the state and the name; `width`: the cells the line has: a name
    that does not fit drops the percentage first, then is shortened in its middle (a
    launch keeps its " (launch)"); a line never wraps onto a second row."""
    name = printable(r.name)  # before Text, which drops a BEL or CR unseen
    lead = (1 if mark is not None else 0) + len(state_badge(r.state))
    if progress and width is not None and lead + 6 + len(name) > width:
        progress = False  # the name whole rather than its percentage
    line = Text(no_wrap=True, overflow="ellipsis")
    if mark is not None:
        line.append(MARK, style=f"bold {mark}")
    line.append(state_badge(r.state), style=STATE_STYLE.get(r.state, ""))
    if progress:
        pct = "" if r.progress is None else f"{r.progress * 100:3.0f}%"
        line.append(f" {pct:>4} ")
    else:
        line.append(" ")
    if width is not None and len(line) + len(name) > width:
        tail = LAUNCH_MARK if name.endswith(LAUNCH_MARK) else ""
        room = max(width - len(line) - len(tail), 1)
        name = shorten_middle(name[: len(name) - len(tail)], room) + tail
    line.append(name)
    return line


class RunsList(OptionList):
    """Arrows or j/k move the highlight; enter selects the run."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("space", "mark", "Mark", show=False),
    ]

    class Marked(Message):
        """Space on a run: mark it to compare, or unmark it."""

        def __init__(self, run_dir: str) -> None:
            super().__init__()
            self.run_dir = run_dir

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[tuple[str, Text], ...] = ()
        self._footer: str | None = None
        self._marks: dict[str, str] = {}
        self._last: tuple | None = None  # show_runs' arguments, for a resize
        self.progress = True  # the lines show each run's progress

    def action_mark(self) -> None:
        if self.highlighted is not None and self.highlighted < len(self._shown):
            self.post_message(self.Marked(self._shown[self.highlighted][0]))

    def show_runs(
        self,
        runs: tuple[RunInfo, ...],
        selected: str | None,
        deep_skipped: int = 0,
        marks: dict[str, str] | None = None,
    ) -> None:
        """Rebuild the options only when a line's text changed. `deep_skipped`: directories
        the runs search did not enter (too deep), said in a last, unselectable line;
        `marks`: run_dir -> colour of each run marked to compare."""
        marks = marks or {}
        self._last = (runs, selected, deep_skipped, marks)
        progress = self.progress
        width = self.scrollable_content_region.width or None  # None before the first layout
        lines = tuple(
            (r.run_dir, inert(run_line(r, marks.get(r.run_dir), progress, width))) for r in runs
        )
        footer = deep_dirs_text(deep_skipped) if deep_skipped else None
        if (
            footer == self._footer
            and marks == self._marks
            and tuple((d, t.plain) for d, t in lines) == tuple((d, t.plain) for d, t in self._shown)
        ):
            return
        self._marks = dict(marks)
        highlighted = None
        if self.highlighted is not None and self.highlighted < len(self._shown):
            highlighted = self._shown[self.highlighted][0]
        self._shown = lines
        self._footer = footer
        options = [Option(text, id=run_dir) for run_dir, text in lines]
        if footer:
            options.append(Option(Text(footer, style="dim italic"), disabled=True))
        self.set_options(options)
        # keep the highlighted run if it still exists, else follow the selected one
        target = highlighted if any(d == highlighted for d, _ in lines) else selected
        if target is not None:
            for i, (run_dir, _) in enumerate(lines):
                if run_dir == target:
                    self.highlighted = i
                    break
        elif lines:
            self.highlighted = 0

    def on_resize(self) -> None:
        """A new width: the lines are fitted again (and show the progress or not)."""
        self.progress = self.scrollable_content_region.width >= PROGRESS_FROM
        if self._last is not None:
            self.show_runs(*self._last)
