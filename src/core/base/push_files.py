"""The `auto_push_files` setting: which of best.pt and last.pt auto-push keeps on the Hub
(core.hub.auto_push); parsed here for core.base.config."""

from __future__ import annotations

import json

FILES = ("best", "last")


def push_files(raw) -> tuple[str, ...]:
    """A TOML array (or, from RGPU_AUTO_PUSH_FILES, a JSON array or "best,last") of "best"
    and "last", each once, in the order given."""
    if isinstance(raw, str):
        text = raw.strip()
        try:
            raw = json.loads(text) if text.startswith("[") else text.split(",")
        except (ValueError, RecursionError):
            raw = None
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ValueError('must be a list of "best" and "last", e.g. ["best", "last"]')
    out: list[str] = []
    for name in (x.strip().lower() for x in raw):
        if name not in FILES:
            raise ValueError(f'must hold only "best" and "last", not {name!r}')
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError('must name at least one of "best" and "last"')
    return tuple(out)
