"""The weights walk's bounds (core.run.weights_finder), exactly at the limit: a weights folder
MAX_DEPTH levels under the root is found and is no doubt; one level deeper is not searched,
and that is a doubt naming the folder (autostop holds on it)."""

from __future__ import annotations

from pathlib import Path

from rgpu_tui.core.run.weights_finder import MAX_DEPTH, WeightsFinder


def weights_at(root: Path, depth: int, name: str) -> Path:
    """A weights folder with a best.pt, `depth` levels under root (the folder itself the
    last level): root/name1/.../name{depth-1}/weights."""
    folder = root.joinpath(*[f"{name}{i}" for i in range(1, depth)], "weights")
    folder.mkdir(parents=True)
    (folder / "best.pt").write_bytes(b"weights")
    return folder


def test_a_weights_folder_at_the_depth_limit_is_found(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    at_limit = weights_at(root, MAX_DEPTH, "d")
    scan = WeightsFinder(str(root)).scan()
    assert scan.folders == {str(at_limit): ("best.pt",)}
    assert scan.doubts == ()


def test_one_level_past_the_limit_is_a_doubt_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    at_limit = weights_at(root, MAX_DEPTH, "d")
    past = weights_at(root, MAX_DEPTH + 1, "e")
    scan = WeightsFinder(str(root)).scan()
    assert scan.folders == {str(at_limit): ("best.pt",)}  # the deeper one is not searched
    assert scan.doubts == (f"1 folder deeper than {MAX_DEPTH} levels not searched ({past})",)


def test_the_limit_given_holds_exactly_too(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for depth in range(1, 6):
        weights_at(root, depth, f"n{depth}_")
    scan = WeightsFinder(str(root), max_depth=3).scan()
    assert sorted(len(Path(f).relative_to(root).parts) for f in scan.folders) == [1, 2, 3]
    [doubt] = scan.doubts
    assert doubt.startswith("2 folders deeper than 3 levels not searched (")
