"""The loop of `rgpu-tui watch`: the app's refresh with no screen, its events told and its
autostop stepped.

Each `interval` the Collector refreshes (through core.picture.refresh, the one driver and its
failure rule: a refresh that raises is said once, "refresh failed: ...", and the loop goes on),
the EventEngine (core.away.events) makes the new events of that Snapshot and `emit` tells each
(printed and notified, by the command). Then the Autostop (core.away.autostop), when there is
one, steps on the same Snapshot (an autostop bug is said once too, and the watcher goes on),
and may ask for the next look sooner (`wake_in`: while its notification goes out). What the
engine has told is saved to the state file (core.records.event_state) when it changed, and at
least every SEEN_SAVE_S (the last-look time); a state file that cannot be written is said once
and kept dirty (a restart may repeat events). `run(stop)` returns when `stop` (a
core.away.headless.Stop) is requested, after one last save.

`make_autostop` is the watcher's Autostop from the settings, or None, with what it says about
it (off, why, the command it would run, its warnings) given to `say`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..picture.refresh import RefreshDriver, one_line
from ..records.event_state import save_state as _save_state
from .autostop import Autostop, enabled, shown_command

SEEN_SAVE_S = 300.0  # the state is saved at least this often (the last-look time)


class Watcher:
    def __init__(
        self,
        collector,
        engine,
        emit: Callable,
        state_file: str,
        interval: float,
        *,
        say: Callable[[str], None],
        autostop=None,
        save_state: Callable[[str, dict], None] = _save_state,
    ) -> None:
        self.engine = engine
        self.emit = emit
        self.state_file = state_file
        self.interval = interval
        self.autostop = autostop
        self._say = say
        self._save_state = save_state
        self._driver = RefreshDriver(
            collector, on_failure=lambda failure: say(f"refresh failed: {failure}")
        )
        self._autostop_failure: str | None = None
        self._save_problem: str | None = None

    def run(self, stop) -> None:
        saved_at = time.monotonic()
        while not stop.requested:
            began = time.monotonic()
            got = self._driver.refresh(then=lambda snap: (snap, self.engine.observe(snap)))
            snap, events = got if got is not None else (None, [])
            for event in events:
                self.emit(event)
            if self.autostop is not None and snap is not None:
                self._step_autostop(snap)  # after the refresh's events: they are older news
            if self.engine.dirty or time.monotonic() - saved_at >= SEEN_SAVE_S:
                self._save()
                saved_at = time.monotonic()
            soon = self.autostop.wake_in() if self.autostop is not None else None
            wait = self.interval if soon is None else min(self.interval, soon)
            stop.wait(wait - (time.monotonic() - began))
        self._save()  # the last look's time too

    def _step_autostop(self, snap) -> None:
        try:
            self.autostop.step(snap)
        except Exception as exc:  # an autostop bug: said once, the watcher goes on
            failure = f"autostop: {one_line(exc)}"
            if failure != self._autostop_failure:
                self._say(failure)
            self._autostop_failure = failure
        else:
            self._autostop_failure = None

    def _save(self) -> None:
        """Save the engine's state; a failure is said once (and the state stays dirty)."""
        try:
            self._save_state(self.state_file, self.engine.state())
            self._save_problem = None
        except (OSError, ValueError) as exc:  # ValueError: a value JSON cannot hold
            self.engine.dirty = True
            problem = (
                f"cannot save its state to {self.state_file}: "
                f"{getattr(exc, 'strerror', None) or exc}"
            )
            if problem != self._save_problem:
                self._say(problem + " (a restart may repeat events)")
            self._save_problem = problem


def make_autostop(
    settings, root: str, off: bool, emit, engine, notifier, token, say: Callable[[str], None]
) -> Autostop | None:
    """The autostop of this watcher, or None (said to `say` either way). `off`: --no-autostop."""
    why = "autostop off (--no-autostop)" if off else enabled(settings)
    if why is not None:
        if settings.autostop_command:
            say(why)
        return None
    autostop = Autostop(
        settings,
        root,
        emit,
        engine=engine,
        token=token,
        drained=notifier.idle if notifier is not None else None,
        say=say,
    )
    say(
        f"autostop after {settings.autostop_idle_minutes:g} min idle with every run's weights "
        f"on the Hub: {shown_command(settings.autostop_command)} (record {autostop.files.record})"
    )
    for line in autostop.warnings():
        say(line)
    return autostop
