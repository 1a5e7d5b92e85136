"""The list of runs as each front end builds it, read as a user would: `rgpu-tui snapshot
--json`, the first snapshot `rgpu-tui agent` sends, and the runs `rgpu-tui watch` keeps in
its state file after its first look (each a subprocess). The app's list is its Snapshot
under Pilot (the tests that use these read it themselves)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from rgpu_tui.core.records.event_state import state_path
from support.cli_env import RGPU_TUI

TIMEOUT = 60.0


def _rows(runs: list[dict]) -> set[tuple[str, str]]:
    return {(r["run_dir"], r["name"]) for r in runs}


def snapshot_list(root: Path, env: dict) -> set[tuple[str, str]]:
    proc = subprocess.run(
        [str(RGPU_TUI), "snapshot", str(root), "--json"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    return _rows(json.loads(proc.stdout)["runs"])


def snapshot_doc(root: Path, env: dict) -> dict:
    proc = subprocess.run(
        [str(RGPU_TUI), "snapshot", str(root), "--json"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def agent_list(root: Path, env: dict) -> set[tuple[str, str]]:
    """The runs of the agent's first full snapshot line."""
    proc = subprocess.Popen(
        [str(RGPU_TUI), "agent", str(root), "--interval", "0.5"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            doc = json.loads(line)
            if "snapshot" in doc:
                return _rows(doc["snapshot"]["runs"])
        raise AssertionError(f"the agent sent no snapshot: {proc.stderr.read()}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def watch_list(root: Path, env: dict) -> set[str]:
    """The run directories `rgpu-tui watch` keeps after its first look (its state file,
    under the XDG_STATE_HOME of `env`)."""
    path = Path(state_path(str(root), env))
    proc = subprocess.Popen(
        [str(RGPU_TUI), "watch", str(root), "--json", "--interval", "0.2", "--no-autostop"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not path.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"watch saved no state: {proc.stderr.read()}")
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    state = json.loads(path.read_text())
    return set(state["runs"])


def watch_env(env: dict, tmp_path: Path) -> dict:
    """`env` with a state folder of its own (a first look, every time)."""
    home = tmp_path / f"state-{len(os.listdir(tmp_path))}"
    return {**env, "XDG_STATE_HOME": str(home)}
