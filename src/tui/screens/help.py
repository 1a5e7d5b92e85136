"""`?`: the keys, and what each state means."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]rgpu-tui[/b] — supervise LibreYOLO training runs

[b]Keys[/b]
  ↑/↓  j/k   move in the runs list
  enter      show the highlighted run
  m          next page of metrics
  c          cost: spent, per epoch, stop vs destroy, balance
  tab        move focus between panes
  ?          this help (esc closes)
  q          quit (runs keep training)

[b]States[/b]
  RUN   status.json says running and its process is alive
  DONE  completed
  FAIL  failed: the error is shown in the header
  DEAD  status.json says running but the process is gone
        (killed, OOM, machine preempted) — push weights, relaunch
  STAL  process alive, no status update for max(3 epochs, 10 min)
  ?     no readable status.json yet

Runs are found under the root given on the command line
(default ./runs): any directory holding status.json,
metrics.jsonl or results.csv.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close"),
        Binding("q", "dismiss", "Close"),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; padding: 0 1; background: $surface;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP)
