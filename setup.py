"""Package discovery for setuptools: the import package `rgpu_tui` is the `src/` directory.

pyproject.toml holds everything else. setuptools' `packages.find` cannot rename a directory
(src -> rgpu_tui), so the package list is computed here: `rgpu_tui` plus every directory under
src/ that holds a .py or .tcss file (with or without an __init__.py), so a new sub-package is
never left out of a wheel. Every *.tcss file (Textual CSS) in any package is package data.
"""

import os

from setuptools import setup

SRC = "src"


def packages(src: str = SRC) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d.isidentifier() and d != "__pycache__")
        if dirpath == src or any(f.endswith((".py", ".tcss")) for f in filenames):
            rel = os.path.relpath(dirpath, src)
            found.append("rgpu_tui" if rel == "." else "rgpu_tui." + rel.replace(os.sep, "."))
    return found


setup(
    packages=packages(),
    package_dir={"rgpu_tui": SRC},
    package_data={"": ["*.tcss"]},
)
