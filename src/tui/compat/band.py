"""The log's rows scroll in the terminal: a new log line costs about a line.

Textual 8.2.8 has no terminal scroll: when the log pane scrolls by one line, every row of it
is sent again (~100 bytes a row). Here the log's rows, across the whole width of the screen
(the band: a terminal scrolls whole rows), are kept as the terminal shows them, cell by
cell, from the last update that wrote them. When an update touches the band, the band is
rendered whole and compared with that copy: if the rows moved up, the terminal moves them
(``ESC[top;bottomr ESC[nS ESC[r``: a scroll region, scrolled up n lines, then the whole
screen again), and only the cells that still differ are sent (the new lines, the runs
list's cells beside them that did not move with the log). Every other row is Textual's
partial update as before.

Correctness does not rest on guessing what the log did: what is sent is the difference
between the band as rendered now and the copy of what the terminal shows. The copy is
dropped whenever anything else writes to its rows (a full update, another screen's update,
a resize), and the next update of the band then sends it whole.

`install()` wraps `Compositor.render_partial_update` (and `LayoutUpdate.render_segments`,
which drops the copy); `partial.render_segments` writes the band first. Private names are
read in `probe()` and `install()` only.
"""

from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass
from typing import Any

from textual.geometry import Region

from .sgr import Cell, Writer, cells_of, changed_runs, pen_for

MIN_ROWS = 3  # a band smaller than this is not worth a scroll
SCROLL_COST = 1  # a scroll must save at least this many of the pane's rows of cells

_widgets: weakref.WeakSet = weakref.WeakSet()  # the panes whose rows may scroll
_originals: dict[str, Any] = {}
bce = False  # the terminal erases with the background (set by install)


@dataclass
class Shadow:
    """The band's rows as the terminal shows them (None: a row not known)."""

    top: int
    width: int
    rows: list[list[Cell] | None]
    pen: Any  # whose numbers the cells' states are


_shadow: Shadow | None = None


@dataclass
class BandFrame:
    """The band as rendered for one update: rows top.., every cell; cols: the pane's columns
    (where a scroll is looked for)."""

    top: int
    width: int
    rows: list[list[Cell]]
    cols: tuple[int, int]


def add(widget) -> None:
    """`widget`'s rows may scroll in the terminal (the log pane)."""
    _widgets.add(widget)


def forget() -> None:
    """The terminal's band rows are not known any more (the next band update sends all)."""
    global _shadow
    _shadow = None


def touched(spans) -> None:
    """An update that writes rows `spans` (y, x1, x2) without the band's copy: forget it
    when one of them is a band row."""
    sh = _shadow
    if sh is not None:
        end = sh.top + len(sh.rows)
        if any(sh.top <= y < end for y, _x1, _x2 in spans):
            forget()


def _band_of(compositor) -> tuple[Region, Region, Any] | None:
    """(the band, the pane's region, the pane) for a registered pane shown whole here."""
    visible = compositor.visible_widgets
    width = compositor.size.width
    for widget in list(_widgets):
        found = visible.get(widget)
        if found is None:
            continue
        region, clip = found
        if region.height >= MIN_ROWS and region.width and clip.contains_region(region):
            return Region(0, region.y, width, region.height), region, widget
    return None


def render_partial_update(self):
    """Compositor.render_partial_update: the band's rows apart when the update touches
    them (the rest is Textual's own); the frame rides on the ChopsUpdate as `band`."""
    original = _originals["render_partial_update"]
    found = _band_of(self) if _widgets else None
    dirty = self._dirty_regions
    if found is None or not any(band_overlaps(found[0], r) for r in dirty):
        return original(self)
    band, pane_region, widget = found
    try:
        console = widget.app.console
    except Exception:  # no app (closing)
        return original(self)
    pen = pen_for(console, bce)
    top, bottom = band.y, band.bottom
    chops = self._render_chops(band, lambda y: top <= y < bottom)
    rows = []
    for y in range(top, bottom):
        chop = chops[y]
        if any(strip is None for strip in chop.values()):
            return original(self)
        cells = cells_of((seg for strip in chop.values() for seg in strip), pen)
        if cells is None or len(cells) != band.width:
            return original(self)  # a control, a link, a row that does not fill the width
        rows.append(cells)
    rest = []
    for region in dirty:
        if not band_overlaps(band, region):
            rest.append(region)
            continue
        if region.y < top:
            rest.append(Region(region.x, region.y, region.width, top - region.y))
        if region.bottom > bottom:
            rest.append(Region(region.x, bottom, region.width, region.bottom - bottom))
    dirty.clear()
    dirty.update(rest)
    update = original(self)
    if update is None:
        update = _originals["ChopsUpdate"]([], [], [])
    update.band = BandFrame(top, band.width, rows, (pane_region.x, pane_region.right))
    return update


def band_overlaps(band: Region, region: Region) -> bool:
    return region.y < band.bottom and region.bottom > band.y and region.width > 0


