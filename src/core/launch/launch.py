"""Launching `libreyolo train` runs: spawning them detached and recording them.

A launch is `libreyolo train key=value ...` (core.launch.launch_spec builds and checks it)
started from an argv list (never a shell), detached from whoever launched it: its own
session, stdin from /dev/null, stdout and stderr into a console log under
`<project>/.rgpu/console/`, all other descriptors closed. A daemon thread reaps
it, so no zombie is left while the launcher lives, and nothing waits on it when
the launcher exits. A trampoline (`python -c ...; os.execv(libreyolo ...)`, the
same pid) puts SIGINT and SIGTERM back to their defaults first: a launcher
started with SIGINT ignored (`cmd &` in a script, nohup-like wrappers) would
otherwise pass that on, and the trainer could never be stopped gracefully.

Every launch is a line in `<project>/.rgpu/launches.jsonl` (one `os.write` on
O_APPEND per line); the exit status, when this process reaped it, and the run
directory, when `rgpu-tui launch` found it, are further lines with the same id.
They are read by core.records.launch_records; which run directory a launch became and
its state are core.records.launch_runs' (read-only: a refresh never writes). Stopping a
run is core.launch.stop's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import psutil

from ..base.private import private_dir
from ..records.launch_records import LaunchRecord, launches_path, rgpu_dir
from ..records.records import append_json_line
from . import launch_spec
from .launch_spec import (
    LaunchError,
    LaunchSpec,
    build_argv,
    check_spec,
    display_command,
    hf_status,
    libreyolo_missing,
)

CONSOLE_DIR = "console"

# Run before libreyolo in the same process (execv keeps the pid): signals that
# the launcher ignores must not stay ignored in the trainer.
_TRAMPOLINE = (
    "import os,signal,sys\n"
    "for s in (signal.SIGINT,signal.SIGTERM):signal.signal(s,signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_SETMASK,())\n"
    "os.execv(sys.argv[1],sys.argv[1:])\n"
)


# -- records --------------------------------------------------------------------
# (read by core.records.launch_records; what a launch writes is written here)


def append_line(path: str, obj: dict) -> None:
    """One complete JSON line (see core.records.records), in a file private to its owner (0600)."""
    append_json_line(path, obj)


def record_run_dir(project: str, launch_id: str, run_dir: str) -> None:
    """Record where a launch's run went (`rgpu-tui launch`, which acts, found it)."""
    append_line(launches_path(project), {"kind": "run_dir", "id": launch_id, "run_dir": run_dir})


# -- launching --------------------------------------------------------------------


def _safe_file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"


def _open_console_log(project: str, name: str, now: float) -> tuple[int, str]:
    folder = os.path.join(rgpu_dir(project), CONSOLE_DIR)
    private_dir(folder, project)  # .rgpu/ and console/: 0700
    stamp = datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")
    base = f"{_safe_file_name(name)}-{stamp}"
    for i in range(1000):
        path = os.path.join(folder, base + (f"-{i + 1}" if i else "") + ".log")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        return fd, path
    raise LaunchError(f"cannot create a console log in {folder}")


def spawn_detached(
    argv: Sequence[str],
    log_fd: int,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    on_exit: Callable[[int], None] | None = None,
) -> subprocess.Popen:
    """Start argv in its own session, stdin /dev/null, stdout+stderr to log_fd.

    SIGINT/SIGTERM are reset to their defaults in the child before argv runs
    (same pid). A daemon thread reaps it and calls on_exit(returncode).
    """
    full = [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, *argv]
    proc = subprocess.Popen(
        full,
        stdin=subprocess.DEVNULL,
        stdout=log_fd,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
        close_fds=True,
    )

    def reap() -> None:
        rc = proc.wait()
        if on_exit is not None:
            try:
                on_exit(rc)
            except Exception:
                pass

    threading.Thread(target=reap, name=f"reap-{proc.pid}", daemon=True).start()
    return proc


def launch(
    spec: LaunchSpec,
    *,
    env: Mapping[str, str] | None = None,
    executable: str | None = None,
    now: Callable[[], float] = time.time,
) -> LaunchRecord:
    """Start the run (detached) and record it; returns at once. Raises LaunchError.

    env: the environment of the run (default: this process's); PYTHONUNBUFFERED=1
    is added so the console log is live. The doctor is the caller's business
    (core.launch.doctor.run_doctor).
    """
    check_spec(spec, env)
    exe = executable or launch_spec.libreyolo_executable()  # looked up now: tests replace it
    if exe is None:
        raise LaunchError(libreyolo_missing())
    return start_recorded(build_argv(spec, exe), spec.project, spec.name, env=env, now=now)


def start_recorded(
    argv: Sequence[str],
    project: str,
    name: str,
    *,
    env: Mapping[str, str] | None = None,
    now: Callable[[], float] = time.time,
) -> LaunchRecord:
    """Start argv detached (spawn_detached), its console log under `<project>/.rgpu/console/`,
    and record it in `<project>/.rgpu/launches.jsonl` as launch `name`; returns at once.
    Raises LaunchError. Used by launch() and by core.launch.resume.
    """
    argv = list(argv)
    run_env = dict(os.environ if env is None else env)
    run_env.setdefault("PYTHONUNBUFFERED", "1")
    hf = hf_status(run_env)
    started = now()
    try:
        os.makedirs(project, exist_ok=True)
        log_fd, console_log = _open_console_log(project, name, started)
    except OSError as exc:
        why = exc.strerror or exc
        raise LaunchError(f"project: cannot write in {project}: {why}") from None
    launch_id = uuid.uuid4().hex[:12]
    path = launches_path(project)

    def on_exit(rc: int) -> None:
        append_line(path, {"kind": "exit", "id": launch_id, "returncode": rc, "time": time.time()})

    try:
        cwd = os.getcwd()  # relative paths in extra arguments mean what they meant here
    except OSError:  # the launcher's directory was deleted
        cwd = project
    try:
        proc = spawn_detached(argv, log_fd, cwd=cwd, env=run_env, on_exit=on_exit)
    except OSError as exc:
        raise LaunchError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    finally:
        os.close(log_fd)
    try:
        create_time = psutil.Process(proc.pid).create_time()
    except psutil.Error:
        create_time = None
    record = LaunchRecord(
        id=launch_id,
        time=started,
        pid=proc.pid,
        create_time=create_time,
        argv=tuple(argv),
        command=display_command(argv),
        cwd=cwd,
        project=project,
        name=name,
        console_log=console_log,
        hf_token_set=hf.token_set,
        hf_home=hf.home,
    )
    obj = {"kind": "launch", **record.to_json()}
    for key in ("run_dir", "returncode", "exited_at", "died_error", "died_tail"):
        obj.pop(key)
    try:
        append_line(path, obj)
    except OSError as exc:  # a full disk, a symlink planted there: say so, it runs anyway
        raise LaunchError(
            f"started pid {proc.pid}, but cannot record it in {path}: {exc.strerror or exc} "
            f"(stop it with kill -INT -{proc.pid} if it should not run)"
        ) from None
    return record
