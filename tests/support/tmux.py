"""A private tmux server for end-to-end tests: start a program in a pane, read the screen,
press keys.

Every command is an argv list (no shell). The server is private (``tmux -L <unique name>
-f /dev/null``), starts with a minimal environment (PATH, HOME, LANG only; no TMUX,
no HF_* or RGPU_* of the person running the tests), and the pane gets exactly the
variables passed to ``start``. ``start_app`` runs the program under a tiny Python wrapper
that writes its exit status to a file, so a test can check that the app exited 0.
Panes stay after their program exits (``remain-on-exit``), so a crash's traceback can
still be read. ``kill()`` (also on ``__exit__``) always ends the server.

Waiting is polling ``capture-pane -p`` against a deadline; there are no fixed sleeps.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

POLL_S = 0.15
DEFAULT_TIMEOUT_S = 20.0
# argv: RCFILE PROGRAM ARGS...; runs PROGRAM, writes its exit status to RCFILE
_RC_WRAPPER = (
    "import os, subprocess, sys\n"
    "r = subprocess.call(sys.argv[2:])\n"
    "tmp = sys.argv[1] + '.tmp'\n"
    "with open(tmp, 'w') as f:\n"
    "    f.write(str(r))\n"
    "os.replace(tmp, sys.argv[1])\n"
)


def tmux_executable() -> str | None:
    return shutil.which("tmux")


class TmuxError(AssertionError):
    """tmux or the program in it did not do what the test expected; carries the screen."""


class Tmux:
    """One private tmux server with one session (``self.session``) of a fixed size."""

    def __init__(self, width: int, height: int, *, session: str = "app") -> None:
        exe = tmux_executable()
        if exe is None:
            raise TmuxError("tmux is not installed")
        self.exe = exe
        self.width = width
        self.height = height
        self.session = session
        self.socket = f"rgpu-e2e-{os.getpid()}-{secrets.token_hex(4)}"
        self.rc_file: Path | None = None
        self.socket_path: str | None = None
        self._started = False
        path = os.environ.get("PATH") or os.defpath
        self._base_env = {
            "PATH": path,
            "HOME": os.environ.get("HOME", "/"),
            "LANG": "C.UTF-8",
        }
        if "TMUX_TMPDIR" in os.environ:  # where the socket lives
            self._base_env["TMUX_TMPDIR"] = os.environ["TMUX_TMPDIR"]

    # -- tmux commands ---------------------------------------------------------

    def tmux(self, *args: str, check: bool = True, timeout: float = 10.0) -> str:
        """Run one tmux command on this server; return its stdout."""
        argv = [self.exe, "-L", self.socket, "-f", "/dev/null", *args]
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self._base_env,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise TmuxError(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr}")
        return proc.stdout

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        """Start the server with one detached session of width x height running argv."""
        if self._started:
            raise TmuxError("already started")
        opts: list[str] = ["-d", "-x", str(self.width), "-y", str(self.height), "-s", self.session]
        if cwd is not None:
            opts += ["-c", str(cwd)]
        for key, value in (env or {}).items():
            opts += ["-e", f"{key}={value}"]
        self._started = True
        # start-server and the options first, in the same client call, so that the
        # pane exists only once remain-on-exit is on
        self.tmux(
            "start-server",
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "set-option",
            "-g",
            "history-limit",
            "0",
            ";",
            "new-session",
            *opts,
            "--",
            *argv,
        )
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip() or None

    def start_app(
        self,
        argv: Sequence[str],
        rc_file: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        """``start``, through a wrapper that writes argv's exit status to rc_file."""
        self.rc_file = Path(rc_file)
        self.start([sys.executable, "-c", _RC_WRAPPER, str(rc_file), *argv], env=env, cwd=cwd)

    def send(self, *keys: str) -> None:
        """Press keys by tmux name: "j", "Enter", "Escape", "C-l", "Tab", "BSpace"..."""
        self.tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        """Type text literally (send-keys -l)."""
        self.tmux("send-keys", "-t", self.session, "-l", "--", text)

    def capture(self) -> str:
        """The visible screen as plain text, one line per row."""
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def cursor(self) -> tuple[int, int]:
        """Where the program left the terminal's cursor (x, y), 0-based: a Textual app puts
        it in the focused Input, so it tells which field has the focus."""
        out = self.tmux("display-message", "-p", "-t", self.session, "#{cursor_x} #{cursor_y}")
        x, y = out.split()
        return int(x), int(y)

    def pane_pid(self) -> int:
        """The pid of the pane's program (the exit-status wrapper under start_app)."""
        return int(self.tmux("display-message", "-p", "-t", self.session, "#{pane_pid}"))

    def pane_dead(self) -> bool:
        out = self.tmux("display-message", "-p", "-t", self.session, "#{pane_dead}", check=False)
        return out.strip() == "1"

    def server_running(self) -> bool:
        proc = subprocess.run(
            [self.exe, "-L", self.socket, "-f", "/dev/null", "has-session"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=self._base_env,
            timeout=10,
        )
        return proc.returncode == 0

    def kill(self) -> None:
        """kill-server, and remove the socket file it leaves; idempotent, never raises."""
        if not self._started:
            return
        try:
            self.tmux("kill-server", check=False)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.socket_path and os.path.basename(self.socket_path) == self.socket:
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    # -- waiting ---------------------------------------------------------------

    def exit_code(self) -> int | None:
        """The wrapped program's exit status once it has exited, else None."""
        if self.rc_file is None:
            raise TmuxError("not started with start_app")
        try:
            text = self.rc_file.read_text().strip()
        except OSError:
            return None
        return int(text) if text else None

    def wait_for(
        self,
        predicate: Callable[[str], object] | str,
        what: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        *,
        details: Callable[[], str] | None = None,
    ) -> str:
        """Poll the screen until predicate(screen) is truthy (or the text is on it); return
        the screen. Fails with the last screen when the deadline passes or the program
        exited first."""
        if isinstance(predicate, str):
            needle = predicate
            what = what or repr(needle)

            def predicate(screen: str) -> bool:
                return needle in screen

        what = what or "the condition"
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if predicate(screen):
                return screen
            if self.rc_file is not None and self.exit_code() is not None:
                self.fail(f"the program exited ({self.exit_code()}) before {what}", screen, details)
            if self.pane_dead():
                self.fail(f"the pane's program ended before {what}", screen, details)
            if time.monotonic() >= deadline:
                self.fail(f"timed out after {timeout:.0f} s waiting for {what}", screen, details)
            time.sleep(POLL_S)

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT_S) -> int:
        """Wait for the wrapped program to exit; return its status."""
        deadline = time.monotonic() + timeout
        while True:
            rc = self.exit_code()
            if rc is not None:
                return rc
            if self.pane_dead():  # the wrapper itself failed
                self.fail("the pane's program ended without an exit status", self.capture())
            if time.monotonic() >= deadline:
                self.fail(f"the program did not exit within {timeout:.0f} s", self.capture())
            time.sleep(POLL_S)

    def fail(self, message: str, screen: str, details: Callable[[], str] | None = None) -> None:
        extra = ""
        if details is not None:
            try:
                extra = "\n" + details()
            except Exception as exc:  # diagnostics must not hide the failure
                extra = f"\n<details failed: {exc!r}>"
        raise TmuxError(f"{message}\n--- screen ({self.width}x{self.height}) ---\n{screen}{extra}")