def best_scroll(old: list, new: list, cols: tuple[int, int]) -> int:
    """How many rows up the terminal should move the band before the cells are sent: the
    shift that leaves the fewest cells to send, counting a row's pane columns (`cols`) and
    its other columns (the runs list beside the log) apart, and the rows a shift brings in
    as sent whole; a shift must save at least a pane row over none. 0: no shift."""
    h = len(new)
    if not h:
        return 0
    x0, x1 = cols
    pane_w = x1 - x0
    rest_w = len(new[0]) - pane_w

    def parts(row: list) -> tuple[int, int]:
        return hash(tuple(row[x0:x1])), hash((*row[:x0], *row[x1:]))

    was = [None if r is None else parts(r) for r in old]
    now = [parts(r) for r in new]

    def cost(d: int) -> int:
        cells = 0
        for y in range(h):
            src = was[y + d] if y + d < h else None
            if src is None:
                cells += pane_w + rest_w
                continue
            if src[0] != now[y][0]:
                cells += pane_w
            if src[1] != now[y][1]:
                cells += rest_w
        return cells

    best = cost(0)
    shift = 0
    for d in range(1, h):
        c = cost(d) + SCROLL_COST * pane_w
        if c < best:
            best, shift = c, d
    return shift


def write(frame: BandFrame, writer: Writer) -> None:
    """The band's bytes (a scroll when it saves rows, then the cells that differ) into
    `writer`; the copy becomes the frame."""
    global _shadow
    top, width, rows = frame.top, frame.width, frame.rows
    h = len(rows)
    sh = _shadow
    same = sh is not None and sh.pen is writer.pen and sh.top == top and sh.width == width
    if same and len(sh.rows) == h:
        old = list(sh.rows)
    else:
        old = [None] * h
    shift = best_scroll(old, rows, frame.cols)
    if shift:
        # from the default colours: the rows a scroll brings in are blank, painted below
        writer.reset(force=True)
        writer.raw(f"\x1b[{top + 1};{top + h}r\x1b[{shift}S\x1b[r")
        old = old[shift:] + [None] * shift
    pen = writer.pen
    for i, row in enumerate(rows):
        for start, end in changed_runs(old[i], row):
            last = row[-1]
            if end < width and last[0] == " " and pen.erasable(last[1]):
                if row[end:] == [last] * (width - end):  # blank to the edge: one EL
                    end = width
            writer.move_to(start, top + i)
            writer.cells(row, start, end, to_edge=end == width)
    _shadow = Shadow(top, width, list(rows), writer.pen)


def layout_render_segments(self, console) -> str:
    """LayoutUpdate.render_segments: a full update, written with the Writer (its rows'
    trailing spaces as EL, no newline between rows: each starts with a cursor move); it
    rewrites every row, so the band's copy is forgotten."""
    forget()
    writer = Writer(pen_for(console, bce))
    x = self.region.x
    for y, line in enumerate(self.strips, self.region.y):
        writer.move_to(x, y)
        strips = list(line)
        for i, strip in enumerate(strips):
            writer.segments(strip, to_edge=i == len(strips) - 1)
    return writer.text()


def probe() -> str | None:
    """None when this Textual has what `install()` wraps and reads; else why not."""
    from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate

    for owner, name in (
        (Compositor, "render_partial_update"),
        (Compositor, "_render_chops"),
        (LayoutUpdate, "render_segments"),
    ):
        if not callable(vars(owner).get(name)):
            return f"textual._compositor.{owner.__name__}.{name} is missing"
    if not isinstance(vars(Compositor).get("visible_widgets"), property):
        return "textual._compositor.Compositor.visible_widgets is missing"
    params = list(inspect.signature(LayoutUpdate.__init__).parameters)[1:]
    if params != ["strips", "region"]:
        return f"LayoutUpdate takes ({', '.join(params)}), not (strips, region)"
    params = list(inspect.signature(ChopsUpdate.__init__).parameters)[1:]
    if params != ["chops", "spans", "chop_ends"]:
        return f"ChopsUpdate takes ({', '.join(params)}), not (chops, spans, chop_ends)"
    return None


def install(erases_with_background: bool) -> None:
    global bce
    from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate

    bce = erases_with_background
    if not _originals:
        _originals["render_partial_update"] = vars(Compositor)["render_partial_update"]
        _originals["layout_render_segments"] = vars(LayoutUpdate)["render_segments"]
        _originals["ChopsUpdate"] = ChopsUpdate
    Compositor.render_partial_update = render_partial_update
    LayoutUpdate.render_segments = layout_render_segments


def uninstall() -> None:
    if not _originals:
        return
    from textual._compositor import Compositor, LayoutUpdate

    Compositor.render_partial_update = _originals.pop("render_partial_update")
    LayoutUpdate.render_segments = _originals.pop("layout_render_segments")
    _originals.clear()
    forget()


def installed() -> bool:
    try:
        from textual._compositor import Compositor
    except ImportError:
        return False
    return vars(Compositor).get("render_partial_update") is render_partial_update
