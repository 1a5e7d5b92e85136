"""Polling without fixed sleeps, for tests that wait on a thread, a process or a file, or
on a Textual app under Pilot (`wait_until_pilot`). Each fails at its deadline with what it
waited for, never with whatever the next line trips over."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_until(
    predicate: Callable[[], Any],
    what: str = "condition",
    timeout: float = 10.0,
    details: Callable[[], str] | None = None,
    interval: float = 0.05,
) -> Any:
    """Poll `predicate` until it returns something truthy and return that; fail the test
    after `timeout` seconds, with `details()` appended (a console tail, a screen)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            _timed_out(what, timeout, details)
        time.sleep(interval)


async def wait_until_pilot(
    pilot,
    predicate: Callable[[], Any],
    what: str = "condition",
    timeout: float = 10.0,
    details: Callable[[], str] | None = None,
    interval: float = 0.02,
) -> Any:
    """wait_until for an app under Pilot: the app runs while it waits (`pilot.pause`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            _timed_out(what, timeout, details)
        await pilot.pause(interval)


def _timed_out(what: str, timeout: float, details: Callable[[], str] | None) -> None:
    extra = f"\n{details()}" if details else ""
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}{extra}")
