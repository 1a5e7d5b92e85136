"""A partial update renders only the rows it sends.

Textual 8.2.8's `Compositor._render_chops` asks every widget that overlaps an update for all
of its rows (`_get_renders` renders each widget's whole region) and then keeps the rows the
update sends: a GPU row that changed makes the screen, the runs list, the log and every
container render each of their rows again (from their line caches, through the line
filters), about 200 rows a frame at 120x40 for 8 to 20 sent. `render_chops` is Textual's
method with one change: each widget renders only the runs of rows the update sends, so a
frame costs what it sends. A full update sends every row, and renders every row as before.

Installed and removed with `partial.py` (the partial-updates fast path); the private names
are read by `probe()` and `install()` only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from textual.geometry import Region
from textual.strip import Strip

_original: Any = None


def _runs(lines: range, wanted: Callable[[int], bool]) -> Iterable[tuple[int, int]]:
    """The runs [start, end) of `lines` that are wanted."""
    start = None
    for y in lines:
        if wanted(y):
            if start is None:
                start = y
        elif start is not None:
            yield start, y
            start = None
    if start is not None:
        yield start, lines.stop


def render_chops(self, crop: Region, is_rendered_line: Callable[[int], bool]):
    """Compositor._render_chops: the same chops, each widget rendering only the rows of
    its visible region that the update sends."""
    cuts = self.cuts
    chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
    intersection = Region.intersection
    crop_overlaps = crop.overlaps
    for widget, (region, clip) in self.visible_widgets.items():
        if not crop_overlaps(clip):
            continue
        render_region = intersection(region, clip)
        if not (render_region.width and render_region.height):
            continue
        render_x = render_region.x
        first_cut, last_cut = render_region.column_span
        x0 = render_x - region.x
        for start, end in _runs(render_region.line_range, is_rendered_line):
            strips = widget.render_lines(
                Region(x0, start - region.y, render_region.width, end - start)
            )
            for y, strip in zip(range(start, end), strips, strict=False):
                chops_line = chops[y]
                final_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                cut_strips = strip.divide([cut - render_x for cut in final_cuts[1:]])
                get = chops_line.get
                for cut, cut_strip in zip(final_cuts, cut_strips, strict=False):
                    if get(cut) is None:  # front to back: the first render of a cut wins
                        chops_line[cut] = cut_strip
    return chops


def probe() -> str | None:
    """None when this Textual's Compositor has what `render_chops` replaces and reads."""
    import inspect

    from textual._compositor import Compositor

    if not callable(vars(Compositor).get("_render_chops")):
        return "textual._compositor.Compositor._render_chops is missing"
    params = list(inspect.signature(Compositor._render_chops).parameters)[1:]
    if params != ["crop", "is_rendered_line"]:
        return f"Compositor._render_chops takes ({', '.join(params)})"
    for name in ("cuts", "visible_widgets"):
        if not isinstance(vars(Compositor).get(name), property):
            return f"textual._compositor.Compositor.{name} is missing"
    return None


def install() -> None:
    global _original
    from textual._compositor import Compositor

    if _original is None:
        _original = vars(Compositor)["_render_chops"]
    Compositor._render_chops = render_chops


def uninstall() -> None:
    global _original
    if _original is None:
        return
    from textual._compositor import Compositor

    Compositor._render_chops = _original
    _original = None


def installed() -> bool:
    try:
        from textual._compositor import Compositor
    except ImportError:
        return False
    return vars(Compositor).get("_render_chops") is render_chops
