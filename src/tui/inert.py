"""Run-derived text made inert at the panes' output boundaries, with core's one function
(`core.base.text.printable`).

Every row a LinePane paints, every runs-list line, the push bar, every dialog's title and
body and every notice pass through here (the log pane makes each line printable once, when
it is written). Rich `Text` keeps ESC and other control characters as they are, and Textual
sends them to the terminal: a run named ``evil\\x1b]0;PWNED\\x07`` would set the window
title. `inert` rewrites such a row with ``^[``-style text in place of the controls and
keeps its styles on the same characters. Strings are never parsed as markup here: a run
named ``[bold]`` or ``[/]`` shows as typed.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Span, Text

from ..core.base.text import is_printable, printable


def inert(row: Text, *, newlines: bool = False) -> Text:
    """`row` when it is printable already (the common case: one regex search), else a copy
    whose controls show as ``^[``, ``\\x9b``, ... with its spans moved along."""
    plain = row.plain
    if is_printable(plain, newlines=newlines):
        return row
    pieces: list[str] = []
    starts = [0] * (len(plain) + 1)  # where each character of `plain` starts in the copy
    pos = col = 0
    for i, ch in enumerate(plain):
        starts[i] = pos
        if ch == "\t":
            piece = " " * (8 - col % 8)
        elif ch == "\n" and newlines:
            piece = "\n"
        else:
            piece = printable(ch)
        col = 0 if piece == "\n" else col + len(piece)
        pieces.append(piece)
        pos += len(piece)
    starts[len(plain)] = pos
    out = row.blank_copy("".join(pieces))
    end = len(plain)
    out.spans[:] = [
        Span(starts[min(s.start, end)], starts[min(s.end, end)], s.style) for s in row.spans
    ]
    return out


def inert_body(body: RenderableType) -> RenderableType:
    """A dialog's body or title: a string becomes plain text (never markup) made printable,
    newlines kept; a Text is made inert; other renderables are the app's own."""
    if isinstance(body, str):
        return Text(printable(body, newlines=True))
    if isinstance(body, Text):
        return inert(body, newlines=True)
    return body
