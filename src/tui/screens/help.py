"""`?`: the keys, and what each state means. At 80x24 it is taller than the screen: it
scrolls (↑/↓, pgup/pgdn, home/end), and its box says so (screens.dialogs.DialogBox)."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.binding import Binding

from ..keys_text import help_rows
from .dialogs import ReportScreen

TITLE = "[b]rgpu-tui[/b] — supervise LibreYOLO training runs"

CHART_MARKS = (
    ("✦ / ✧", "Best epoch: its best.pt on the Hub / not pushed."),
    ("↻  ✗  ╵", "Resume (an attempt began again), diverged loss, epoch_N.pt."),
)

STATES = (
    ("RUN", "status.json says running and its process is alive."),
    ("DONE", "Completed."),
    ("FAIL", "Failed: the error is shown in the header."),
    (
        "DEAD",
        "status.json says running but the process is gone (killed, OOM, machine "
        "preempted): push its weights, r resumes it.",
    ),
    ("STAL", "Process alive, no status update for max(3 epochs, 10 min)."),
    ("?", "No readable status.json yet."),
)

WHERE = (
    "Runs are found under the root given on the command line (default ./runs): any "
    "directory holding status.json, metrics.jsonl or results.csv."
)


def _section(title: str, rows) -> list:
    """A bold title and its rows: the key in its column, the sentence wrapped between
    words under its own start (never back to column 0)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, min_width=9)
    grid.add_column(overflow="fold")
    for keys, text in rows:
        grid.add_row(keys, text)
    return [Text(""), Text(title, style="bold"), Padding(grid, (0, 0, 0, 2))]


def help_body() -> Group:
    """The help: the keys (the sentences the command palette shows, tui.keys_text), the
    chart marks, the states, where runs are found."""
    return Group(
        Text.from_markup(TITLE),
        *_section("Keys", help_rows()),
        *_section("Chart marks", CHART_MARKS),
        *_section("States", STATES),
        Text(""),
        Text(WHERE),
    )


class HelpScreen(ReportScreen):
    BINDINGS = [Binding("question_mark", "dismiss", "Close")]

    def __init__(self) -> None:
        super().__init__("help", help_body(), markup=True)
