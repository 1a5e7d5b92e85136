"""discovery.RunFinder: which directories are runs, and cheap rescans."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from rgpu_tui.core.run.discovery import MAX_DEPTH, RunFinder


def make_run(path: Path, marker: str = "status.json") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / marker).write_text("{}")
    return path


def age_tree(root: Path, seconds: float = 3600) -> None:
    """Give every directory under root an old mtime, as on a tree nobody touched lately."""
    old = time.time() - seconds
    for dirpath, _, _ in os.walk(root):
        os.utime(dirpath, (old, old))


def test_root_itself_is_a_run(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run1")
    (run / "weights").mkdir()
    assert RunFinder(str(run)).scan() == [str(run)]


def test_nested_runs_and_every_marker(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a" / "r1")
    b = make_run(tmp_path / "b" / "c" / "r2", marker="metrics.jsonl")
    c = make_run(tmp_path / "r3", marker="results.csv")
    (tmp_path / "logs_only").mkdir()
    (tmp_path / "logs_only" / "train.log").write_text("not a marker\n")
    nested = make_run(c / "inner")  # a run inside a run is a run too
    found = RunFinder(str(tmp_path)).scan()
    assert sorted(found) == sorted(map(str, [a, b, c, nested]))


def test_weights_and_hidden_dirs_are_skipped(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r")
    make_run(run / "weights")  # even with a marker inside
    make_run(run / "weights" / "deeper", marker="metrics.jsonl")
    make_run(run / ".rgpu")
    make_run(tmp_path / ".git")
    make_run(run / "__pycache__")
    finder = RunFinder(str(tmp_path))
    assert finder.scan() == [str(run)]
    assert finder.listed == 2  # the root and r, nothing below the skipped names


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    root = tmp_path / "root"
    run = make_run(root / "a" / "r1")
    os.symlink(root, root / "a" / "loop")
    os.symlink(root / "a", run / "back")
    os.symlink("self", root / "self")  # a link to itself (not a directory)
    finder = RunFinder(str(root))
    assert finder.scan() == [str(run)]
    assert finder.scan() == [str(run)]


def test_symlinked_run_outside_the_root_is_found(tmp_path: Path) -> None:
    outside = make_run(tmp_path / "scratch" / "big_run")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "linked")
    assert RunFinder(str(root)).scan() == [str(root / "linked")]


def test_unchanged_dirs_are_not_listed_again(tmp_path: Path) -> None:
    runs = [make_run(tmp_path / f"g{i}" / f"r{j}") for i in range(3) for j in range(3)]
    age_tree(tmp_path)
    finder = RunFinder(str(tmp_path))
    first = finder.scan()
    assert finder.listed == 1 + 3 + 9
    assert finder.scan() == first
    assert finder.listed == 0
    assert sorted(first) == sorted(map(str, runs))


def test_new_run_is_found_listing_only_what_changed(tmp_path: Path) -> None:
    make_run(tmp_path / "a" / "b" / "old")
    age_tree(tmp_path)
    finder = RunFinder(str(tmp_path))
    finder.scan()
    new = make_run(tmp_path / "a" / "b" / "new")
    assert sorted(finder.scan()) == sorted([str(tmp_path / "a" / "b" / "old"), str(new)])
    assert finder.listed == 2  # a/b (its mtime changed) and the new directory


def test_change_in_the_same_timestamp_tick_is_not_missed(tmp_path: Path) -> None:
    """A coarse clock can give a directory the same mtime before and after a change
    (two changes within one tick). A listing made that close to the last change is
    not trusted; the next scan lists the directory again."""
    root = tmp_path / "root"
    root.mkdir()
    finder = RunFinder(str(root))
    assert finder.scan() == []
    st = os.stat(root)
    new = make_run(root / "new")
    os.utime(root, ns=(st.st_atime_ns, st.st_mtime_ns))  # same tick: mtime unchanged
    assert finder.scan() == [str(new)]


def test_deleted_run_disappears(tmp_path: Path) -> None:
    keep = make_run(tmp_path / "keep")
    gone = make_run(tmp_path / "x" / "gone")
    age_tree(tmp_path)
    finder = RunFinder(str(tmp_path))
    assert sorted(finder.scan()) == sorted([str(keep), str(gone)])
    shutil.rmtree(gone)
    assert finder.scan() == [str(keep)]
    shutil.rmtree(tmp_path / "x")
    assert finder.scan() == [str(keep)]
    assert str(tmp_path / "x") not in finder._cache


def test_marker_removed_makes_it_no_longer_a_run(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r")
    age_tree(tmp_path)
    finder = RunFinder(str(tmp_path))
    assert finder.scan() == [str(run)]
    (run / "status.json").unlink()
    assert finder.scan() == []


def test_depth_limit(tmp_path: Path) -> None:
    deep = tmp_path
    for i in range(MAX_DEPTH):
        deep = deep / f"d{i}"
    at_limit = make_run(deep)
    make_run(deep / "too_deep")
    assert RunFinder(str(tmp_path)).scan() == [str(at_limit)]


def test_missing_root_gives_nothing(tmp_path: Path) -> None:
    finder = RunFinder(str(tmp_path / "nope"))
    assert finder.scan() == []
    assert finder.listed == 0
