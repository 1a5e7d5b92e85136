"""The screen a terminal shows for the bytes an app wrote (PtyApp.output()): enough of a
VT100 for what Textual sends (cursor moves, text, SGR, line erase), so that a test of a
real pty reads rows of text, whatever was sent whole or in changed spans only."""

from __future__ import annotations

import re

from rich.cells import cell_len

_SEQ = re.compile(
    r"\x1b\[(?P<params>[0-9;?<>=]*)[ -/]*(?P<final>[@-~])"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    r"|\x1bP.*?\x1b\\"  # DCS
    r"|\x1b[()][0-9A-Za-z]"  # charset
    r"|\x1b[@-Z\\-_=>78]"  # other two-byte escapes
    r"|[\r\n\b]",
    re.S,
)


def screen_rows(data: bytes, cols: int, rows: int) -> list[str]:
    """The rows of a `cols` x `rows` terminal after `data` (the alternate screen is the
    only screen: a clear empties it)."""
    grid = [[" "] * cols for _ in range(rows)]
    y = x = 0
    text = data.decode("utf-8", errors="replace")
    pos = 0

    def put(chunk: str) -> None:
        nonlocal x
        for ch in chunk:
            if ch < " ":
                continue
            if x >= cols:
                continue
            if 0 <= y < rows:
                grid[y][x] = ch
            x += max(cell_len(ch), 1)

    for m in _SEQ.finditer(text):
        put(text[pos : m.start()])
        pos = m.end()
        seq = m.group()
        if seq == "\r":
            x = 0
        elif seq == "\n":
            y = min(y + 1, rows - 1)
        elif seq == "\b":
            x = max(x - 1, 0)
        elif m.group("final"):
            final, params = m.group("final"), m.group("params")
            nums = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else []
            if params.startswith("?"):
                continue
            if final in "Hf":
                y = max((nums[0] if nums else 1) or 1, 1) - 1
                x = max((nums[1] if len(nums) > 1 else 1) or 1, 1) - 1
            elif final == "K":
                mode = nums[0] if nums else 0
                span = {0: range(x, cols), 1: range(0, x + 1)}.get(mode, range(cols))
                for i in span:
                    if 0 <= y < rows and i < cols:
                        grid[y][i] = " "
            elif final == "J":
                mode = nums[0] if nums else 0
                if mode == 2:
                    grid = [[" "] * cols for _ in range(rows)]
            elif final == "C":
                x += (nums[0] if nums else 1) or 1
            elif final == "D":
                x = max(x - ((nums[0] if nums else 1) or 1), 0)
            elif final == "A":
                y = max(y - ((nums[0] if nums else 1) or 1), 0)
            elif final == "B":
                y = min(y + ((nums[0] if nums else 1) or 1), rows - 1)
            elif final == "G":
                x = max((nums[0] if nums else 1) or 1, 1) - 1
    put(text[pos:])
    return ["".join(r).rstrip() for r in grid]
