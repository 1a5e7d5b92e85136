"""The wheel holds every module and stylesheet under src/ (a normal, non-editable install).

pyproject.toml once listed the packages by hand and left out rgpu_tui.tui.screens: an editable
install (what the tests use) could not see it, a `pip install .` died at start. Here the wheel
is built for real, from a copy of the files the build reads (so a stale build/ directory of
this tree cannot leak files into it), and compared with src/ as it is now, including any
sub-package added since, plus probe sub-packages that exist only in the copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.docs import REPO

ROOT = REPO
SRC = ROOT / "src"


# Sub-packages that do not exist yet, added to the copy: one regular, one without an
# __init__.py, one holding only a stylesheet. Discovery must ship them with no edit anywhere.
NEW_FILES = (
    "core/probe_new_package/__init__.py",
    "core/probe_new_package/mod.py",
    "core/probe_no_init/mod.py",
    "tui/probe_styles/extra.tcss",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, zipfile.ZipFile]]:
    """(the src/ the wheel was built from, the wheel)."""
    tmp = tmp_path_factory.mktemp("wheel")
    tree = tmp / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(SRC, tree / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for rel in NEW_FILES:
        path = tree / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("Probe { color: red; }\n" if rel.endswith(".tcss") else "X = 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp), str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [path] = tmp.glob("rgpu_tui-*.whl")
    with zipfile.ZipFile(path) as zf:
        yield tree / "src", zf


def _shipped(src: Path, pattern: str) -> set[str]:
    """Where each file under src matching pattern lands in an install: rgpu_tui/<its path>."""
    return {
        "rgpu_tui/" + p.relative_to(src).as_posix()
        for p in src.rglob(pattern)
        if "__pycache__" not in p.parts
    }


def test_every_module_under_src_is_in_the_wheel(built) -> None:
    src, wheel = built
    modules = _shipped(src, "*.py")
    package_dirs = {m.rsplit("/", 1)[0] for m in modules}
    assert {"rgpu_tui/tui/screens", "rgpu_tui/core/probe_no_init"} <= package_dirs
    missing = sorted(modules - set(wheel.namelist()))
    assert not missing, f"left out of the wheel: {missing}"


def test_every_stylesheet_under_src_is_in_the_wheel(built) -> None:
    src, wheel = built
    stylesheets = _shipped(src, "*.tcss")
    assert {"rgpu_tui/tui/app.tcss", "rgpu_tui/tui/probe_styles/extra.tcss"} <= stylesheets
    missing = sorted(stylesheets - set(wheel.namelist()))
    assert not missing, f"left out of the wheel: {missing}"


def test_the_wheel_holds_only_the_rgpu_tui_package_and_its_console_script(built) -> None:
    _src, wheel = built
    names = wheel.namelist()
    tops = {n.split("/", 1)[0] for n in names}
    [dist_info] = [t for t in tops if t.endswith(".dist-info")]
    assert tops == {"rgpu_tui", dist_info}
    entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert "rgpu-tui = rgpu_tui.cli:main" in entry_points
