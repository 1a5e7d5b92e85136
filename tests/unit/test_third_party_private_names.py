"""Third-party private names live only in their adapter modules: Textual's `_`-prefixed
modules and attributes in src/tui/compat (which probes them and falls back to plain Textual
when they moved), huggingface_hub's (`utils._http`) in src/core/hub/hub_client.py. A new
use elsewhere would break silently on the next release of either; this test names it.

Checked on the source (ast): every import of a module path with a `_`-prefixed part, or of
a `_`-prefixed name, from textual or huggingface_hub; and, for Textual, every attribute
`x._name` outside the adapter whose name appears in Textual's source and that our own code
never defines (a `self._x` of ours is ours)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import textual

SRC = Path(__file__).resolve().parents[2] / "src"
ADAPTERS = {
    "textual": [SRC / "tui" / "compat"],
    "huggingface_hub": [SRC / "core" / "hub" / "hub_client.py"],
}


def in_adapter(path: Path, package: str) -> bool:
    return any(path == a or a in path.parents for a in ADAPTERS[package])


def private_imports(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, package, what) for each import of a private module or name of a package."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [(a.name, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [(node.module, f"{node.module}.{a.name}") for a in node.names]
        else:
            continue
        for module, full in names:
            package = module.split(".")[0]
            if package in ADAPTERS and any(p.startswith("_") for p in full.split(".")[1:]):
                found.append((node.lineno, package, full))
    return found


def our_names() -> set[str]:
    """Every name our code defines: functions, classes, attributes it assigns, arguments."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def textual_private_names() -> set[str]:
    names: set[str] = set()
    for path in Path(textual.__file__).parent.rglob("*.py"):
        names |= set(re.findall(r"\b(_[a-z]\w*)\b", path.read_text(errors="replace")))
    return names


def test_private_imports_of_textual_and_huggingface_hub_only_in_their_adapters() -> None:
    outside = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path in sorted(SRC.rglob("*.py"))
        for line, package, what in private_imports(ast.parse(path.read_text()))
        if not in_adapter(path, package)
    ]
    assert outside == []


def test_the_adapters_are_where_the_private_imports_are() -> None:
    """The adapters named above hold private imports today (the test above is not vacuous
    by a moved folder)."""
    seen = {
        package
        for path in SRC.rglob("*.py")
        for _line, package, _what in private_imports(ast.parse(path.read_text()))
        if in_adapter(path, package)
    }
    assert seen == {"textual", "huggingface_hub"}


def test_textual_private_attributes_only_in_tui_compat() -> None:
    ours = our_names()
    theirs = textual_private_names()
    outside = []
    for path in sorted((SRC / "tui").rglob("*.py")):
        if in_adapter(path, "textual"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr in theirs
                and node.attr not in ours
            ):
                outside.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert outside == []
