"""The braille renderer (core.render.chart_draw): axes, ticks, gaps, marks, scales, and
never a crash on any float."""

from __future__ import annotations

import math
import random

import pytest

from rgpu_tui.core.render.chart_draw import (
    BRAILLE,
    Curve,
    Mark,
    XAxis,
    draw_panel,
    fmt_tick,
    nice_ceil,
    text_row,
    x_to_dot,
    y_scale,
)

DOTS = set(BRAILLE[1:])


def panel(ys, width=40, height=12, xs=None, **kw):
    xs = xs or list(range(1, len(ys) + 1))
    axis = kw.pop("axis", XAxis(1, max(len(ys), 2)))
    return draw_panel([("m", "bold")], [Curve(xs, ys, "cyan")], width, height, axis, **kw)


def check_shape(rows, width, height):
    assert len(rows) == height
    for plain, spans in rows:
        assert len(plain) <= width
        ends = sorted(spans)
        for (_a, b, _s), (c, _d, _t) in zip(ends, ends[1:], strict=False):
            assert b <= c, f"overlapping spans in {plain!r}"


def test_a_panel_has_a_title_a_labelled_y_axis_and_an_epoch_axis() -> None:
    rows = panel([20.0 / e for e in range(1, 31)], width=50, height=14, axis=XAxis(1, 40))
    check_shape(rows, 50, 14)
    assert rows[0][0] == "m"
    labels = [r[0].split("┤")[0].strip() for r in rows[1:-2] if "┤" in r[0]]
    assert labels[0] == "20" and labels[-1] == "0"  # a round top and bottom
    assert 3 <= len(labels) <= 6
    assert rows[-2][0].strip().startswith("└")
    assert rows[-1][0].split() == ["1", "5", "10", "15", "20", "25", "30", "35", "40"]
    assert any(ch in DOTS for r in rows[1:-2] for ch in r[0])


def test_a_gap_breaks_the_line() -> None:
    ys = [1.0] * 10 + [None] * 10 + [1.0] * 10
    rows = panel(ys, width=33, height=6, axis=XAxis(1, 30))
    flat = [r[0] for r in rows[1:-2] if any(ch in DOTS for ch in r[0])]
    assert len(flat) == 1
    line = flat[0].split("┤", 1)[1]  # the plot cells after the y label
    axis = XAxis(1, 30)
    last, first = (x_to_dot(e, axis, 2 * len(line)) >> 1 for e in (10, 21))
    assert all(ch in DOTS for ch in line[: last + 1])
    assert line[last + 1 : first].strip() == ""  # no segment joins epoch 10 to epoch 21
    assert first - last > 5
    assert all(ch in DOTS for ch in line[first:])


def test_marks_sit_on_the_axis_row_and_the_highest_rank_wins() -> None:
    marks = [Mark(10, "╵", "dim", 1), Mark(10, "✦", "green", 3), Mark(20, "↻", "yellow", 2)]
    rows = panel([float(e) for e in range(1, 31)], width=40, marks=marks, axis=XAxis(1, 30))
    axis = rows[-2][0]
    assert "✦" in axis and "↻" in axis and "╵" not in axis
    assert axis.index("✦") < axis.index("↻")


def test_huge_negative_and_non_finite_values_never_raise() -> None:
    values = [1e308, -1e308, float("inf"), float("nan"), None, -5.0, 0.0, 5e-324]
    for mode in ("linear", "robust", "log"):
        rows = panel(values, width=30, height=8, y_mode=mode, axis=XAxis(1, 8))
        check_shape(rows, 30, 8)
    random.seed(1)
    for _ in range(200):
        ys = [random.choice([None, float("nan"), 1e300, -1e300, random.uniform(-1e9, 1e9)])]
        ys += [random.uniform(-1, 1) for _ in range(5)]
        rows = panel(ys, width=random.randint(12, 60), height=random.randint(4, 12))
        assert rows


def test_no_values_says_so_in_the_plot() -> None:
    rows = panel([None, None], width=40, height=8, empty="no values yet")
    assert any("no values yet" in r[0] for r in rows)


def test_too_small_says_so() -> None:
    rows = panel([1.0, 2.0], width=40, height=3)
    assert len(rows) == 2 and "too small" in rows[1][0]


