"""Panes made of one-row lines that repaint only the cells that changed.

`Widget.refresh()` repaints a whole widget, and Textual sends every row of it with
all its SGR codes and trailing spaces: a GPU row whose power moved by 1 W costs
about 260 bytes. A LinePane keeps the rows it shows and, when they change, marks
only the changed span of each changed row dirty; Textual then renders and sends
just those cells. Over SSH at 1 Hz that is most of the bytes a frame costs.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget

RowKey = tuple[str, str, tuple]


def row_key(row: Text) -> RowKey:
    return (row.plain, str(row.style), tuple(row.spans))


def changed_span(old: RowKey, new: RowKey, width: int) -> tuple[int, int] | None:
    """The columns [start, end) of a row that differ between two versions, or None.

    Different styles, or characters wider than one cell, mark the whole row: only plain
    text with the same spans is compared cell by cell (a row is padded with spaces)."""
    if old == new:
        return None
    a, b = old[0], new[0]
    if old[1:] != new[1:] or cell_len(a) != len(a) or cell_len(b) != len(b):
        return (0, width)
    n = max(len(a), len(b))
    a, b = a.ljust(n), b.ljust(n)
    start = 0
    while start < n and a[start] == b[start]:
        start += 1
    end = n
    while end > start and a[end - 1] == b[end - 1]:
        end -= 1
    if start >= width:
        return None  # only cut-off columns changed
    if n > width:
        end = width  # a longer row ends in an ellipsis that may have moved
    return (start, min(end, width))


class LinePane(Widget):
    """Subclasses build their rows in `build_rows(width)` and call `repaint_rows()` when
    their data changed; `AUTO_HEIGHT` panes are as tall as their rows."""

    AUTO_HEIGHT = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._rows: list[Text] = []
        self._keys: list[RowKey] = []
        self._painted_width = -1

    def build_rows(self, width: int) -> list[Text]:
        raise NotImplementedError

    def row_width(self) -> int:
        return self.size.width or 80

    def repaint_rows(self, full: bool = False) -> None:
        width = self.row_width()
        rows = self.build_rows(width)
        keys = [row_key(r) for r in rows]
        if not full and keys == self._keys and width == self._painted_width:
            return
        old = self._keys
        self._rows, self._keys = rows, keys
        if len(keys) != len(old):
            if self.AUTO_HEIGHT:
                self.styles.height = max(len(keys), 1)
            self.refresh(layout=True)
        elif full or width != self._painted_width or not self.size.width:
            self.refresh()
        else:
            regions = []
            for y, (o, k) in enumerate(zip(old, keys, strict=True)):
                span = changed_span(o, k, width)
                if span is not None:
                    regions.append(Region(span[0], y, span[1] - span[0], 1))
            if regions:
                self.refresh(*regions)
        self._painted_width = width

    def on_resize(self) -> None:
        self.repaint_rows(full=True)

    def render(self) -> Text:
        if not self._keys and not self._rows:
            self._rows = self.build_rows(self.row_width())
            self._keys = [row_key(r) for r in self._rows]
        return Text("\n", no_wrap=True, overflow="ellipsis").join(self._rows)
