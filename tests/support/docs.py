"""README.md and docs/*.md, for the tests that run their examples: found from this file, so a
test file can move to another folder without computing the repository's root itself."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"


def readme() -> str:
    """README.md's text."""
    return README.read_text(encoding="utf-8")


def doc(name: str) -> str:
    """The text of docs/NAME (e.g. "away.md")."""
    return (DOCS / name).read_text(encoding="utf-8")
