"""Settings read the way a user's machine has them: a config.toml under HOME and the
environment (core.base.config.load_settings at a fixed time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgpu_tui.core.base.config import ConfigError, Settings, load_settings

NOW = 1_800_000_000.0


def load(home: Path, text: str | None = None, env: dict | None = None) -> Settings:
    """`text` written to HOME/.config/rgpu-tui/config.toml (none when None), then read."""
    if text is not None:
        path = home / ".config" / "rgpu-tui" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return load_settings(environ={"HOME": str(home), **(env or {})}, now=NOW)


def error_of(home: Path, text: str | None = None, env: dict | None = None) -> str:
    """The ConfigError the settings give, checked to be one line."""
    with pytest.raises(ConfigError) as info:
        load(home, text, env)
    message = str(info.value)
    assert "\n" not in message
    return message
