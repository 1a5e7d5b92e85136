"""The environment, the executable and the one runner for rgpu-tui run as a user would run it,
in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RGPU_TUI = Path(sys.executable).parent / "rgpu-tui"


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A private HOME and config; none of the runner's RGPU_*/HF_*/TEXTUAL* settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RGPU_", "HF_", "TEXTUAL", "TMUX", "PYTHONIO"))
    }
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), LANG="C.UTF-8")
    env.update(extra)
    return env


def run_rgpu(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    cwd: Path | None = None,
    prefix: tuple[str, ...] = (),
) -> subprocess.CompletedProcess:
    """`rgpu-tui ARGS` through its console script, its output captured as text; `prefix`
    goes before it (setpriv, timeout...); `env` is usually clean_env(tmp_path)."""
    return subprocess.run(
        [*prefix, str(RGPU_TUI), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
