"""Run ``libreyolo train`` for real, as a child process, for the end-to-end tests.

The process gets its own session (so the whole group can be signalled with
``os.killpg``), no stdin, and its stdout+stderr go to ``<project>/<name>.console.log``
(libreyolo writes its setup output and tracebacks only to stderr, and pycocotools
prints to stdout).  ``cleanup()`` always kills the group; use the object as a
context manager or make sure a fixture calls ``cleanup()``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: SIGKILL the trainer if the test process dies without tearing down (e.g. it
    is itself SIGKILLed by a CI timeout). Best effort; a no-op elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def libreyolo_executable() -> Path:
    """The ``libreyolo`` console script installed beside the running interpreter."""
    return Path(sys.executable).parent / "libreyolo"


class TrainingError(AssertionError):
    """Training did not do what the test expected; the message carries the console tail."""


class Training:
    """One real, CPU-only ``libreyolo train`` run of a tiny model on a tiny dataset."""

    def __init__(
        self,
        data_yaml: Path,
        project: Path,
        name: str = "run",
        epochs: int = 3,
        *,
        batch: int = 4,
        imgsz: int = 128,
        model: str = "yolo9-t",
        extra_args: Sequence[str] = (),
    ) -> None:
        self.data_yaml = Path(data_yaml).resolve()
        self.project = Path(project).resolve()
        self.name = name
        self.epochs = epochs
        self.batch = batch
        self.imgsz = imgsz
        self.model = model
        self.extra_args = list(extra_args)
        self.console_log = self.project / f"{name}.console.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None
        self._log_fh: IO[bytes] | None = None

    # ------------------------------------------------------------------ basics
    @property
    def run_dir(self) -> Path:
        """``project/name``.  ``start()`` refuses to run if it already exists, because
        libreyolo would then silently write to ``name2`` instead."""
        return self.project / self.name

    @property
    def argv(self) -> list[str]:
        return [
            str(libreyolo_executable()),
            "train",
            f"model={self.model}",
            "pretrained=False",
            f"data={self.data_yaml}",
            f"epochs={self.epochs}",
            f"batch={self.batch}",
            f"imgsz={self.imgsz}",
            "device=cpu",
            "workers=0",
            "amp=False",
            "eval_interval=1",
            "save_period=1",
            f"project={self.project}",
            f"name={self.name}",
            *self.extra_args,
        ]

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise TrainingError("training was not started")
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        """Exit status (negative: killed by that signal), or None while it runs."""
        return None if self.proc is None else self.proc.poll()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # --------------------------------------------------------------- lifecycle
    def start(self) -> Training:
        if self.proc is not None:
            raise TrainingError("training already started")
        exe = libreyolo_executable()
        if not exe.exists():
            raise TrainingError(f"libreyolo executable not found at {exe}")
        if self.run_dir.exists():
            raise TrainingError(
                f"run dir {self.run_dir} already exists (libreyolo would use a new name)"
            )
        self.project.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            PYTHONUNBUFFERED="1",  # console log in real time
            HF_HUB_OFFLINE="1",  # never try to fetch weights
            MPLBACKEND="Agg",
        )
        # One intra-op thread: as fast for this tiny model, and several runs (or the
        # watcher under test) sharing a small CI box do not oversubscribe the cores.
        env.setdefault("OMP_NUM_THREADS", "1")
        self._log_fh = open(self.console_log, "wb")  # closed in cleanup()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log_fh,
            stderr=subprocess.STDOUT,
            cwd=self.project,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        return self

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit; return its exit status.

        Raises TrainingError (with the console tail) if it is still running after
        ``timeout`` seconds.  Does not check the exit status; see ``wait_ok``.
        """
        if self.proc is None:
            raise TrainingError("training was not started")
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TrainingError(
                self.failure_message(f"still running after waiting {timeout:.0f}s")
            ) from None

    def wait_ok(self, timeout: float) -> None:
        """Wait for the process to exit and raise TrainingError unless it exited 0."""
        rc = self.wait(timeout)
        if rc != 0:
            raise TrainingError(self.failure_message(f"exited with status {rc}"))

    def send_signal(self, sig: int) -> None:
        """Signal the whole process group (the child leads its own session)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> int | None:
        """SIGKILL the process group and reap the child; return its exit status."""
        self.send_signal(signal.SIGKILL)
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable process
            return None

    def terminate(self, grace: float = 10.0) -> int | None:
        """SIGTERM the process group, then SIGKILL if it has not exited after ``grace`` s."""
        if self.proc is None:
            return None
        self.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return self.kill()

    def cleanup(self) -> None:
        """Kill whatever is left of the process group and close the console log. Idempotent."""
        if self.proc is not None:
            # Kill the group even if the leader already exited: stray children die too.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self) -> Training:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # ------------------------------------------------------------- observation
    def status(self) -> dict[str, Any] | None:
        """The run's status.json, or None if it is missing or momentarily unreadable."""
        try:
            return json.loads((self.run_dir / "status.json").read_text())
        except (OSError, ValueError):
            return None

    def metrics_lines(self) -> int:
        """Number of complete lines in metrics.jsonl (one per finished epoch)."""
        try:
            data = (self.run_dir / "metrics.jsonl").read_bytes()
        except OSError:
            return 0
        return data.count(b"\n")

    def wait_until(
        self,
        predicate: Callable[[], Any],
        timeout: float,
        what: str,
        interval: float = 0.2,
    ) -> Any:
        """Poll ``predicate`` until it returns something truthy; return that value.

        Fails with the console tail if the deadline passes or the process exits
        first (the predicate is checked once more after the exit, so a condition
        that became true right before the exit is still seen).
        """
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if self.proc is not None and self.proc.poll() is not None:
                value = predicate()
                if value:
                    return value
                raise TrainingError(
                    self.failure_message(f"exited ({self.proc.returncode}) before {what}")
                )
            if time.monotonic() >= deadline:
                raise TrainingError(
                    self.failure_message(f"timed out after {timeout:.0f}s waiting for {what}")
                )
            time.sleep(interval)

    def wait_for_epochs(self, n: int, timeout: float) -> dict[str, Any]:
        """Wait until status.json reports at least ``n`` completed epochs; return it."""

        def done() -> dict[str, Any] | None:
            st = self.status()
            if st and (st.get("completed_epochs") or 0) >= n:
                return st
            return None

        return self.wait_until(done, timeout, f"{n} completed epoch(s) in status.json")

    def console_tail(self, lines: int = 40) -> str:
        try:
            if self._log_fh is not None:
                self._log_fh.flush()
            text = self.console_log.read_text(errors="replace")
        except OSError as exc:
            return f"<console log unreadable: {exc}>"
        return "\n".join(text.splitlines()[-lines:])

    def failure_message(self, what: str) -> str:
        elapsed = ""
        if self.started_at is not None:
            elapsed = f" after {time.monotonic() - self.started_at:.1f}s"
        return (
            f"libreyolo training {what}{elapsed}\n"
            f"  argv: {' '.join(self.argv)}\n"
            f"  run dir: {self.run_dir} (exists: {self.run_dir.exists()})\n"
            f"  returncode: {self.returncode}\n"
            f"  status.json: {self._status_brief()}\n"
            f"--- last lines of {self.console_log} ---\n{self.console_tail()}"
        )

    def _status_brief(self) -> dict[str, Any] | None:
        st = self.status()
        if st is None:
            return None
        return {k: v for k, v in st.items() if k != "metrics"}

    def __repr__(self) -> str:
        pid = None if self.proc is None else self.proc.pid
        return (
            f"Training(run_dir={str(self.run_dir)!r}, epochs={self.epochs}, "
            f"pid={pid}, rc={self.returncode})"
        )
