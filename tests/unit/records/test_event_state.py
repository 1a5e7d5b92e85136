"""core.records.event_state: where the watcher keeps what it reported, written atomically and
privately, read tolerantly; one watcher per root."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rgpu_tui.core.records.event_state import (
    WatchLock,
    load_state,
    root_key,
    save_state,
    state_home,
    state_path,
)


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_state_home_follows_xdg_and_ignores_a_relative_value(tmp_path: Path) -> None:
    assert state_home({"XDG_STATE_HOME": "/x/state", "HOME": "/h"}) == "/x/state"
    assert state_home({"XDG_STATE_HOME": "rel", "HOME": "/h"}) == "/h/.local/state"
    assert state_home({"HOME": "/h"}) == "/h/.local/state"
    path = state_path("/runs/a", {"XDG_STATE_HOME": "/s"})
    assert path == f"/s/rgpu-tui/watch-{root_key('/runs/a')}.json"
    assert root_key("/runs/a") != root_key("/runs/b")
    assert root_key("/runs/a") == root_key("/runs/x/../a")  # one root, one file


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_saved_privately_and_atomically(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        path = state_path("/runs", {"XDG_STATE_HOME": str(tmp_path / "state")})
        save_state(path, {"version": 1, "runs": {"/runs/a": {"state": "dead"}}})
        save_state(path, {"version": 1, "runs": {}})
    finally:
        os.umask(old)
    assert mode(path) == 0o600
    assert mode(os.path.dirname(path)) == 0o700
    assert mode(tmp_path / "state") == 0o700  # made by it
    assert load_state(path) == ({"version": 1, "runs": {}}, None)
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]  # no temp left


@pytest.mark.parametrize(
    "content, said",
    [
        (b"{not json", "is not JSON"),
        (b"[1, 2]", "is not a JSON object"),
        (b"\xff\xfe", "is not JSON"),
        (b"[" * 5000 + b"]" * 5000, "is not JSON"),
    ],
)
def test_a_bad_state_file_is_a_fresh_start_said_in_one_line(
    tmp_path: Path, content: bytes, said: str
) -> None:
    path = tmp_path / "watch.json"
    path.write_bytes(content)
    state, problem = load_state(str(path))
    assert state is None and said in problem and "\n" not in problem


def test_a_missing_state_is_a_first_start_and_a_fifo_never_blocks(tmp_path: Path) -> None:
    assert load_state(str(tmp_path / "none.json")) == (None, None)
    os.mkfifo(tmp_path / "fifo.json")
    state, problem = load_state(str(tmp_path / "fifo.json"))
    assert state is None and "not a regular file" in problem


def test_one_watcher_per_root(tmp_path: Path) -> None:
    path = state_path("/runs", {"XDG_STATE_HOME": str(tmp_path)})
    first = WatchLock(path)
    assert first.acquire() is None
    # another process (flock locks belong to the open file: a second one is refused)
    code = (
        "import sys; from rgpu_tui.core.records.event_state import WatchLock; "
        "print(WatchLock(sys.argv[1]).acquire())"
    )
    run = [sys.executable, "-c", code, path]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60).stdout
    assert f"another `rgpu-tui watch` is watching this root (pid {os.getpid()})" in out
    first.release()
    out = subprocess.run(run, capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "None"
    assert mode(path.removesuffix(".json") + ".lock") == 0o600


def test_a_root_reached_through_a_symlink_is_the_same_root(tmp_path: Path) -> None:
    """State, lock, plan and hold files are keyed by the resolved folder."""
    from rgpu_tui.core.records.autostop_files import AutostopFiles

    real = tmp_path / "data" / "runs"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "link2").symlink_to(tmp_path / "link")  # a chain of links
    env = {"XDG_STATE_HOME": str(tmp_path / "st")}
    spellings = [str(real), str(tmp_path / "link"), str(tmp_path / "link2") + "/", str(real) + "/."]
    assert len({root_key(s) for s in spellings}) == 1
    assert len({state_path(s, env) for s in spellings}) == 1
    assert len({AutostopFiles.for_root(s, env) for s in spellings}) == 1
    first = WatchLock(state_path(str(real), env))
    assert first.acquire() is None
    try:  # a second watcher on the other spelling is refused (another open file: refused)
        code = (
            "import sys; from rgpu_tui.core.records.event_state import WatchLock, state_path; "
            "print(WatchLock(state_path(sys.argv[1], {'XDG_STATE_HOME': sys.argv[2]})).acquire())"
        )
        run = [sys.executable, "-c", code, str(tmp_path / "link"), env["XDG_STATE_HOME"]]
        out = subprocess.run(run, capture_output=True, text=True, timeout=60).stdout
        assert "another `rgpu-tui watch` is watching this root" in out
    finally:
        first.release()
