"""Text from a run (file contents, file and directory names, process names) made safe to
print on a terminal.

Everything in a run directory is untrusted: a log line or a status.json field may hold
ESC sequences that set the window title, write the clipboard (OSC 52), clear the screen or
ask the terminal a question whose answer is typed as input, and characters that show
nothing or move what follows (a zero-width space that makes two names look alike, a line
separator that breaks a label, a bidi control that makes text read backwards).
`printable` is the one function that turns such text into visible, inert characters
before it reaches any output: the text snapshot, every pane, every notice, the exporter's
labels. JSON output keeps the original string (json escapes it).

- C0 controls and DEL become caret notation: ESC -> ``^[``, BEL -> ``^G``, DEL -> ``^?``;
  a newline becomes ``^J`` unless `newlines=True` keeps it (a multi-line area).
- A tab becomes spaces (to the next multiple of 8 columns).
- The rest of the class becomes an escape, ``\\x9b``, ``\\u200b``, ``\\U000e0041``: C1
  controls (U+0080-U+009F: CSI as one character, NEL), every format character (Unicode
  category Cf: the zero-width space, joiners and marks, the bidi embeddings, overrides,
  isolates and marks, the word joiner and invisible operators, the byte order mark, the
  soft hyphen, the interlinear annotation marks, the tag characters), the line and
  paragraph separators U+2028 and U+2029 (Zl, Zp), the invisible fillers (U+034F, U+115F,
  U+1160, U+3164, U+FFA0), and lone surrogates (undecodable bytes of a file name, decoded
  with surrogateescape: ``\\xff``, the byte itself).

The ranges below are Unicode 15.1's Cf, Zl and Zp (a test checks them against the
running Python's unicodedata, so a newer Unicode's additions are noticed).
"""

from __future__ import annotations

import re

# format characters (Cf), line and paragraph separators (Zl, Zp) and invisible fillers
_INVISIBLE = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
# C0 except tab and newline, DEL, C1, the invisible class, surrogates
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}\ud800-\udfff]")
_UNSAFE_OR_NL = re.compile(f"[\x00-\x08\n\x0b-\x1f\x7f-\x9f{_INVISIBLE}\ud800-\udfff]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the undecodable byte itself
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\u{code:04x}"


def printable(text: object, *, newlines: bool = False) -> str:
    """`text` (any value; None gives "") with nothing a terminal would act on."""
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    if "\t" in text:
        text = "\n".join(line.expandtabs(8) for line in text.split("\n"))
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NL
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)


def is_printable(text: str, *, newlines: bool = False) -> bool:
    """True when `printable` would return `text` unchanged."""
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NL
    return "\t" not in text and pattern.search(text) is None


def shorten_middle(word: str, width: int) -> str:
    """`word` in at most `width` characters: its middle in place of "…" when longer. A
    path keeps its file name (the end, from a "/", up to two thirds of the room) and as
    much of its start as fits: `/home/u/runs/exp1/weights/best.pt` in 24 gives
    `/home/u/runs/ex…/best.pt`."""
    if len(word) <= width:
        return word
    if width <= 1:
        return "…"[:width]
    room = width - 1
    tail_room = max(room * 2 // 3, 1)
    tail = word[len(word) - tail_room :]
    slash = tail.find("/")
    if 0 < slash < len(tail) - 1:
        tail = tail[slash:]
    return word[: room - len(tail)] + "…" + tail


def wrap_words(text: str, width: int, indent: int = 0) -> list[str]:
    """`text` in rows of at most `width` characters, broken between words: a row never
    ends with a space (the spaces at a break are dropped, so joining the rows with one
    space gives the words back), a word longer than its row is shortened in its middle
    (`shorten_middle`), never cut in two; the rows after a paragraph's first start with
    `indent` spaces (an item's text under its own start). Newlines start paragraphs."""
    width = max(width, 1)
    pad = " " * min(max(indent, 0), width // 2)
    rows: list[str] = []
    for para in text.split("\n"):
        row: str | None = None
        for word in para.split():
            if row is None:
                row = shorten_middle(word, width)
            elif len(row) + 1 + len(word) <= width:
                row += " " + word
            else:
                rows.append(row)
                row = pad + shorten_middle(word, width - len(pad))
        rows.append(row or "")
    return rows
