"""What the loops with no screen share (`rgpu-tui watch`, `agent`, `exporter`): the signals
that end them. (Their refreshes go through core.picture.refresh, the one driver.)

`Stop` turns SIGINT and SIGTERM into a flag and wakes the loop's select() through a
pipe (the handler does nothing that takes a lock); `Stop.wait` sleeps until the next
refresh is due, a signal comes, or one of the other file descriptors it is given (the
agent's stdin) has something to read.
"""

from __future__ import annotations

import os
import select
import signal


class Stop:
    """SIGINT/SIGTERM set `requested` and wake `wait()`; `close()` puts the old handlers
    back. Create it on the main thread (signal handlers can only be set there)."""

    def __init__(self) -> None:
        self.requested = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._old = {}
        self._old_fd = signal.set_wakeup_fd(self._w)
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        self.requested = True

    def wait(self, seconds: float, fds: tuple[int, ...] = ()) -> list[int]:
        """Sleep up to `seconds`; return at once on a signal. With `fds`, also return when
        one of them can be read: those are returned (none after a timeout or a signal)."""
        if self.requested or (seconds <= 0 and not fds):
            return []
        try:
            ready, _, _ = select.select([self._r, *fds], [], [], max(seconds, 0.0))
        except InterruptedError:  # pragma: no cover (PEP 475 retries)
            return []
        if self._r in ready:
            try:
                while os.read(self._r, 512):
                    pass
            except BlockingIOError:
                pass
        return [fd for fd in ready if fd != self._r]

    def close(self) -> None:
        signal.set_wakeup_fd(self._old_fd)
        for sig, old in self._old.items():
            signal.signal(sig, old)
        os.close(self._r)
        os.close(self._w)
