"""docs/architecture.md is the map of src/core: every wing has its entry, and every module
is named under its own wing's entry (the page is kept true from now on: a module added,
moved or removed changes it in the same commit)."""

from __future__ import annotations

import re

from support.docs import REPO, doc

CORE = REPO / "src" / "core"


def wing_entries(text: str) -> dict[str, str]:
    """`- `wing/`: ...` bullets of the page: wing -> the text of its entry."""
    found = re.finditer(r"^- `(\w+)/`:(.*?)(?=^- `|^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    return {m[1]: m[2] for m in found}


def test_every_module_of_core_is_named_under_its_wing() -> None:
    entries = wing_entries(doc("architecture.md"))
    wings = sorted(p.name for p in CORE.iterdir() if (p / "__init__.py").is_file())
    assert sorted(entries) == wings
    missing = [
        f"{wing}/{module.name}"
        for wing in wings
        for module in sorted((CORE / wing).glob("*.py"))
        if module.name != "__init__.py" and not re.search(rf"\b{module.name}\b", entries[wing])
    ]
    assert missing == [], f"not in docs/architecture.md under their wing: {missing}"


def test_the_check_finds_a_module_missing_from_its_wing() -> None:
    page = "- `run/`: tail.py (tails), status.py.\n- `records/`: records.py.\n"
    entries = wing_entries(page)
    assert "status.py" in entries["run"] and "status.py" not in entries["records"]
