"""The log pane measures new lines in place.

Textual 8.2.8's `Log.write_lines` measures the new lines' width in `Log._update_size`, a
thread worker that calls back into the app: a worker, its state messages and two thread
hops for each write. The pane's lines are at most `core.run.tail.MAX_LOG_LINE` characters and
come a few dozen at a time: `speed_up(pane)` gives that one pane (an instance attribute,
not the class) an `_update_size` that measures them where they are written, with Log's
own `_process_line` and `_update_maximum_width`.

The private names are read by `probe()` and `speed_up()` only, never when this module is
imported.
"""

from __future__ import annotations

import inspect
from typing import Any

from rich.cells import cell_len

_METHODS = ("_update_size", "_process_line", "_update_maximum_width")


def probe() -> str | None:
    """None when this Textual's Log has what `speed_up` replaces and calls; else why not."""
    from textual.widgets import Log

    for name in _METHODS:
        if not callable(getattr(Log, name, None)):
            return f"Log.{name} is missing"
    params = list(inspect.signature(Log._update_size).parameters)[1:]
    if params != ["updates", "lines"]:
        return f"Log._update_size takes ({', '.join(params)}), not (updates, lines)"
    return None


def sped_up(pane: Any) -> bool:
    """Does `pane` measure its lines in place (speed_up gave it its own _update_size)?"""
    return pane is not None and "_update_size" in vars(pane)


def speed_up(pane: Any) -> None:
    """`pane` (a Log) measures the lines it is given in place, on the UI thread."""
    process_line = pane._process_line
    update_maximum_width = pane._update_maximum_width

    def update_size(updates: int, lines: list[str]) -> None:
        if lines:
            width = max(cell_len(process_line(line)) for line in lines)
            update_maximum_width(updates, width)

    pane._update_size = update_size
