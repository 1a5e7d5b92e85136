"""The one refresh driver: every loop that builds Snapshots (the app's refresher thread,
`rgpu-tui watch`, the agent, the exporter's feed) refreshes its Collector through it, so
all of them follow one failure rule.

The rule: a refresh that raises (a reader bug) never ends the loop and never reaches the
terminal raw. It becomes one line, "Type: message" with its whitespace folded (`one_line`);
`failure` holds that line until a refresh succeeds again, `on_failure` hears it once per
different line (the same bug every second is said once), and `refresh` gives None, so the
caller keeps what it showed last (the app its last Snapshot, the exporter its last
families, the agent the document the other end holds). A success clears `failure`, so
the same bug coming back later is said again.

`refresh(then=...)` runs the caller's own step on the new Snapshot (watch's events, the
exporter's families) under the same rule: a step that raises is a failed refresh too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..model.snapshot import Snapshot


def one_line(exc: BaseException) -> str:
    """An exception as one line: "Type: message", its whitespace folded."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


class RefreshDriver:
    """Refreshes `collector` (a core.picture.collect.Collector) at `clock()` (wall time);
    see the module doc for the failure rule. One thread at a time calls `refresh`."""

    def __init__(
        self,
        collector,
        *,
        clock: Callable[[], float] = time.time,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.collector = collector
        self.failure: str | None = None  # the last refresh's failure, one line; None: it worked
        self._clock = clock
        self._on_failure = on_failure

    def refresh(self, then: Callable[[Snapshot], Any] | None = None, **more) -> Any:
        """The Collector's Snapshot (or what `then` made of it); None when either raised.
        `more`: the Collector's other keywords (selected, charts)."""
        try:
            snap = self.collector.refresh(now=self._clock(), **more)
            got = snap if then is None else then(snap)
        except Exception as exc:  # a reader bug: one line, said once; the loop goes on
            self._failed(one_line(exc))
            return None
        self.failure = None
        return got

    def _failed(self, failure: str) -> None:
        news = failure != self.failure
        self.failure = failure
        if news and self._on_failure is not None:
            self._on_failure(failure)