def test_ignoring_outliers_ranges_over_the_bulk() -> None:
    ys = [1.0 + 0.01 * i for i in range(100)]
    ys[50] = 1e6  # one spike
    plain = y_scale([Curve(range(100), ys, "")], "linear", 4)
    robust = y_scale([Curve(range(100), ys, "")], "robust", 4)
    assert plain.hi >= 1e6
    assert robust.hi <= 3.0


def test_log_scale_ticks_are_powers_of_ten() -> None:
    ys = [10.0 ** (-e / 5) for e in range(30)]
    scale = y_scale([Curve(range(30), ys, "")], "log", 5)
    assert scale.log
    assert [label for _v, label in scale.ticks] == ["1e-5", "1e-4", "0.001", "0.01", "0.1", "1"]
    no_positive = y_scale([Curve(range(3), [-1.0, -2.0, -3.0], "")], "log", 4)
    assert not no_positive.log and no_positive.note


@pytest.mark.parametrize(
    ("value", "expected"), [(31, 40), (201, 250), (1, 1), (0.7, 0.8), (1000, 1000), (1001, 1200)]
)
def test_the_x_end_is_a_round_number(value, expected) -> None:
    assert math.isclose(nice_ceil(value), expected)


def test_tick_labels_are_compact() -> None:
    assert fmt_tick(0.25, 0.25) == "0.25"
    assert fmt_tick(20000.0, 5000.0) == "20k"
    assert fmt_tick(1.5e6, 5e5) == "1.5M"
    assert fmt_tick(1e300, 1e300) == "1.0e300"
    assert fmt_tick(0.0, 0.5) == "0"


def test_the_cursor_is_a_column_without_nesting_spans() -> None:
    rows = panel([float(e) for e in range(1, 21)], width=30, height=8, cursor=10.0)
    check_shape(rows, 30, 8)
    label_w = rows[-2][0].index("└") + 1
    w = 30 - label_w
    at = label_w + (x_to_dot(10.0, XAxis(1, 20), 2 * w) >> 1)
    column = [(r[0][at], [st for a, b, st in r[1] if a <= at < b]) for r in rows[1:-2]]
    assert sum(ch == "│" for ch, _st in column) >= 3  # a thin line through empty cells
    assert any(ch in DOTS and "reverse" in st[0] for ch, st in column)  # the curve's cell
    assert rows[-2][0][at] == "┴"


KEYS = [
    ("e", "bold"), (" smooth 0.6  ", ""), ("y", "bold"), (" linear  ", ""), ("x", "bold"),
    (" epoch  ", ""), ("←/→", "bold"), (" cursor  ", ""), ("/", "bold"), (" metric", ""),
]  # fmt: skip


def test_a_text_row_is_cut_between_its_parts_never_mid_word():
    """The chart's key and legend rows at 56 columns (80x24) ended "/metric …" and
    "diverge…"."""
    full = "e smooth 0.6  y linear  x epoch  ←/→ cursor  / metric"
    assert text_row(KEYS, 80) == (full, ((0, 1, "bold"), (14, 15, "bold"), (24, 25, "bold"),
                                         (33, 36, "bold"), (45, 46, "bold")))  # fmt: skip
    plain, spans = text_row(KEYS, 40)
    assert plain == "e smooth 0.6  y linear  x epoch…"  # a key stays with what it does
    assert spans == ((0, 1, "bold"), (14, 15, "bold"), (24, 25, "bold"))
    legend = [("✦ best on Hub  ✧ best not pushed  ↻ resume  ✗ diverged  ╵ epoch_N.pt", "dim")]
    assert text_row(legend, 56) == ("✦ best on Hub  ✧ best not pushed  ↻ resume  ✗ diverged…",
                                    ((0, 54, "dim"),))  # fmt: skip
    note = [("no price for live_exp (price_per_hour in the config or --price-per-hour)", "")]
    for width in range(12, 80):
        plain, _ = text_row(note, width)
        assert len(plain) <= width
        if plain.endswith("…"):
            assert note[0][0][len(plain) - 1] == " ", plain  # a word ended there
    assert text_row([("supercalifragilistic", "")], 6) == ("super…", ())
