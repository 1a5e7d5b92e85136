"""SIGTERM ends a long command (push, pull) the way Ctrl-C does: the core code sees an
exception, records the attempt or removes its temporary file on the way out, and the
command ends with one line and the conventional status 128 + the signal."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises core.hub.push.Interrupted("SIGTERM") (once: a second
    SIGTERM while the record is written is ignored). Signals only reach the main thread:
    elsewhere (a test calling main() from a thread) nothing changes."""
    from ..core.hub.push import Interrupted

    def terminated(signum, frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Interrupted("SIGTERM")

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if in_main else None
    try:
        yield
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)


def interrupted(exc: BaseException, what: str, outcome: str) -> int:
    """Say that `what` was interrupted (by SIGTERM or SIGINT) and what became of it; the
    exit status for it."""
    sig = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
    print(f"rgpu-tui: {what} interrupted by {sig.name} ({outcome})", file=sys.stderr)
    return 128 + sig
