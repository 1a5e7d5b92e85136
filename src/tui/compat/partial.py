"""Partial screen updates that send only what changed, in fewer bytes.

When part of a row changes, Textual 8.2.8 sends that row from the left edge of the
widget holding it up to the end of the change (`ChopsUpdate.render_segments` crops
only the right end). For a GPU row whose power reading moved that is the whole row
up to the power column, every second, for every GPU. `install()` replaces that method
with one that also crops the left end: at the exact cell where a run of one-cell
characters is cut, or at the start of a segment holding wide characters, so a wide
character is never split. The bytes are written by `sgr.Writer` (a style's codes only
when they change, trailing blanks at the right edge as one erase, no newline between
rows that each start with a cursor move), and the log's rows scroll in the terminal
(`band.py`, installed with it); a partial update renders only the rows it sends
(`chops.py`). Everything else is Textual's code path unchanged.

The private class is imported by `probe()` and `install()` only, never when this
module is imported.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from textual.strip import Strip

from . import band, chops
from .sgr import Writer, erases_with_background, pen_for

if TYPE_CHECKING:
    from textual._compositor import ChopsUpdate

# what the replacement reads of a ChopsUpdate: its constructor's arguments, kept as attributes
_FIELDS = ("chops", "spans", "chop_ends")
_original = None  # Textual's own render_segments while ours is installed


def crop_left(strip: Strip, x: int, x1: int) -> tuple[Strip, int]:
    """`strip` starts at column x; drop what lies left of column x1. Returns the cropped
    strip and the column it now starts at (x1, or the start of a wide-character segment)."""
    pos = x
    segments = list(strip)
    for i, seg in enumerate(segments):
        width = cell_len(seg.text)
        if pos + width > x1:
            rest = segments[i + 1 :]
            if seg.control or width != len(seg.text):
                return Strip([seg, *rest]), pos  # never split a wide character
            head = Segment(seg.text[x1 - pos :], seg.style)
            return Strip([head, *rest]), x1
        pos += width
    return Strip([]), pos


def render_segments(self: ChopsUpdate, console: Console) -> str:
    """Textual's `ChopsUpdate.render_segments`, cropping both ends of each chop, written
    by a `Writer`; the log's band first when the update carries one (`band.py`)."""
    writer = Writer(pen_for(console, band.bce))
    frame = getattr(self, "band", None)
    if frame is not None:
        band.write(frame, writer)
    elif self.spans:
        band.touched(self.spans)  # rows of the band written without it
    for y, x1, x2 in self.spans:
        line = self.chops[y]
        ends = self.chop_ends[y]
        width = ends[-1] if ends else 0  # the last cut is the screen's right edge
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x > x2 or end <= x1:
                continue
            if x < x1:
                strip, x = crop_left(strip, x, x1)
            if end > x2:
                strip = strip.crop(0, x2 - x)
            if not strip.cell_length:
                continue
            writer.move_to(x, y)
            writer.segments(strip, to_edge=x + strip.cell_length == width)
    return writer.text()


def probe() -> str | None:
    """None when this Textual has what `install()` replaces and reads; else why not."""
    from textual._compositor import ChopsUpdate

    if not callable(vars(ChopsUpdate).get("render_segments")):
        return "textual._compositor.ChopsUpdate.render_segments is missing"
    params = list(inspect.signature(ChopsUpdate.__init__).parameters)[1:]
    if params != list(_FIELDS):
        return f"ChopsUpdate takes ({', '.join(params)}), not ({', '.join(_FIELDS)})"
    return band.probe() or chops.probe()


def install() -> None:
    """Use the cropping version (for every app in the process: the compositor's class)."""
    global _original
    from textual._compositor import ChopsUpdate

    if _original is None:
        _original = vars(ChopsUpdate)["render_segments"]
    ChopsUpdate.render_segments = render_segments
    band.install(erases_with_background())
    chops.install()


def uninstall() -> None:
    """Textual's own again (nothing to do when ours was never installed)."""
    global _original
    if _original is None:
        return
    from textual._compositor import ChopsUpdate

    ChopsUpdate.render_segments = _original
    _original = None
    band.uninstall()
    chops.uninstall()


def installed() -> bool:
    """Is ours the method the compositor's class has now (read from the class)?"""
    try:
        from textual._compositor import ChopsUpdate
    except ImportError:
        return False
    ours = vars(ChopsUpdate).get("render_segments") is render_segments
    return ours and band.installed() and chops.installed()
