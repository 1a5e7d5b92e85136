"""What each key does, in one short sentence: the one text that the help (`?`) and the
command palette (ctrl+p) both show, so that they never say different things (the palette
read the actions' docstrings: Textual's own Quit said "An [action](/guide/actions) to quit
the app…", ours stopped mid-sentence or showed backticks).

`ACTIONS`: an action's name (as bound: no namespace, no arguments) -> its sentence.
`HELP_KEYS`: the help's rows, in its order: (keys as shown, the action, or the sentence of
a key that is a widget's own, not an action of the app).
"""

from __future__ import annotations

ACTIONS: dict[str, str] = {
    "quit": "Quit rgpu-tui; the runs keep training.",
    "help": "Show every key and what each run state means.",
    "metrics_page": "Show the next page of metrics (in the charts: the next panels).",
    "cost": "Show the money: spent, per epoch, stop vs destroy, the balance.",
    "push": "Push the selected run's best.pt (else last.pt) to the Hugging Face Hub.",
    "push_pick": "Pick what to push: best.pt, last.pt, an epoch_N.pt or the artifacts.",
    "launch": "Open the launch form for a new run; ctrl+l launches it.",
    "stop": "Stop the selected run: SIGINT, then SIGTERM and SIGKILL if needed.",
    "resume": "Resume a DEAD, FAILED or STOPPED run from its newest complete checkpoint.",
    "preflight": "Check the GPUs: torch, CUDA and one matmul on each.",
    "autostop": "Cancel autostop for this session, or turn it back on.",
    "charts": "Show every metric on axes, the marked runs overlaid; v again goes back.",
    "compare": "Compare the marked runs: best, time, cost and what differs.",
    "chart_smooth": "In the charts: smoothing off, 0.6 or 0.9, the raw line faint behind.",
    "chart_y": "In the charts: the y-axis linear, without outliers, or log.",
    "chart_x": "In the charts: the x-axis in epochs, time spent or dollars spent.",
    "chart_cursor": "In the charts: move the epoch cursor; each panel reads that epoch.",
    "chart_pick": "In the charts: pick any metric to draw (type to filter).",
    "focus_next": "Move the focus to the next pane or field.",
    "focus_previous": "Move the focus back to the previous pane or field.",
    "copy_text": "Copy the selected text.",
    "help_quit": "Say which keys quit.",
    "dismiss": "Close this view.",
    "cancel": "Close it without doing anything.",
    "back": "Go back to the hosts table.",
    "not_here": "Say where this is done: on that machine itself.",
    "open": "Open the highlighted host.",
    "move": "Move the cursor in the hosts table.",
}

HELP_KEYS: tuple[tuple[str, str], ...] = (
    ("↑/↓  j/k", "Move in the runs list."),
    ("enter", "Show the highlighted run."),
    ("m", "metrics_page"),
    ("v", "charts"),
    ("space", "Mark the highlighted run to compare (◉ its colour; up to 6)."),
    ("t", "compare"),
    ("e", "chart_smooth"),
    ("y", "chart_y"),
    ("x", "chart_x"),
    ("←/→", "chart_cursor"),
    ("/", "chart_pick"),
    ("c", "cost"),
    ("p", "push"),
    ("P", "push_pick"),
    ("n", "launch"),
    ("s", "stop"),
    ("r", "resume"),
    ("g", "preflight"),
    ("a", "autostop"),
    ("tab", "Move the focus between the runs list and the log."),
    ("↑ pgup", "In the log: scroll back; the log pauses, its title counts the lines since."),
    ("end", "In the log: follow the newest line again."),
    ("?", "This help; esc closes it."),
    ("ctrl+p", "Find any key's action by typing (the command palette)."),
    ("q", "quit"),
)


def action_name(action: str) -> str:
    """A bound action's name: 'app.focus_next' -> 'focus_next', "not_here('cost')" ->
    'not_here'."""
    return action.split("(", 1)[0].rsplit(".", 1)[-1]


def action_text(action: str) -> str:
    """The sentence of a bound action; "" for one this table does not know."""
    return ACTIONS.get(action_name(action), "")


def help_rows() -> list[tuple[str, str]]:
    """(keys, sentence) of each row of the help's Keys."""
    return [(keys, ACTIONS.get(what, what)) for keys, what in HELP_KEYS]
