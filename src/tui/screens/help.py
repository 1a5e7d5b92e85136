"""`?`: the keys, and what each state means. At 80x24 it is taller than the screen: it
scrolls (↑/↓, pgup/pgdn, home/end), and its box says so (screens.dialogs.DialogBox)."""

from __future__ import annotations

from textual.binding import Binding

from .dialogs import ReportScreen

HELP = """\
[b]rgpu-tui[/b] — supervise LibreYOLO training runs

[b]Keys[/b]
  ↑/↓  j/k   move in the runs list
  enter      show the highlighted run
  m          next page of metrics (in the charts: the next panels)
  v          charts: every metric on axes, runs overlaid; v: back
  space      mark the highlighted run to compare (◉ its colour; up to 6)
  t          compare the marked runs: best, time, cost, what differs
  e          charts: smoothing off / 0.6 / 0.9 (raw line faint behind)
  y          charts: y-axis linear / no outliers / log
  x          charts: x-axis epoch / time spent / dollars spent
  ←/→        charts: the epoch cursor; each panel reads that epoch
  /          charts: pick any metric (type to filter)
  c          cost: spent, per epoch, stop vs destroy, balance
  p / P      push best.pt / pick a file to push to the Hugging Face Hub
  n          launch a new run (form; ctrl+l launches)
  s          stop the selected run (SIGINT, then SIGTERM, SIGKILL)
  r          resume a DEAD or FAILED run from its last.pt
  g          GPU check: torch, CUDA and one matmul per GPU
  a          autostop: cancel it for this session / turn it back on
  tab        move focus between the runs list and the log
  ↑ pgup     in the log: scroll back; the log pauses, its title counts
             the lines that came since
  end        in the log: follow the newest line again
  ?          this help (esc closes)
  ctrl+p     every key's action, searchable (the command palette)
  q          quit (runs keep training)

[b]Chart marks[/b]
  ✦ / ✧      best epoch: its best.pt on the Hub / not pushed
  ↻  ✗  ╵    resume (an attempt began again), diverged loss, epoch_N.pt

[b]States[/b]
  RUN   status.json says running and its process is alive
  DONE  completed
  FAIL  failed: the error is shown in the header
  DEAD  status.json says running but the process is gone
        (killed, OOM, machine preempted) — push weights, r resumes
  STAL  process alive, no status update for max(3 epochs, 10 min)
  ?     no readable status.json yet

Runs are found under the root given on the command line
(default ./runs): any directory holding status.json,
metrics.jsonl or results.csv.
"""


class HelpScreen(ReportScreen):
    BINDINGS = [Binding("question_mark", "dismiss", "Close")]

    def __init__(self) -> None:
        super().__init__("help", HELP, markup=True)
