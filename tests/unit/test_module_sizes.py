"""No module in src over MAX_LINES lines: a file past it usually holds
two jobs; split it along them rather than growing it."""

from __future__ import annotations

from pathlib import Path

import rgpu_tui

MAX_LINES = 600
SRC = Path(rgpu_tui.__file__).parent


def test_no_module_in_src_is_over_the_limit() -> None:
    sizes = {}
    for path in sorted(SRC.rglob("*.py")):
        with path.open("rb") as f:
            sizes[path.relative_to(SRC).as_posix()] = sum(1 for _ in f)
    assert "tui/app.py" in sizes and "core/picture/watch.py" in sizes  # it looked at src
    too_big = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert too_big == {}, f"over {MAX_LINES} lines (split along their jobs): {too_big}"
