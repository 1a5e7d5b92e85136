"""Terminal output that sends only what changes: a style's SGR codes once, not per segment.

Textual 8.2.8 renders each segment of an update as ``ESC[<all its codes>m text ESC[0m``: a log
row in truecolor carries its 29-byte colour pair twice (text, then padding) and two resets,
more bytes than its text. A `Writer` keeps the terminal's current SGR state and sends the
difference to the next segment's (nothing when it is the same, only the colour that changed,
a reset only when an attribute goes off), and a row's trailing spaces at the right edge of
the screen as one erase-to-end-of-line (EL) when the terminal erases with the current
background (`bce`) or the background is the terminal's own. The codes are Rich's (the same
colours, downgraded to the console's colour system as Textual does): what a terminal shows
is the same cell for cell.

Nothing of Textual is used here; `partial.py` and `band.py` write their updates with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from itertools import groupby, repeat
from operator import itemgetter

from rich.cells import cell_len, get_character_cell_size
from rich.color import ColorSystem
from rich.console import COLOR_SYSTEMS, Console
from rich.segment import Segment
from rich.style import Style

# Rich's attribute codes, in the order Rich writes them
_ATTRS = (
    ("bold", "1"),
    ("dim", "2"),
    ("italic", "3"),
    ("underline", "4"),
    ("blink", "5"),
    ("blink2", "6"),
    ("reverse", "7"),
    ("conceal", "8"),
    ("strike", "9"),
    ("underline2", "21"),
    ("frame", "51"),
    ("encircle", "52"),
    ("overline", "53"),
)
# attributes that draw nothing on a blank cell: trailing spaces with only these may be erased
_ERASABLE = frozenset({"1", "2", "3"})
ERASE_MIN = 4  # trailing spaces worth an EL (ESC[K is 3 bytes)

Look = tuple[tuple[str, ...], str, str]  # attribute codes, foreground codes, background codes
State = int  # a Look's number in its Pen (cheap to compare and hash, cell by cell)
DEFAULT: State = 0  # the terminal's default look, ((), "", "")
_STYLE_CACHE_MAX = 4096


_BCE_INDEX = 28  # bce's place among terminfo's boolean capabilities (term.h order)


def _terminfo_dirs(env: Mapping[str, str]) -> list[str]:
    dirs = []
    if env.get("TERMINFO"):
        dirs.append(env["TERMINFO"])
    if env.get("HOME"):
        dirs.append(os.path.join(env["HOME"], ".terminfo"))
    for d in env.get("TERMINFO_DIRS", "").split(":"):
        if d:
            dirs.append(d)
    dirs += ["/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo", "/usr/lib/terminfo"]
    return dirs


def terminfo_has_bce(term: str, env: Mapping[str, str]) -> bool:
    """Does TERM's compiled terminfo entry set `bce`? (read from the file: header, names,
    then one byte per boolean); False when no entry is found or it cannot be read."""
    if not term or "/" in term or term.startswith("."):
        return False
    for d in _terminfo_dirs(env):
        for sub in (term[0], f"{ord(term[0]):x}"):  # Linux: x/xterm, macOS: 78/xterm
            try:
                with open(os.path.join(d, sub, term), "rb") as f:
                    data = f.read(4096)
            except OSError:
                continue
            if len(data) < 12:
                return False
            magic, names, bools = (int.from_bytes(data[i : i + 2], "little") for i in (0, 2, 4))
            if magic not in (0o432, 0o1036) or bools <= _BCE_INDEX:
                return False
            at = 12 + names + _BCE_INDEX
            return at < len(data) and data[at] == 1
    return False


def erases_with_background(env: Mapping[str, str] | None = None) -> bool:
    """Does the terminal fill erased cells with the current background (terminfo `bce`)?
    tmux does, whatever its TERM says (screen's terminfo leaves `bce` out: GNU screen can
    switch it off); else the terminfo entry of TERM decides; unknown is no."""
    env = os.environ if env is None else env
    term = env.get("TERM", "")
    if env.get("TMUX") and term.startswith(("screen", "tmux")):
        return True
    return terminfo_has_bce(term, env)


class Pen:
    """Styles as SGR states for one colour system; `bce`: the terminal erases with the
    current background."""

    def __init__(self, color_system: ColorSystem, bce: bool) -> None:
        self.color_system = color_system
        self.bce = bce
        self._states: dict[Style, State | None] = {}
        self.looks: list[Look] = [((), "", "")]  # State -> Look
        self._numbers: dict[Look, State] = {self.looks[0]: DEFAULT}
        self._moves: dict[tuple[State | None, State], str] = {}
        self._erasable: dict[State, bool] = {}

    def state(self, style: Style | None) -> State | None:
        """The SGR state a segment of `style` needs (meta ignored); None for a link, which
        is written as Rich writes it."""
        if style is None:
            return DEFAULT
        states = self._states
        try:
            return states[style]
        except KeyError:
            pass
        if style.link:
            found = None
        else:
            system = self.color_system
            attrs = tuple(code for name, code in _ATTRS if getattr(style, name))
            fg = bg = ""
            if style.color is not None:
                fg = ";".join(style.color.downgrade(system).get_ansi_codes())
            if style.bgcolor is not None:
                bg = ";".join(style.bgcolor.downgrade(system).get_ansi_codes(False))
            look = (attrs, fg, bg)
            found = self._numbers.get(look)
            if found is None:
                found = self._numbers[look] = len(self.looks)
                self.looks.append(look)
        if len(states) >= _STYLE_CACHE_MAX:  # styles with meta (a log line's offset) pile up
            states.clear()
        states[style] = found
        return found

    def move(self, old: State | None, new: State) -> str:
        """The SGR sequence from `old` (None: unknown) to `new`."""
        key = (old, new)
        found = self._moves.get(key)
        if found is None:
            attrs, fg, bg = self.looks[new]
            was = None if old is None else self.looks[old]
            if was is None or not set(was[0]) <= set(attrs):
                codes = ["0", *attrs, *(c for c in (fg, bg) if c)]
            else:
                codes = [a for a in attrs if a not in was[0]]
                if fg != was[1]:
                    codes.append(fg or "39")
                if bg != was[2]:
                    codes.append(bg or "49")
            found = f"\x1b[{';'.join(codes)}m" if codes else ""
            self._moves[key] = found
        return found

    def erasable(self, state: State) -> bool:
        """May spaces of this state be sent as EL (the terminal paints the same cells)?"""
        found = self._erasable.get(state)
        if found is None:
            attrs, _fg, bg = self.looks[state]
            found = self._erasable[state] = (self.bce or not bg) and _ERASABLE.issuperset(attrs)
        return found


_pens: dict[tuple[ColorSystem, bool], Pen] = {}


def pen_for(console: Console, bce: bool) -> Pen:
    """The pen of `console`'s colour system (truecolor when it has none, as Textual's
    Strip.render does)."""
    system = COLOR_SYSTEMS.get(console.color_system or "", ColorSystem.TRUECOLOR)
    key = (system, bce)
    pen = _pens.get(key)
    if pen is None:
        pen = _pens[key] = Pen(system, bce)
    return pen


Cell = tuple[str, State]
_CHAR, _STATE = itemgetter(0), itemgetter(1)


def cells_of(segments: Iterable[Segment], pen: Pen) -> list[Cell] | None:
    """One (character, state) per terminal cell (a wide character, then ("", state) for
    its second cell); None when a segment is a control or a link (not a cell's look)."""
    cells: list[Cell] = []
    for text, style, control in segments:
        state = pen.state(style)
        if control or state is None:
            return None
        if len(text) == cell_len(text):
            cells.extend(zip(text, repeat(state, len(text)), strict=True))
            continue
        for ch in text:
            size = get_character_cell_size(ch)
            if size == 2:
                cells.append((ch, state))
                cells.append(("", state))
            elif size == 1:
                cells.append((ch, state))
            elif cells:  # a combining mark: part of the cell before it
                prev, prev_state = cells[-1]
                cells[-1] = (prev + ch, prev_state)
    return cells


def changed_runs(old: list[Cell] | None, new: list[Cell], gap: int = 8) -> list[tuple[int, int]]:
    """The columns [start, end) where `new` differs from `old` (None: unknown, all of it),
    runs closer than `gap` cells joined (a cursor move costs about as much); a run never
    starts or ends inside a wide character."""
    n = len(new)
    if old is None or len(old) != n:
        return [(0, n)] if n else []
    if old == new:
        return []
    # the equal head and tail, found by comparing slices (in C), then the cells between
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    x = lo
    lo, hi = 0, n - x
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[n - mid :] == new[n - mid :]:
            lo = mid
        else:
            hi = mid - 1
    stop = n - lo
    runs: list[tuple[int, int]] = []
    while x < stop:
        if old[x] == new[x]:
            x += 1
            continue
        start = x
        while x < stop and old[x] != new[x]:
            x += 1
        if runs and start - runs[-1][1] < gap:
            runs[-1] = (runs[-1][0], x)
        else:
            runs.append((start, x))
    out = []
    for start, end in runs:
        while start > 0 and (new[start][0] == "" or old[start][0] == ""):
            start -= 1  # the second cell of a wide character: from its first
        while end < n and (new[end][0] == "" or old[end][0] == ""):
            end += 1
        out.append((start, end))
    return out


class Writer:
    """One update's bytes, tracking the SGR state between its parts; `text()` the result
    (ending in the default state, as Textual's own output does)."""

    def __init__(self, pen: Pen) -> None:
        self.pen = pen
        self.parts: list[str] = []
        self.state: State | None = None  # unknown until the first change

    def raw(self, text: str) -> None:
        self.parts.append(text)

    def move_to(self, x: int, y: int) -> None:
        self.parts.append(f"\x1b[{y + 1};{x + 1}H")

    def reset(self, force: bool = False) -> None:
        """Back to the default state (`force`: also when the state is unknown)."""
        if self.state != DEFAULT and (force or self.state is not None):
            self.parts.append("\x1b[0m")
            self.state = DEFAULT

    def _set(self, state: State) -> None:
        if state != self.state:
            self.parts.append(self.pen.move(self.state, state))
            self.state = state

    def segments(self, segments: Iterable[Segment], to_edge: bool = False) -> None:
        """Write `segments` at the cursor; `to_edge`: they end at the screen's right edge,
        and trailing spaces of one erasable state go as EL."""
        segments = list(segments)
        erase = None
        if to_edge:
            segments, erase = self._trailing_blank(segments)
        pen = self.pen
        parts = self.parts
        for text, style, _control in segments:
            if not text:
                continue
            state = pen.state(style)
            if state is None:  # a link: as Rich writes it, from and back to the default
                self.reset(force=True)
                parts.append(Style.render(style, text, color_system=pen.color_system))
                continue
            self._set(state)
            parts.append(text)
        if erase is not None:
            self._set(erase)
            parts.append("\x1b[K")

    def _trailing_blank(self, segments: list[Segment]) -> tuple[list[Segment], State | None]:
        """`segments` without their trailing spaces when those are ERASE_MIN or more of one
        erasable state, and that state; else `segments` as they are and None."""
        pen = self.pen
        blank = 0
        state = None
        keep = len(segments)
        head = None
        while keep:
            text, style, control = segments[keep - 1]
            seg_state = pen.state(style)
            if control or seg_state is None or (state is not None and seg_state != state):
                break
            stripped = text.rstrip(" ")
            if stripped and not text.endswith(" "):
                break
            state = seg_state
            blank += len(text) - len(stripped)
            keep -= 1
            if stripped:
                head = Segment(stripped, style)
                break
        if state is None or blank < ERASE_MIN or not pen.erasable(state):
            return segments, None
        out = segments[:keep]
        if head is not None:
            out.append(head)
        return out, state

    def cells(self, row: list[Cell], start: int, end: int, to_edge: bool) -> None:
        """Write row[start:end] (the cursor at `start`); `to_edge`: `end` is the screen's
        right edge (trailing spaces may go as EL)."""
        erase = None
        if to_edge:
            last = row[end - 1][1] if end > start else None
            if last is not None and self.pen.erasable(last):
                cut = end
                while cut > start and row[cut - 1] == (" ", last):
                    cut -= 1
                if end - cut >= ERASE_MIN:
                    end, erase = cut, last
        parts = self.parts
        for state, cells in groupby(row[start:end], key=_STATE):
            self._set(state)
            parts.append("".join(map(_CHAR, cells)))
        if erase is not None:
            self._set(erase)
            parts.append("\x1b[K")

    def text(self) -> str:
        self.reset()
        return "".join(self.parts)
