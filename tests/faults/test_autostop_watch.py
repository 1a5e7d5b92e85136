"""Autostop in a real `rgpu-tui watch` subprocess, on the doubts a user runs into: a
root that does not exist, weights the watcher's user cannot read
(the watcher runs as another user: setpriv to nobody when the suite runs as root),
HF_HUB_OFFLINE set, and the root reached through a symlink. Each holds with one line that
says what to do; the command (a real process that records its argv) never runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes
from support.cli_env import RGPU_TUI, clean_env
from support.waiting import wait_until
from support.watch_proc import Watch

from rgpu_tui.core.records.autostop_files import AutostopFiles, Hold

from .test_hostile_readers import unprivileged

RECORD = "import json, sys\nopen(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')\n"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user can enter (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="rgpu-autostop-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(path)


@pytest.fixture
def watches():
    made: list[Watch] = []

    def start(root: Path, env: dict, *extra: str, prefix: tuple = ()) -> Watch:
        w = Watch(root, env, *extra, prefix=prefix)
        made.append(w)
        return w

    yield start
    for w in made:
        w.stop()


def autostop_env(base: Path, **extra: str) -> dict:
    env = clean_env(
        base,
        XDG_STATE_HOME=str(base / "state"),
        HF_HOME=str(base / "hf"),
        RGPU_AUTOSTOP_IDLE_MINUTES="0.01",
        RGPU_AUTOSTOP_COMMAND=json.dumps([sys.executable, "-c", RECORD, str(base / "ran")]),
        **extra,
    )
    return env


def held(watch: Watch) -> str:
    [event] = wait_until(
        lambda: watch.events("autostop_held"), "autostop_held", timeout=60, details=watch.details
    )
    return event["message"]


def test_a_root_that_does_not_exist_is_never_armed(tmp_path: Path, watches) -> None:
    missing = tmp_path / "runs-typo"
    watch = watches(missing, autostop_env(tmp_path))
    message = held(watch)
    assert message.startswith(f"autostop held: {missing} does not exist")
    assert watch.stop() == 0
    assert f"autostop not armed: {missing} does not exist" in watch.stderr
    assert not (tmp_path / "ran").exists()


def pushed_run(root: Path, name: str) -> None:
    """A run whose best.pt has a push record that matches it (readable by anyone)."""
    best = root / name / "weights" / "best.pt"
    best.parent.mkdir(parents=True)
    data = checkpoint_bytes(10_000, 1)
    best.write_bytes(data)
    os.utime(best, (1_700_000_000, 1_700_000_000))
    import hashlib

    record = {"file": "best.pt", "sha256": hashlib.sha256(data).hexdigest(), "outcome": "ok",
              "repo": "alice/ckpts", "path": f"{name}/best.pt",
              "endpoint": "https://huggingface.co", "time": "2026-01-01T00:00:00Z"}  # fmt: skip
    (root / name / ".rgpu").mkdir()
    (root / name / ".rgpu" / "pushes.jsonl").write_text(json.dumps(record) + "\n")
    for p in [root / name, *(root / name).rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


def test_hf_hub_offline_holds(tmp_path: Path, watches) -> None:
    root = tmp_path / "runs"
    pushed_run(root, "exp1")
    watch = watches(root, autostop_env(tmp_path, HF_HUB_OFFLINE="1"))
    message = held(watch)
    assert message.startswith(
        "autostop held: cannot confirm on the Hub: HF_HUB_OFFLINE is set: the Hub is not asked"
    )
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("what", ["folder", "file"])
def test_weights_the_watcher_cannot_read_hold(shared_dir: Path, watches, what: str) -> None:
    """Permission denied on a weights folder or file read as "no weights": autostop ran. A
    pushed run beside it (weights were found, all on the Hub by their records) does not
    outweigh the doubt; HF_HUB_OFFLINE makes the Hub's answer a hold of
    its own, said after the doubt's."""
    prefix = unprivileged(shared_dir)
    root = shared_dir / "runs"
    pushed_run(root, "exp2")
    weights = root / "exp1" / "weights"
    weights.mkdir(parents=True)
    (weights / "best.pt").write_bytes(b"never pushed" * 100)
    os.utime(weights / "best.pt", (1_700_000_000, 1_700_000_000))
    for p in (root, root / "exp1"):
        p.chmod(0o755)
    if what == "folder":
        weights.chmod(0o700)  # root's own: nobody cannot list it
        (weights / "best.pt").chmod(0o600)
    else:
        weights.chmod(0o755)
        (weights / "best.pt").chmod(0o600)  # nobody sees it, cannot read it
    state = shared_dir / "state"
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    env = autostop_env(shared_dir, HOME=str(shared_dir), HF_HUB_OFFLINE="1")
    watch = watches(root, env, prefix=prefix)
    message = held(watch)
    if what == "folder" and prefix:
        assert f"cannot look in {weights}: permission denied" in message, message
    elif prefix:
        assert "exp1: best.pt cannot be read to check it" in message, message
    assert not (shared_dir / "ran").exists()


def test_the_root_through_a_symlink_is_the_same_root(tmp_path: Path, watches) -> None:
    """A watcher on the real path and an app (its hold) or a second watcher on a symlinked
    spelling: one root, one hold, one watcher."""
    real = tmp_path / "data" / "runs"
    real.mkdir(parents=True)
    link = tmp_path / "runs"
    link.symlink_to(real)
    env = autostop_env(tmp_path)
    hold = Hold(AutostopFiles.for_root(str(link), {"XDG_STATE_HOME": env["XDG_STATE_HOME"]}).hold)
    hold.take()  # what `rgpu-tui --no-autostop ~/runs` does
    try:
        watch = watches(real, env)
        message = held(watch)
        assert "held by an open rgpu-tui app" in message
        second = subprocess.run(
            [str(RGPU_TUI), "watch", str(link)], env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        assert "another `rgpu-tui watch` is watching this root" in second.stderr
    finally:
        hold.release()
    assert not (tmp_path / "ran").exists()
