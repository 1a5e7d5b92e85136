"""docs/architecture.md is the map of the code: every wing of src/core has its entry, and so
has every package of src/tui and src/cli; every module is named under its own package's
entry (the page is kept true from now on: a module added, moved or removed changes it in
the same commit). And every package of src says what it is for and what it may import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support.docs import REPO, doc

SRC = REPO / "src"
CORE = SRC / "core"
CORE_SECTION = "The wings of core"
UI_SECTION = "The tui and the command line"


def section(text: str, title: str) -> str:
    """The text under the `## title` heading, up to the next `## ` heading."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert found is not None, f"docs/architecture.md has no section '## {title}'"
    return found[1]


def package_entries(text: str) -> dict[str, str]:
    """`- `pkg/`: ...` or `- `pkg/sub/`: ...` bullets: package path -> the text of its entry."""
    found = re.finditer(r"^- `([\w/]+?)/`:(.*?)(?=^- `|^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    return {m[1]: m[2] for m in found}


def wing_entries(text: str) -> dict[str, str]:
    """The core section's bullets: wing -> the text of its entry."""
    return package_entries(section(text, CORE_SECTION))


def named(module: str, entry: str) -> bool:
    """`module` (a file name) is named in `entry` as a module of that package: not as the
    last part of a path into another one (`fleet/app.py` names no app.py of tui/)."""
    return re.search(rf"(?<![\w/.]){re.escape(module)}\b", entry) is not None


def missing_modules(entries: dict[str, str], packages: dict[str, Path]) -> list[str]:
    """`package/module.py` of every module not named under its package's entry."""
    return [
        f"{name}/{module.name}"
        for name, folder in packages.items()
        for module in sorted(folder.glob("*.py"))
        if module.name != "__init__.py" and not named(module.name, entries.get(name, ""))
    ]


def packages_under(top: Path) -> dict[str, Path]:
    """Every package at or under `top`, by its path from src/ ("tui", "tui/actions")."""
    found = [top, *(p for p in sorted(top.rglob("*")) if p.is_dir())]
    return {
        p.relative_to(SRC).as_posix(): p
        for p in found
        if (p / "__init__.py").is_file() and "__pycache__" not in p.parts
    }


def test_every_module_of_core_is_named_under_its_wing() -> None:
    entries = wing_entries(doc("architecture.md"))
    wings = {p.name: p for p in sorted(CORE.iterdir()) if (p / "__init__.py").is_file()}
    assert sorted(entries) == sorted(wings)
    missing = missing_modules(entries, wings)
    assert missing == [], f"not in docs/architecture.md under their wing: {missing}"


def test_every_module_of_tui_and_cli_is_named_under_its_package() -> None:
    entries = package_entries(section(doc("architecture.md"), UI_SECTION))
    packages = packages_under(SRC / "tui") | packages_under(SRC / "cli")
    assert sorted(entries) == sorted(packages)
    missing = missing_modules(entries, packages)
    assert missing == [], f"not in docs/architecture.md under their package: {missing}"


def test_every_package_says_what_it_is_for_and_what_it_may_import() -> None:
    """Each `__init__.py` of core, tui and cli opens with a docstring with an "Imports:"
    paragraph (core's top package holds only wings: it has none)."""
    packages = packages_under(CORE) | packages_under(SRC / "tui") | packages_under(SRC / "cli")
    del packages["core"]
    silent = []
    for name, folder in packages.items():
        docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        if not re.search(r"^Imports: \S", docstring, re.MULTILINE):
            silent.append(name)
    assert silent == [], f"no docstring with an 'Imports:' paragraph: {silent}"


def test_the_check_finds_a_module_missing_from_its_wing() -> None:
    page = "- `run/`: tail.py (tails), status.py.\n- `records/`: records.py.\n"
    entries = package_entries(page)
    assert "status.py" in entries["run"] and "status.py" not in entries["records"]


def test_the_check_finds_a_module_named_only_under_another_package(tmp_path: Path) -> None:
    for folder, modules in {"tui": ["app.py", "messages.py"], "tui/fleet": ["messages.py"]}.items():
        (tmp_path / folder).mkdir(parents=True)
        for module in ["__init__.py", *modules]:
            (tmp_path / folder / module).write_text("")
    page = (
        "- `tui/`: app.py (the app), fleet/messages.py (the fleet's).\n"
        "- `tui/fleet/`: messages.py.\n"
    )
    entries = package_entries(page)
    packages = {"tui": tmp_path / "tui", "tui/fleet": tmp_path / "tui/fleet"}
    assert sorted(entries) == ["tui", "tui/fleet"]
    assert missing_modules(entries, packages) == ["tui/messages.py"]
