"""Panes made of one-row lines that repaint only the cells that changed.

`Widget.refresh()` repaints a whole widget, and Textual sends every row of it with
all its SGR codes and trailing spaces: a GPU row whose power moved by 1 W costs
about 260 bytes. A LinePane keeps the rows it shows and, when they change, marks
only the changed span of each changed row dirty; Textual then renders and sends
just those cells. Over SSH at 1 Hz that is most of the bytes a frame costs.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget

from ..inert import inert

RowKey = tuple[str, str, tuple]


def row_key(row: Text) -> RowKey:
    return (row.plain, str(row.style), tuple(row.spans))


def _visible(plain: str, width: int) -> str:
    """What a no-wrap, ellipsis row shows in `width` cells (padding aside)."""
    return plain if len(plain) <= width else plain[: width - 1] + "…"


def cut_words(row: Text, width: int, sep: str = " ") -> Text:
    """The row cut to `width` cells between two words, "…" in place of the rest: a hint is
    never cut mid-word, nor inside a parenthesis it opened (the cut goes before the "(",
    when that keeps half the row). `sep`: where to cut first (the cost strip's "  " between its
    parts), when such a place keeps at least half the row; else at a space. A row with
    wide characters, or one word wider than `width`, is cut at the edge."""
    plain = row.plain
    if len(plain) <= width and cell_len(plain) <= width:
        return row
    if width <= 1 or cell_len(plain) != len(plain):
        out = row.copy()
        out.truncate(max(width, 0), overflow="ellipsis")
        return out
    limit = width - 1  # the cells before the "…"
    cut = plain.rfind(sep, 0, limit + 1)
    if cut < limit // 2 and sep != " ":
        cut = plain.rfind(" ", 0, limit + 1)
    if cut <= 0:
        cut = limit
    opened = _unclosed(plain[:cut])
    if opened is not None and opened >= limit // 2:  # never "… (c: every…": before the "("
        cut = opened
    out = row[:cut]
    out.rstrip()
    out.append("…")
    return out


def _unclosed(text: str) -> int | None:
    """Where the last "(" of `text` that is not closed in it starts, or None."""
    opened: list[int] = []
    for i, ch in enumerate(text):
        if ch == "(":
            opened.append(i)
        elif ch == ")" and opened:
            opened.pop()
    return opened[-1] if opened else None


def _cell_styles(spans: tuple, n: int) -> list:
    """The spans covering each of the first `n` cells, in order (a cell's style)."""
    cells: list = [()] * n
    for span in spans:
        for i in range(max(span.start, 0), min(span.end, n)):
            cells[i] = (*cells[i], span.style)
    return cells


def changed_span(old: RowKey, new: RowKey, width: int) -> tuple[int, int] | None:
    """The columns [start, end) of a row that differ between two versions, or None.

    A different base style, or characters wider than one cell, mark the whole row;
    otherwise the rows are compared cell by cell, each cell's character and the spans
    that style it (a row is padded with spaces)."""
    if old == new:
        return None
    a, b = old[0], new[0]
    if old[1] != new[1] or cell_len(a) != len(a) or cell_len(b) != len(b):
        return (0, width)
    a, b = _visible(a, width), _visible(b, width)
    n = max(len(a), len(b))
    a, b = a.ljust(n), b.ljust(n)
    if old[2] != new[2]:
        sa, sb = _cell_styles(old[2], n), _cell_styles(new[2], n)
        differs = [i for i in range(n) if a[i] != b[i] or sa[i] != sb[i]]
        if not differs:
            return None
        return (differs[0], differs[-1] + 1)
    start = 0
    while start < n and a[start] == b[start]:
        start += 1
    if start == n:
        return None  # only cut-off columns changed
    end = n
    while end > start and a[end - 1] == b[end - 1]:
        end -= 1
    return (start, end)


def _one_row(row: Text) -> Text:
    """The row as render() shows it when joined: cut at the edge, its base style as a
    span (Textual maps "red" to the theme's red only for spans), and nothing a terminal
    would act on (run names, errors, metric names, paths come from run files)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(inert(row))
    return out


class LinePane(Widget):
    """Subclasses build their rows in `build_rows(width)` and call `repaint_rows()` when
    their data changed; `AUTO_HEIGHT` panes are as tall as their rows."""

    AUTO_HEIGHT = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._rows: list[Text] = []
        self._keys: list[RowKey] = []
        self._painted_width = -1
        self._strips: dict[int, tuple[tuple, Strip]] = {}  # y -> (what it shows, strip)
        self._style_base: Style | None = None  # the widget style _style_memo is for
        self._style_memo: dict = {}  # span style -> rich style on _style_base

    def build_rows(self, width: int) -> list[Text]:
        raise NotImplementedError

    @property
    def row_count(self) -> int:
        """The rows last built (its height, for an auto-height pane)."""
        return len(self._rows)

    def row_width(self) -> int:
        return self.size.width or 80

    def _built_rows(self, width: int) -> list[Text]:
        return [_one_row(r) for r in self.build_rows(width)]

    def repaint_rows(self, full: bool = False) -> None:
        width = self.row_width()
        rows = self._built_rows(width)
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

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """An auto height is the number of rows built for this width: a row never wraps
        (each is cut at the edge). Textual's own measure wraps the joined rows, and rows
        built before the first resize (for 80 columns) made a 48-column header one row
        taller, a blank row that no later repaint took back (it changes no row count)."""
        rows = self._rows if width == self._painted_width else self._built_rows(width)
        return max(len(rows), 1)

    def render_line(self, y: int) -> Strip:
        """One row, rendered only when it changed: Widget's own render_line renders every
        row of the pane again for a one-cell change."""
        if self.text_selection is not None or not (0 <= y < len(self._keys)):
            return super().render_line(y)
        style = self.visual_style
        width = self.size.width
        key = (self._keys[y], width, style)
        cached = self._strips.get(y)
        if cached is not None and cached[0] == key:
            return cached[1]
        row = self._rows[y]
        strip = self._quick_strip(row, width, style)
        if strip is None:  # wide characters, a cut row, nested spans: Textual's own way
            strips = Visual.to_strips(self, visualize(self, row), width, 1, style)
            strip = strips[0] if strips else Strip.blank(width, style.rich_style)
        self._strips[y] = (key, strip)
        return strip

    def _quick_strip(self, row: Text, width: int, style: Style) -> Strip | None:
        """The strip Textual's Content would render for a one-row Text of one-cell
        characters whose spans do not nest, without its wrapping machinery (~5x faster).
        Span styles convert as Content.from_rich_text converts them (the theme's ANSI
        colours) and sit on the widget's style as Content.render puts them."""
        plain = row.plain
        if len(plain) > width or cell_len(plain) != len(plain):
            return None
        if self._style_base is not style:
            self._style_base, self._style_memo = style, {}
        memo = self._style_memo
        segments = []
        pos = 0
        for span in row.spans:
            if span.start < pos:
                return None
            if span.start > pos:
                segments.append(Segment(plain[pos : span.start], self._rich(None, style, memo)))
            if span.end > span.start:
                segments.append(
                    Segment(plain[span.start : span.end], self._rich(span.style, style, memo))
                )
            pos = max(pos, span.end)
        if pos < len(plain):
            segments.append(Segment(plain[pos:], self._rich(None, style, memo)))
        return Strip(segments, len(plain))

    def _rich(self, span_style, base: Style, memo: dict) -> RichStyle:
        key = span_style if isinstance(span_style, (str, type(None))) else str(span_style)
        found = memo.get(key)
        if found is None:
            if span_style is None:
                found = base.rich_style
            else:
                rich = (
                    self.app.console.get_style(span_style)
                    if isinstance(span_style, str)
                    else span_style
                )
                found = (base + Style.from_rich_style(rich, self.app.ansi_theme)).rich_style
            memo[key] = found
        return found

    def render(self) -> Text:
        if not self._keys and not self._rows:
            self._rows = self._built_rows(self.row_width())
            self._keys = [row_key(r) for r in self._rows]
        return Text("\n", no_wrap=True, overflow="ellipsis").join(self._rows)
