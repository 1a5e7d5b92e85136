"""Colours and short labels shared by the panes."""

from __future__ import annotations

STATE_STYLE = {
    "running": "bold green",
    "completed": "bold cyan",
    "failed": "bold red",
    "stopped": "bold yellow",
    "dead": "bold white on red",
    "stalled": "bold black on yellow",
    "unknown": "dim",
    "starting": "bold magenta",
}

STATE_BADGE = {
    "running": "RUN ",
    "completed": "DONE",
    "failed": "FAIL",
    "stopped": "STOP",
    "dead": "DEAD",
    "stalled": "STAL",
    "unknown": " ?  ",
    "starting": "NEW ",
}


def state_badge(state: str) -> str:
    return STATE_BADGE.get(state, state[:4].upper().ljust(4))
