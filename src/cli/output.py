"""The sub-commands' output boundary: everything `rgpu-tui snapshot`, `cost`, `push`,
`launch`, `stop`, `preflight` and `demo` print passes one stream wrapper.

- Run-derived text is made printable (`core.base.text.printable`, newlines kept): a run name,
  path, error or console-log line holding ESC sequences shows as ``^[``, a
  surrogate-escaped byte of a non-UTF-8 file name as ``\\xff``. Nothing reaches the
  terminal raw, and nothing fails to encode (under PYTHONIOENCODING=utf-8 a lone surrogate
  would raise UnicodeEncodeError; under an ASCII locale any non-ASCII character would).
  JSON output passes unchanged: json escapes every control and non-ASCII character itself
  (a non-UTF-8 name stays a lone surrogate, ``\\udcff``, which `os.fsencode` turns back
  into the name's bytes).
- A reader that went away (``rgpu-tui snapshot | head -1``) silences that stream: the rest
  of the output goes to /dev/null, the command finishes what it was doing (a stop keeps
  escalating, a push records its result) and exits with its own status; no
  BrokenPipeError traceback, no "Exception ignored" at exit.

The app does not write through these streams: Textual writes to the terminal directly
(``sys.__stderr__``), and the panes make their text printable themselves (tui/inert.py).
"""

from __future__ import annotations

import functools
import os
import sys

from ..core.base.text import printable


class InertStream:
    """A text stream's stand-in (sys.stdout, sys.stderr) that writes printable text and
    goes quiet when its reader is gone; anything else is the stream's own."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            safe = printable(text, newlines=True)
            try:
                try:
                    self._stream.write(safe)
                except UnicodeEncodeError:  # an encoding narrower than the text (ASCII)
                    encoding = getattr(self._stream, "encoding", None) or "ascii"
                    self._stream.write(safe.encode(encoding, "backslashreplace").decode(encoding))
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        """What is still buffered, and everything after, goes to /dev/null: also the
        interpreter's own flush at exit, which would fail again."""
        self.gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a file descriptor (a test's capture): nothing is flushed at exit

    @property
    def underlying(self):
        """The stream this one writes to."""
        return self._stream

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def styled_stdout():
    """The real stdout under the InertStream, for output that writes its own escape sequences
    around text already made printable (the coloured charts); sys.stdout itself when it is
    not wrapped."""
    return getattr(sys.stdout, "underlying", sys.stdout)


def run_guarded(command):
    """`command` (the CLI's main) with sys.stdout and sys.stderr behind InertStream for its
    whole run. It exits with its own status; 1 when a BrokenPipeError written past the
    streams cut it short."""

    @functools.wraps(command)
    def guarded(*args, **kwargs) -> int:
        saved = sys.stdout, sys.stderr
        out, err = InertStream(sys.stdout), InertStream(sys.stderr)
        sys.stdout, sys.stderr = out, err
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:  # the flushes below find which stream it was
            return 1
        finally:
            out.flush()
            err.flush()
            sys.stdout, sys.stderr = saved

    return guarded
