"""The environment and executable for running rgpu-tui as a user would, in a subprocess."""

from __future__ import annotations

import os
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
