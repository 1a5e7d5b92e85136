"""Polling without fixed sleeps, for tests that wait on a thread, a process or a file."""

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
            extra = f"\n{details()}" if details else ""
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}{extra}")
        time.sleep(interval)
