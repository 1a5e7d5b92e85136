"""After a launch (`rgpu-tui launch`, `rgpu-tui demo`): wait for the run's directory to
appear, record it with the launch, and say why a run died on its way up.

The launching command does this, once, as part of its act: a refresh never writes.
"""

from __future__ import annotations

import time

from ..records.launch_records import LaunchRecord
from ..records.launch_runs import LaunchState, launch_state
from .launch import record_run_dir

POLL_S = 0.25
DIED_TAIL_LINES = 10


def wait_for_run_dir(record: LaunchRecord, seconds: float) -> LaunchState:
    """The launch's state after waiting up to `seconds` for its run directory (recorded
    with the launch once found)."""
    deadline = time.monotonic() + max(seconds, 0.0)
    while True:
        state = launch_state(record, time.time())
        if state.state != "starting" or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    if state.state == "started" and state.run_dir:
        try:
            record_run_dir(record.project, record.id, state.run_dir)
        except OSError:
            pass
    return state


def died_lines(state: LaunchState) -> list[str]:
    """Why a launch died: `the run died: ERROR`, then the end of its console log."""
    lines = [f"the run died: {state.error}"]
    if state.tail:
        lines.append(f"--- last lines of {state.console_log} ---")
        lines += state.tail[-DIED_TAIL_LINES:]
    return lines
