"""An input thread that sleeps until there is input.

Textual 8.2.8's Linux driver reads keys on a thread that wakes every 0.1 s to see whether
the app is exiting and whether a lone ESC has waited long enough to be a key. Each wake
is cheap on bare metal, but on the 2-core VM of bench/RESULTS.md ten wakes a second of an
otherwise idle thread cost 2 ms of CPU a second: a fifth of the app's whole 1% budget.

`install()` replaces `LinuxDriver.run_input_thread` with one that blocks until a key
arrives, until the pending escape sequence's own timeout (`ESCDELAY`, 0.1 s) runs out,
or until the driver asks it to stop: the driver's `exit_event` becomes an event whose
`set()` also writes one byte to a pipe the thread waits on. Parsing, decoding and
dispatch are Textual's own objects, called as Textual calls them.
"""

from __future__ import annotations

import os
import selectors
import threading
from codecs import getincrementaldecoder

import textual
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

WRITTEN_FOR = "8.2.8"  # the private API this replaces; other versions keep Textual's own

_original_init = LinuxDriver.__init__
_original_run = LinuxDriver.run_input_thread


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


def _init(self: LinuxDriver, *args, **kwargs) -> None:
    _original_init(self, *args, **kwargs)
    self.exit_event = WakingEvent()


def timeout_of(parser: XTermParser) -> float | None:
    """How long the input thread may sleep: until the pending escape sequence times out,
    or until input arrives when nothing is pending."""
    due = parser._timeout_time
    return None if due is None else max(0.0, due - get_time())


def run_input_thread(self: LinuxDriver) -> None:
    """Textual's `LinuxDriver.run_input_thread`, waiting on input, the parser's timeout
    and the exit pipe instead of waking every 0.1 s."""
    fileno = self.fileno
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    selector = selectors.SelectSelector()
    selector.register(fileno, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    exit_event = self.exit_event
    waking = isinstance(exit_event, WakingEvent)
    if waking:
        exit_event.attach(wake_w)
    parser = XTermParser(self._debug)
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
                    self.process_message(event)
        for event in parser.tick():
            self.process_message(event)

    try:
        while not exit_event.is_set():
            # without a WakingEvent (another driver set exit_event), poll as Textual does
            process(selector.select(timeout_of(parser) if waking else 0.1))
        selector.unregister(fileno)
        selector.unregister(wake_r)
        process(selector.select(0.1), final=True)  # Textual's last tick, after 0.1 s
    finally:
        if waking:
            exit_event.detach()
        selector.close()
        os.close(wake_r)
        os.close(wake_w)


def install() -> bool:
    """Use the sleeping input thread; False (Textual's own kept) on another Textual version."""
    if textual.__version__ != WRITTEN_FOR:
        return False
    LinuxDriver.__init__ = _init
    LinuxDriver.run_input_thread = run_input_thread
    return True


def uninstall() -> None:
    LinuxDriver.__init__ = _original_init
    LinuxDriver.run_input_thread = _original_run
