"""Line charts as text: a pure function from curves and a size to rows of text and style
spans, drawn the same by the chart view (tui.widgets.chart_view) and `rgpu-tui chart`.

A panel is a title row, the plot rows and two axis rows:

     train/box_loss  last 1.23 @ep30
      8.0┤⡇
      4.0┤⠈⠢⣀
      0.0┤    ⠉⠉⠒⠒⠤⠤⣀⣀⣀
         └──────────↻──────✧──
          1        50      100

- Braille cells (2x4 dots each); a segment joins two consecutive points of a curve
  (Bresenham), a gap breaks it. A cell has one colour: the curve drawn last owns it
  (the raw line is drawn first, faint; the smoothed line over it).
- The y-axis has 2 to 5 ticks at round numbers and the range snaps to them, so a loss
  that falls a little each epoch moves no tick and redraws only the cells it reaches;
  "robust" ranges over the 2nd..98th percentile (outliers drawn at the edge); "log"
  is log10 of the positive values (a curve with none is drawn linear, and said).
- The x-range is the caller's (shared by every panel and run); the axis row carries the
  marks (best epoch, resume points, saved epoch_N.pt, diverged epochs: the highest rank
  wins a cell), the last row the x labels (epochs, durations or dollars).
- Values beyond +-1e300 are drawn at +-1e300 (so no span overflows); nothing here raises
  on any float.

Spans never overlap (the app's fast row painting needs that): a cell's style is one
string, a cursor column included (a thin line through empty cells, a curve's cell
reversed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.formatting import fmt_duration

Span = tuple[int, int, str]
Row = tuple[str, tuple[Span, ...]]

LIMIT = 1e300
BRAILLE = [" "] + [chr(0x2800 + i) for i in range(1, 256)]
# the dot bit of (row 0..3, column 0..1) inside a braille cell
DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
AXIS_STYLE = "dim"
CURSOR_STYLE = "bright_black"
NICE = (1.0, 2.0, 2.5, 5.0, 10.0)
NICE_CEIL = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
Y_MODES = ("linear", "robust", "log")


@dataclass(frozen=True)
class Curve:
    xs: Sequence[float]
    ys: Sequence[float | None]
    style: str


@dataclass(frozen=True)
class Mark:
    x: float
    char: str  # one cell wide
    style: str
    rank: int = 0  # the highest rank wins a shared cell


@dataclass(frozen=True)
class XAxis:
    lo: float
    hi: float
    kind: str = "epoch"  # "epoch", "time" (seconds), "cost" (dollars)


def _clamp(v: float) -> float:
    return LIMIT if v > LIMIT else -LIMIT if v < -LIMIT else v


def nice_step(span: float, intervals: int) -> float:
    """A round step (1, 2, 2.5, 5 x 10^k) that cuts `span` into about `intervals`."""
    raw = span / max(intervals, 1)
    if not raw > 0 or not math.isfinite(raw):
        return 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in NICE:
        if m * mag >= raw * (1 - 1e-9):
            return m * mag
    return 10.0 * mag


def nice_ceil(value: float) -> float:
    """The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) >= value: an
    x-axis end that moves seldom."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    value = min(value, LIMIT)
    mag = 10.0 ** math.floor(math.log10(value))
    for m in NICE_CEIL:
        if m * mag >= value * (1 - 1e-12):
            return m * mag
    return 10.0 * mag


def fmt_tick(value: float, step: float) -> str:
    """A tick label: as many decimals as the step needs, k/M for thousands and millions,
    an exponent for the very large and the very small."""
    a = abs(value)
    if a < step * 1e-6:
        return "0"
    if a >= 1e9 or a < 1e-4 or step < 1e-4:
        return f"{value:.1e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
    if a >= 1e6 and step >= 1e5:
        return f"{value / 1e6:.{0 if step >= 1e6 else 1}f}M"
    if a >= 1e4 and step >= 100:
        return f"{value / 1e3:.{0 if step >= 1e3 else 1}f}k"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    if step * 10**decimals % 1 > 1e-6:  # 2.5 x 10^k
        decimals += 1
    return f"{value:.{min(decimals, 6)}f}"


TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800)
TIME_STEPS += (21600, 43200, 86400, 172800, 432000, 864000)


def fmt_x(value: float, kind: str) -> str:
    if kind == "time":
        s = int(round(value))
        if s and s % 86400 == 0:
            return f"{s // 86400}d"
        if s and s % 3600 == 0:
            return f"{s // 3600}h"
        if s and s < 3600 and s % 60 == 0:
            return f"{s // 60}m"
        return fmt_duration(value)
    if kind == "cost":
        return f"${value:,.0f}" if value >= 100 else f"${value:.2f}".replace(".00", "")
    return str(int(round(value)))


def percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return 0.0
    i = min(max(q * (len(ordered) - 1), 0.0), len(ordered) - 1)
    lo = int(i)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (i - lo)


@dataclass(frozen=True)
class YScale:
    lo: float  # in drawing space (log10 for log)
    hi: float
    ticks: tuple[tuple[float, str], ...]  # (value in drawing space, label)
    log: bool
    note: str | None = None  # "log: no positive values"


def y_scale(curves: Sequence[Curve], mode: str, intervals: int) -> YScale | None:
    """The y-range and ticks of the finite values of `curves`; None when there are none."""
    values = [_clamp(y) for c in curves for y in c.ys if y is not None and y == y]
    values = [v for v in values if not math.isinf(v)]
    if not values:
        return None
    note = None
    if mode == "log":
        positive = [v for v in values if v > 0]
        if positive:
            return _log_scale(min(positive), max(positive), intervals)
        note = "log: no positive value, linear"
    lo, hi = min(values), max(values)
    if mode == "robust" and len(values) >= 10:
        ordered = sorted(values)
        lo, hi = percentile(ordered, 0.02), percentile(ordered, 0.98)
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = (lo - pad, hi + pad) if lo < 0 or lo - pad >= 0 else (0.0, hi + pad)
    step, lo_t, hi_t = _fit(lo, hi, max(intervals, 1))
    count = int(round((hi_t - lo_t) / step))
    ticks = tuple((lo_t + i * step, fmt_tick(lo_t + i * step, step)) for i in range(count + 1))
    return YScale(lo_t, hi_t, ticks, log=False, note=note)


def _snap(lo: float, hi: float, step: float) -> tuple[float, float, int]:
    lo_t = math.floor(lo / step + 1e-9) * step
    hi_t = math.ceil(hi / step - 1e-9) * step
    return lo_t, hi_t, int(round((hi_t - lo_t) / step))


def _fit(lo: float, hi: float, intervals: int) -> tuple[float, float, float]:
    """The smallest round step whose snapped range [lo_t, hi_t] holds lo..hi in at most
    `intervals` steps (the tightest range for that many ticks)."""
    step = nice_step(hi - lo, intervals)
    lo_t, hi_t, n = _snap(lo, hi, step)
    for _ in range(8):
        if n <= intervals:
            break
        step = nice_step(step * 1.01, 1)  # the next larger round step
        lo_t, hi_t, n = _snap(lo, hi, step)
    for _ in range(8):
        smaller = _smaller(step)
        if smaller is None:
            break
        lo_s, hi_s, m = _snap(lo, hi, smaller)
        if m > intervals:
            break
        step, lo_t, hi_t = smaller, lo_s, hi_s
    if hi_t <= lo_t:
        hi_t = lo_t + step
    return step, lo_t, hi_t


def _smaller(step: float) -> float | None:
    """The next smaller round step (5 -> 2.5 -> 2 -> 1 -> 0.5 ...)."""
    if not step > 0 or not math.isfinite(step):
        return None
    mag = 10.0 ** math.floor(math.log10(step) + 1e-9)
    m = step / mag
    for a, b in ((10.0, 5.0), (5.0, 2.5), (2.5, 2.0), (2.0, 1.0), (1.0, 0.5)):
        if abs(m - a) < 1e-6:
            return b * mag
    return None


def _log_scale(lo: float, hi: float, intervals: int) -> YScale:
    llo, lhi = math.log10(lo), math.log10(hi)
    if lhi - llo < 1e-9:
        llo, lhi = llo - 0.5, lhi + 0.5
    candidates = []
    for k in range(math.floor(llo), math.ceil(lhi) + 1):
        for m in (1, 2, 5):
            v = math.log10(m) + k
            if llo - 1e-9 <= v <= lhi + 1e-9:
                candidates.append((v, m))
    if len([c for c in candidates if c[1] == 1]) >= 2:
        candidates = [c for c in candidates if c[1] == 1]
    if len(candidates) > intervals + 1:
        every = math.ceil(len(candidates) / (intervals + 1))
        candidates = candidates[::every]
    if len(candidates) < 2:
        candidates = [(llo, 0), (lhi, 0)]
    ticks = tuple((v, _log_label(v)) for v, _m in candidates)
    return YScale(llo, lhi, ticks, log=True)


def _log_label(v: float) -> str:
    value = 10.0**v
    if 1e-3 <= value < 1e4:
        return f"{value:.3g}"
    return f"{value:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")


