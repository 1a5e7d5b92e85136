"""Checks that tokens went nowhere: not into files, output or text."""

from __future__ import annotations

from pathlib import Path


def tokens_nowhere(tokens, *places) -> None:
    """No token of `tokens` in any place: a file, every file under a folder, or a string."""
    for place in places:
        if isinstance(place, Path):
            paths = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
            for path in paths:
                data = path.read_bytes()
                for token in tokens:
                    assert token.encode() not in data, f"token found in {path}"
        else:
            for token in tokens:
                assert token not in place
