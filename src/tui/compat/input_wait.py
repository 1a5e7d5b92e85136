"""An input thread that sleeps until there is input.

Textual 8.2.8's Linux driver reads keys on a thread that wakes every 0.1 s to see whether
the app is exiting and whether a lone ESC has waited long enough to be a key. Each wake
is cheap on bare metal, but on the 2-core VM of bench/RESULTS.md ten wakes a second of an
otherwise idle thread cost 2 ms of CPU a second: a fifth of the app's whole 1% budget.

`driver_class()` builds a subclass of Textual's `LinuxDriver` that the app hands to
`App(driver_class=...)` (nothing global is patched). Its input thread blocks until a key
arrives, until the pending escape sequence's own timeout (`ESCDELAY`, 0.1 s) runs out,
or until the driver asks it to stop: the driver's `exit_event` is an event whose `set()`
also writes one byte to a pipe the thread waits on. Parsing, decoding and dispatch are
Textual's own objects, called as Textual calls them.

The private names (`textual._xterm_parser`, `textual._time`, the parser's
`_timeout_time`, the driver's `_debug`) are imported by `probe()` and `driver_class()`
only, never when this module is imported.
"""

from __future__ import annotations

import functools
import os
import selectors
import threading
from codecs import getincrementaldecoder
from collections.abc import Callable
from typing import Any


class WakingEvent(threading.Event):
    """A `threading.Event` whose `set()` also writes a byte to the pipe the input thread
    waits on (`attach()`), so setting it wakes that thread at once."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._fd: int | None = None

    def attach(self, fd: int) -> None:
        """Write a byte to *fd* on every `set()` until `detach()`."""
        with self._lock:
            self._fd = fd

    def detach(self) -> None:
        with self._lock:
            self._fd = None

    def set(self) -> None:
        super().set()
        with self._lock:
            if self._fd is not None:
                try:
                    os.write(self._fd, b"x")
                except OSError:  # the pipe is full: the thread is awake already
                    pass


def sleeps(driver: Any) -> bool:
    """Is `driver` (a running app's) one whose input thread sleeps until there is input?"""
    return isinstance(getattr(driver, "exit_event", None), WakingEvent)


def timeout_of(parser: Any, now: Callable[[], float]) -> float | None:
    """How long the input thread may sleep: until the pending escape sequence times out,
    or until input arrives when nothing is pending."""
    due = parser._timeout_time
    return None if due is None else max(0.0, due - now())


def probe() -> str | None:
    """None when this Textual has what the driver subclass overrides and reads; else why
    not."""
    if os.name != "posix":
        return "not a POSIX terminal"
    if os.environ.get("TEXTUAL_DRIVER"):
        return "TEXTUAL_DRIVER chooses the driver"
    from textual._time import get_time  # noqa: F401  (importable)
    from textual._xterm_parser import XTermParser
    from textual.drivers.linux_driver import LinuxDriver

    for name in ("run_input_thread", "process_message"):
        if not callable(getattr(LinuxDriver, name, None)):
            return f"LinuxDriver.{name} is missing"
    parser = XTermParser(False)  # builds a parser object, nothing more
    for name in ("feed", "tick"):
        if not callable(getattr(parser, name, None)):
            return f"XTermParser.{name} is missing"
    if not hasattr(parser, "_timeout_time"):
        return "XTermParser._timeout_time is missing"
    return None


@functools.cache
def driver_class() -> type:
    """Textual's `LinuxDriver` with the sleeping input thread (built once)."""
    from textual._time import get_time
    from textual._xterm_parser import XTermParser
    from textual.drivers.linux_driver import LinuxDriver

    class SleepingInputDriver(LinuxDriver):
        """LinuxDriver whose input thread sleeps until there is input."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.exit_event = WakingEvent()

        def run_input_thread(self) -> None:
            run_input_thread(self, XTermParser(self._debug), get_time)

    return SleepingInputDriver


def run_input_thread(driver: Any, parser: Any, now: Callable[[], float]) -> None:
    """Textual's `LinuxDriver.run_input_thread`, waiting on input, the parser's timeout
    and the exit pipe instead of waking every 0.1 s."""
    fileno = driver.fileno
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    selector = selectors.SelectSelector()
    selector.register(fileno, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    exit_event = driver.exit_event
    waking = isinstance(exit_event, WakingEvent)
    if waking:
        exit_event.attach(wake_w)
    decode = getincrementaldecoder("utf-8")().decode

    def process(events, final: bool = False) -> None:
        for key, mask in events:
            if key.fd == wake_r:
                os.read(wake_r, 64)
            elif mask & selectors.EVENT_READ:
                data = decode(os.read(fileno, 1024 * 4), final=final)
                if not data:  # stdin is a pipe that closed
                    break
                for event in parser.feed(data):
                    driver.process_message(event)
        for event in parser.tick():
            driver.process_message(event)

    try:
        while not exit_event.is_set():
            # without a WakingEvent (another driver set exit_event), poll as Textual does
            process(selector.select(timeout_of(parser, now) if waking else 0.1))
        selector.unregister(fileno)
        selector.unregister(wake_r)
        process(selector.select(0.1), final=True)  # Textual's last tick, after 0.1 s
    finally:
        if waking:
            exit_event.detach()
        selector.close()
        os.close(wake_r)
        os.close(wake_w)