def _plot_y(y: float, scale: YScale) -> float | None:
    if scale.log:
        if not y > 0:
            return None
        return math.log10(min(y, LIMIT))
    return _clamp(y)


def _frac(v: float, lo: float, hi: float) -> float:
    span = hi - lo
    if not math.isfinite(span):
        return (v / 2 - lo / 2) / (hi / 2 - lo / 2)
    return (v - lo) / span if span else 0.0


def _line(cells: bytearray, owner: bytearray, w: int, dots_h: int, a, b, who: int) -> None:
    """Set the dots from a to b (Bresenham)."""
    x0, y0 = a
    x1, y1 = b
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx = 1 if x0 < x1 else -1
    sy = 1 if y0 < y1 else -1
    err = dx + dy
    while True:
        if 0 <= x0 < 2 * w and 0 <= y0 < dots_h:
            i = (y0 >> 2) * w + (x0 >> 1)
            cells[i] |= DOT[y0 & 3][x0 & 1]
            owner[i] = who
        if x0 == x1 and y0 == y1:
            return
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


def _spans(styles: list[str | None], offset: int) -> list[Span]:
    """Runs of equal styles as spans (None: no span)."""
    out: list[Span] = []
    start = 0
    n = len(styles)
    for i in range(1, n + 1):
        if i == n or styles[i] != styles[start]:
            if styles[start]:
                out.append((offset + start, offset + i, styles[start]))
            start = i
    return out


def _cut(segments: Sequence[tuple[str, str]], width: int) -> Row:
    """One row from (text, style) pieces, cut at `width` (the last cell an ellipsis)."""
    text, spans, pos = [], [], 0
    for piece, style in segments:
        if pos >= width:
            break
        if pos + len(piece) > width:
            piece = piece[: max(width - pos - 1, 0)] + "…"
        if piece:
            text.append(piece)
            if style:
                spans.append((pos, pos + len(piece), style))
            pos += len(piece)
    return "".join(text), tuple(spans)


def text_row(segments: Sequence[tuple[str, str]], width: int) -> Row:
    """A row of words (the keys, the legend, a note): too long for `width`, it is cut
    between two of its parts ("  " apart: a key and what it does stay together) when that
    keeps half the row, else between two words, "…" in place of the rest; a first word
    wider than `width` is cut at the edge."""
    width = max(width, 1)
    plain, spans = _cut(segments, 1 << 30)
    if len(plain) <= width:
        return plain, spans
    end = plain.rfind("  ", 0, width)  # the kept words end before it; "…" takes a cell
    if end < width // 2:
        end = plain.rfind(" ", 0, width)
    kept = plain[:end].rstrip() if end > 0 else ""
    if not kept:
        return _cut(segments, width)
    cut = len(kept)
    spans = tuple((a, min(b, cut), st) for a, b, st in spans if a < cut)
    return kept + "…", spans


def x_to_dot(x: float, axis: XAxis, dots_w: int) -> int:
    f = _frac(_clamp(x), axis.lo, axis.hi) if axis.hi > axis.lo else 0.0
    return int(round(min(max(f, 0.0), 1.0) * (dots_w - 1)))


