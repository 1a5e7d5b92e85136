"""Finding runs: every directory at or below the root that holds a marker file.

Rescans are cheap: a directory whose (inode, mtime) did not change since the
last scan is not listed again (adding or removing an entry changes a
directory's mtime). A listing made within RACY_NS of the directory's mtime is
not trusted (git's "racily clean" rule): a coarse file-system clock can give a
change made just after the listing the same mtime, so such a directory is
listed again until a listing comes after its mtime has settled. Symlinked
directories are followed once each: a directory already visited (same device
and inode) is never entered again, so symlink loops end.

Nothing is lost silently: the directories below MAX_DEPTH that were not searched are
counted (`deep_skipped`), and a directory that cannot be listed (permission denied)
is listed again at every scan, reported in `unlistable` with why, and returned among
the runs, so it is shown with its problem instead of missing (it may be a run, or hold
some) -- except lost+found, unreadable to users by design and never a run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .tail import describe_os_error

RUN_MARKERS = ("status.json", "metrics.jsonl", "results.csv")
# never runs themselves, and possibly large: checkpoints, caches, our records
SKIP_DIRS = {"weights", ".rgpu", "__pycache__", ".git", "node_modules"}
MAX_DEPTH = 8
RACY_NS = 2_000_000_000  # above any file-system timestamp granularity


@dataclass
class _DirEntry:
    key: tuple[int, int, int]  # (dev, ino, mtime_ns)
    subdirs: list[str]
    is_run: bool
    settled: bool = False  # listed well after its mtime: later changes show
    problem: str | None = None  # why it could not be listed


def deep_dirs_text(n: int) -> str:
    """The runs list's footer line when the last scan stopped at MAX_DEPTH."""
    return f"{n} director{'y' if n == 1 else 'ies'} deeper than {MAX_DEPTH} levels not searched"


class RunFinder:
    """Lists run directories under `root`, reusing what did not change."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self._cache: dict[str, _DirEntry] = {}
        self.listed = 0  # directories listed by the last scan (for tests/benchmarks)
        self.deep_skipped = 0  # directories below MAX_DEPTH the last scan did not search
        self.unlistable: dict[str, str] = {}  # path -> why it could not be listed

    def scan(self) -> list[str]:
        """Absolute paths of every run directory, in no particular order."""
        self.listed = 0
        self.deep_skipped = 0
        self.unlistable = {}
        runs: list[str] = []
        visited: set[tuple[int, int]] = set()
        seen_paths: set[str] = set()
        stack = [(self.root, 0)]
        while stack:
            path, depth = stack.pop()
            try:
                st = os.stat(path)
            except OSError:
                continue
            ident = (st.st_dev, st.st_ino)
            if ident in visited:
                continue
            visited.add(ident)
            seen_paths.add(path)
            key = (st.st_dev, st.st_ino, st.st_mtime_ns)
            entry = self._cache.get(path)
            if entry is None or entry.key != key or not entry.settled:
                entry = self._list(path, key)
                self._cache[path] = entry
            if entry.is_run:
                runs.append(path)
            if entry.problem is not None:
                self.unlistable[path] = entry.problem
            if depth < MAX_DEPTH:
                for sub in entry.subdirs:
                    stack.append((os.path.join(path, sub), depth + 1))
            else:
                self.deep_skipped += len(entry.subdirs)
        for gone in set(self._cache) - seen_paths:
            del self._cache[gone]
        return runs

    def _list(self, path: str, key: tuple[int, int, int]) -> _DirEntry:
        self.listed += 1
        settled = time.time_ns() - key[2] > RACY_NS
        subdirs: list[str] = []
        is_run = False
        try:
            with os.scandir(path) as it:
                for entry in it:
                    name = entry.name
                    if name in RUN_MARKERS:
                        is_run = True
                        continue
                    if name in SKIP_DIRS or name.startswith("."):
                        continue
                    try:
                        if entry.is_dir():  # follows symlinks; loops end via `visited`
                            subdirs.append(name)
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError):  # gone or replaced since the stat
            return _DirEntry(key=key, subdirs=[], is_run=False)
        except OSError as exc:
            if os.path.basename(path) == "lost+found":
                return _DirEntry(key=key, subdirs=[], is_run=False)
            # not settled: listed again next scan, so it shows up once it is readable
            problem = "directory cannot be listed: " + describe_os_error(exc).removeprefix(
                "unreadable: "
            )
            return _DirEntry(key=key, subdirs=[], is_run=True, problem=problem)
        return _DirEntry(key=key, subdirs=sorted(subdirs), is_run=is_run, settled=settled)
