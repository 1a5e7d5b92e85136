"""Every weights folder under a root, wherever it is: what autostop must find before it may
stop the machine.

The run finder (core.run.discovery) looks for runs: it skips dot-folders and folders
named `weights`, and stops at MAX_DEPTH. A weights file it does not list still exists only
on this disk: in `runs/.archive/exp`, ten folders deep, under `runs/weights/exp`. So this
walk looks at every folder under the root, dot-folders included, and reports each folder
named `weights` that holds `*.pt` names, with those names.

- Bounded: at most MAX_DIRS folders and MAX_DEPTH levels a walk. What it could not look at
  is a doubt (a folder too deep, too many folders, a folder it cannot list: permission
  denied), said in one line each (the first few named), never silently left out: the
  caller holds on a doubt.
- Cached: a folder whose (device, inode, mtime) did not change since it was listed is not
  listed again (an entry added or removed changes its folder's mtime); the racily-clean
  rule of core.run.discovery applies. A walk with nothing changed is one stat a folder.
- Symlinked folders are followed once each (a loop ends); `lost+found` at a mount point
  that cannot be listed is the file system's, not a doubt.

It never raises for what it finds; a root that is missing or not a folder is a doubt.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass, field

from .discovery import RACY_NS
from .tail import describe_os_error

WEIGHTS_DIR = "weights"
MAX_DEPTH = 64
MAX_DIRS = 50_000
NAMED = 3  # folders named in one doubt; the rest are counted


@dataclass
class _Dir:
    key: tuple[int, int, int]  # (dev, ino, mtime_ns)
    subdirs: list[str]
    pts: tuple[str, ...]  # the *.pt names in it (a folder named `weights` only)
    settled: bool
    problem: str | None = None  # why it could not be listed


@dataclass(frozen=True)
class WeightsScan:
    root: str
    folders: dict[str, tuple[str, ...]] = field(default_factory=dict)  # weights folder -> names
    doubts: tuple[str, ...] = ()  # what could not be looked at, one line each
    dirs: int = 0  # folders walked


class WeightsFinder:
    """Walks `root` for weights folders, reusing what did not change (see the module doc)."""

    def __init__(self, root: str, *, max_dirs: int | None = None, max_depth: int | None = None):
        self.root = os.path.abspath(root)
        self.max_dirs = MAX_DIRS if max_dirs is None else max_dirs
        self.max_depth = MAX_DEPTH if max_depth is None else max_depth
        self._cache: dict[str, _Dir] = {}
        self.listed = 0  # folders listed by the last walk (for tests and the bench)

    def scan(self) -> WeightsScan:
        self.listed = 0
        try:
            st = os.stat(self.root)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                why = "does not exist"
            else:
                why = describe_os_error(exc).removeprefix("unreadable: ")
            return WeightsScan(self.root, doubts=(f"{self.root} {why}",))
        if not os.path.isdir(self.root):
            return WeightsScan(self.root, doubts=(f"{self.root} is not a folder",))
        folders: dict[str, tuple[str, ...]] = {}
        unlistable: list[tuple[str, str]] = []
        too_deep: list[str] = []
        visited: set[tuple[int, int]] = set()
        seen: set[str] = set()
        stack = [(self.root, 0)]
        walked = 0
        over = False
        while stack:
            path, depth = stack.pop()
            try:
                st = os.stat(path)
            except OSError as exc:  # gone since it was listed, or a dangling symlink
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    unlistable.append((path, describe_os_error(exc).removeprefix("unreadable: ")))
                continue
            ident = (st.st_dev, st.st_ino)
            if ident in visited:
                continue
            if walked >= self.max_dirs:
                over = True
                break
            visited.add(ident)
            seen.add(path)
            walked += 1
            key = (st.st_dev, st.st_ino, st.st_mtime_ns)
            entry = self._cache.get(path)
            if entry is None or entry.key != key or not entry.settled:
                entry = self._list(path, key)
                self._cache[path] = entry
            if entry.problem is not None:
                unlistable.append((path, entry.problem))
                continue
            if entry.pts:
                folders[path] = entry.pts
            if depth >= self.max_depth:
                too_deep.extend(os.path.join(path, sub) for sub in entry.subdirs)
                continue
            for sub in entry.subdirs:
                stack.append((os.path.join(path, sub), depth + 1))
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        doubts = []
        if unlistable:
            named = "; ".join(f"{p}: {why}" for p, why in unlistable[:NAMED])
            more = f" and {len(unlistable) - NAMED} more" if len(unlistable) > NAMED else ""
            doubts.append(f"cannot look in {named}{more}")
        if too_deep:
            doubts.append(
                f"{len(too_deep)} folder{'s' if len(too_deep) > 1 else ''} deeper than "
                f"{self.max_depth} levels not searched ({_named(too_deep)})"
            )
        if over:
            doubts.append(
                f"more than {self.max_dirs} folders under {self.root}: not all searched "
                "(watch the folder that holds the runs)"
            )
        return WeightsScan(self.root, folders, tuple(doubts), walked)

    def _list(self, path: str, key: tuple[int, int, int]) -> _Dir:
        self.listed += 1
        settled = time.time_ns() - key[2] > RACY_NS
        subdirs: list[str] = []
        pts: list[str] = []
        is_weights = os.path.basename(path) == WEIGHTS_DIR
        try:
            with os.scandir(path) as it:
                for entry in it:
                    name = entry.name
                    if is_weights and name.endswith(".pt"):
                        pts.append(name)
                    try:
                        if entry.is_dir():  # follows symlinks; loops end via `visited`
                            subdirs.append(name)
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError):
            return _Dir(key, [], (), False)
        except OSError as exc:
            if os.path.basename(path) == "lost+found" and os.path.ismount(os.path.dirname(path)):
                return _Dir(key, [], (), False)  # the file system's own, unreadable by design
            problem = describe_os_error(exc).removeprefix("unreadable: ")
            return _Dir(key, [], (), False, problem)
        return _Dir(key, sorted(subdirs), tuple(sorted(pts)), settled)


def _named(paths: list[str]) -> str:
    shown = ", ".join(paths[:NAMED])
    return shown + (f" and {len(paths) - NAMED} more" if len(paths) > NAMED else "")