def draw_panel(
    title: Sequence[tuple[str, str]],
    curves: Sequence[Curve],
    width: int,
    height: int,
    axis: XAxis,
    *,
    marks: Sequence[Mark] = (),
    y_mode: str = "linear",
    cursor: float | None = None,
    empty: str = "no values yet",
) -> list[Row]:
    """`height` rows of at most `width` cells: the title, the plot, the axis and its
    labels (fewer rows when `height` is under 5: the title and why)."""
    width = max(width, 1)
    rows: list[Row] = [_cut(title, width)]
    plot_h = height - 3
    if plot_h < 2 or width < 12:
        if height >= 2:
            rows.append(_cut([("(too small to draw)", "dim italic")], width))
        return rows[:height]
    scale = y_scale(curves, y_mode, max(2, min(5, plot_h - 1)))
    labels = [lab for _v, lab in scale.ticks] if scale else ["0"]
    label_w = max(len(lab) for lab in labels) + 1
    w = width - label_w
    if w < 6:
        rows.append(_cut([("(too small to draw)", "dim italic")], width))
        return rows
    dots_w, dots_h = 2 * w, 4 * plot_h
    cells = bytearray(w * plot_h)
    owner = bytearray(w * plot_h)
    styles: list[str] = []
    if scale is not None:
        for curve in curves:
            styles.append(curve.style)
            who = len(styles)
            prev = None
            for x, y in zip(curve.xs, curve.ys, strict=False):
                py = _plot_y(y, scale) if y is not None and y == y else None
                if py is None:
                    prev = None
                    continue
                f = _frac(py, scale.lo, scale.hi)
                dot = (
                    x_to_dot(x, axis, dots_w),
                    int(round((1.0 - min(max(f, 0.0), 1.0)) * (dots_h - 1))),
                )
                _line(cells, owner, w, dots_h, prev or dot, dot, who)
                prev = dot
    cursor_col = None
    if cursor is not None and axis.lo <= cursor <= axis.hi:
        cursor_col = x_to_dot(cursor, axis, dots_w) >> 1
    tick_rows: dict[int, str] = {}
    if scale is not None:
        for v, lab in scale.ticks:
            f = _frac(v, scale.lo, scale.hi)
            tick_rows.setdefault(int(round((1.0 - f) * (plot_h - 1))), lab)
    for r in range(plot_h):
        lab = tick_rows.get(r)
        prefix = (lab.rjust(label_w - 1) + "┤") if lab is not None else " " * (label_w - 1) + "│"
        line = cells[r * w : (r + 1) * w]
        text = "".join([BRAILLE[b] for b in line])
        who = owner[r * w : (r + 1) * w]
        cell_styles: list[str | None] = [styles[o - 1] if o else None for o in who]
        if cursor_col is not None:  # a thin line, the curve's own cell reversed
            s = cell_styles[cursor_col]
            if line[cursor_col]:
                cell_styles[cursor_col] = f"{s} reverse" if s else "reverse"
            else:
                text = text[:cursor_col] + "│" + text[cursor_col + 1 :]
                cell_styles[cursor_col] = CURSOR_STYLE
        spans = [(0, label_w, AXIS_STYLE), *_spans(cell_styles, label_w)]
        rows.append((prefix + text, tuple(spans)))
    if scale is None:  # nothing to draw: say so in the middle of the plot
        mid = 1 + plot_h // 2
        note = f" {empty} "[:w]
        at = label_w + max((w - len(note)) // 2, 0)
        plain = rows[mid][0]
        spans = ((0, label_w, AXIS_STYLE), (at, at + len(note), "dim italic"))
        rows[mid] = (plain[:at] + note + plain[at + len(note) :], spans)
    rows.append(_axis_row(marks, axis, w, label_w, dots_w, cursor_col))
    rows.append(_label_row(axis, w, label_w, dots_w))
    return rows


def _axis_row(marks, axis: XAxis, w: int, label_w: int, dots_w: int, cursor_col) -> Row:
    chars = ["─"] * w
    styles: list[str | None] = [AXIS_STYLE] * w
    ranks = [-1] * w
    for m in marks:
        if not (axis.lo <= m.x <= axis.hi):
            continue
        c = x_to_dot(m.x, axis, dots_w) >> 1
        if m.rank > ranks[c]:
            chars[c], styles[c], ranks[c] = m.char, m.style, m.rank
    if cursor_col is not None and ranks[cursor_col] < 0:
        chars[cursor_col], styles[cursor_col] = "┴", "bold"
    plain = " " * (label_w - 1) + "└" + "".join(chars)
    spans = [(label_w - 1, label_w, AXIS_STYLE), *_spans(styles, label_w)]
    return plain, tuple(spans)


def _label_row(axis: XAxis, w: int, label_w: int, dots_w: int) -> Row:
    span = axis.hi - axis.lo
    widest = max(len(fmt_x(axis.lo, axis.kind)), len(fmt_x(axis.hi, axis.kind))) + 2
    count = max(w // max(widest, 1), 1)
    step = nice_step(span, count) if span > 0 else 1.0
    if axis.kind == "epoch":
        step = max(step, 1.0)
    elif axis.kind == "time" and span > 0:
        raw = span / count
        step = next((float(t) for t in TIME_STEPS if t >= raw), nice_step(span, count))
    line = [" "] * (label_w + w)
    taken = -1
    first = math.ceil(axis.lo / step - 1e-9) * step
    values = [axis.lo] if axis.kind == "epoch" else []
    values += [first + i * step for i in range(int(span / step) + 2) if first + i * step <= axis.hi]
    for v in values:
        text = fmt_x(v, axis.kind)
        c = label_w + (x_to_dot(v, axis, dots_w) >> 1)
        start = min(max(c - len(text) // 2, 0), label_w + w - len(text))
        if start <= taken or start < 0:
            continue
        line[start : start + len(text)] = list(text)
        taken = start + len(text)
    plain = "".join(line).rstrip()
    return plain, ((0, len(plain), AXIS_STYLE),) if plain else ()
