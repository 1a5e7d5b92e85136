"""Launching `libreyolo train` runs and stopping them.

A launch is `libreyolo train key=value ...` started from an argv list (never a
shell), detached from whoever launched it: its own session, stdin from
/dev/null, stdout and stderr into a console log under
`<project>/.rgpu/console/`, all other descriptors closed. A daemon thread reaps
it, so no zombie is left while the launcher lives, and nothing waits on it when
the launcher exits. A trampoline (`python -c ...; os.execv(libreyolo ...)`, the
same pid) puts SIGINT and SIGTERM back to their defaults first: a launcher
started with SIGINT ignored (`cmd &` in a script, nohup-like wrappers) would
otherwise pass that on, and the trainer could never be stopped gracefully.

Every launch is a line in `<project>/.rgpu/launches.jsonl` (one `os.write` on
O_APPEND per line); the exit status, when this process reaped it, and the run
directory, when `rgpu-tui launch` found it, are further lines with the same id.
They are read by core.launch_records; which run directory a launch became and
its state are core.launch_runs' (read-only: a refresh never writes).

Stopping sends SIGINT (libreyolo then records `failed`/KeyboardInterrupt), then
SIGTERM, then SIGKILL, to the run's process group, and only ever to a process
that started with the run and looks like a trainer (core.stop_target decides).
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

import psutil

from .launch_records import RGPU_DIR, LaunchRecord, launches_path, read_launches, rgpu_dir
from .launch_runs import (
    LaunchState,
    console_tail,
    error_from_tail,
    find_run_dir,
    launch_alive,
    launch_state,
    read_status,
)
from .private import private_dir
from .records import append_json_line
from .status import check_pid, derive_state, parse_time
from .stop_target import GONE, Target, verify
from .stop_target import target as stop_target

# the readers live in core.launch_records and core.launch_runs; these names stay importable
# from here for the commands that act
__all__ = [
    "RGPU_DIR",
    "LaunchRecord",
    "LaunchState",
    "console_tail",
    "error_from_tail",
    "find_run_dir",
    "launch_alive",
    "launch_state",
    "launches_path",
    "read_launches",
    "rgpu_dir",
]

CONSOLE_DIR = "console"
INSTALL_EXTRA = "rgpu-tui[train]"  # brings libreyolo, and torch with it
INSTALL_HINT = f"pip install '{INSTALL_EXTRA}'"
DEFAULT_NAME = "exp"  # libreyolo's own default
KILL_WAIT_S = 10.0  # after SIGKILL, how long to wait for the process to vanish
STOP_POLL_S = 0.2

FIELD_KEYS = ("model", "data", "epochs", "batch", "imgsz", "device", "project", "name")

# Run before libreyolo in the same process (execv keeps the pid): signals that
# the launcher ignores must not stay ignored in the trainer.
_TRAMPOLINE = (
    "import os,signal,sys\n"
    "for s in (signal.SIGINT,signal.SIGTERM):signal.signal(s,signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_SETMASK,())\n"
    "os.execv(sys.argv[1],sys.argv[1:])\n"
)


class LaunchError(ValueError):
    """A launch that cannot start; str(error) is one line to show the user."""


# -- the command ----------------------------------------------------------------


@dataclass(frozen=True)
class LaunchSpec:
    """What to train. Paths are absolute (make_spec resolves them)."""

    data: str
    project: str
    model: str = "LibreYOLO9s.pt"
    epochs: int = 100
    batch: int = -1
    imgsz: str = "640"
    device: str = "cpu"
    name: str = DEFAULT_NAME
    extra: tuple[str, ...] = ()  # literal argv items, after the fields


def default_device(gpu_count: int | None) -> str:
    """Every GPU NVML sees ("0,1,..."), or "cpu" when there is none."""
    if not gpu_count or gpu_count <= 0:
        return "cpu"
    return ",".join(str(i) for i in range(gpu_count))


def split_extra(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """Extra arguments as a shell would split them (no shell ever runs them)."""
    if text is None:
        return ()
    if not isinstance(text, str):
        return tuple(str(item) for item in text)
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # "No closing quotation"
        raise LaunchError(f"extra arguments: {str(exc).lower()}") from None


def arg_key(item: str) -> str | None:
    """The key of a `key=value` item (`--key value` style gives `key` too)."""
    if item.startswith("-"):
        return item.lstrip("-").split("=", 1)[0].replace("-", "_") or None
    if "=" in item:
        return item.split("=", 1)[0].strip().replace("-", "_") or None
    return None


def make_spec(
    data: str,
    project: str,
    *,
    settings=None,
    gpu_count: int | None = None,
    model: str | None = None,
    epochs: int | str | None = None,
    batch: int | str | None = None,
    imgsz: int | str | None = None,
    device: str | None = None,
    name: str | None = None,
    extra: str | Sequence[str] | None = None,
) -> LaunchSpec:
    """A checked LaunchSpec; raises LaunchError with one line saying what is wrong.

    Unset values take their defaults: model from settings.model, epochs 100,
    batch -1, imgsz 640, device from gpu_count, name "exp".
    """
    data = (data or "").strip()
    if not data:
        raise LaunchError("data: give the path of the dataset's data.yaml")
    data = os.path.abspath(os.path.expanduser(data))
    if not os.path.isfile(data):
        what = "is a directory, not a data.yaml" if os.path.isdir(data) else "does not exist"
        raise LaunchError(f"data: {data} {what}")
    project = (project or "").strip()
    if not project:
        raise LaunchError("project: give the runs root")
    project = os.path.abspath(os.path.expanduser(project))
    if os.path.exists(project) and not os.path.isdir(project):
        raise LaunchError(f"project: {project} is not a directory")
    default_model = getattr(settings, "model", None) or LaunchSpec.model
    model = (model or "").strip() if model is not None else default_model
    if not model:
        raise LaunchError("model: give a model name or a weights file")
    name = (name or "").strip() if name is not None else DEFAULT_NAME
    if not name or "/" in name or name in (".", ".."):
        raise LaunchError(f"name: {name!r} is not a directory name")
    device = (device or "").strip() if device is not None else default_device(gpu_count)
    if not device:
        raise LaunchError("device: give GPU indices such as 0,1 or cpu")
    spec = LaunchSpec(
        data=data,
        project=project,
        model=model,
        epochs=_int_field("epochs", epochs, 100, minimum=1),
        batch=_int_field("batch", batch, -1, minimum=-1),
        imgsz=_imgsz(imgsz),
        device=device,
        name=name,
        extra=split_extra(extra),
    )
    check_spec(spec)
    return spec


def _int_field(key: str, value, default: int, minimum: int) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise LaunchError(f"{key}: must be a whole number, got {value!r}") from None
    if key == "batch" and number == 0:
        raise LaunchError(f"batch: must be -1 (auto) or 1 or more, got {number}")
    if number < minimum:
        hint = " (-1 means auto)" if key == "batch" else ""
        raise LaunchError(f"{key}: must be {minimum} or more{hint}, got {number}")
    return number


def _imgsz(value) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return "640"
    text = str(value).strip().lower()
    if not re.fullmatch(r"[1-9]\d*(x[1-9]\d*)?", text):
        raise LaunchError(f"imgsz: must be a size such as 640 or 480x640, got {value!r}")
    return text


def check_spec(spec: LaunchSpec, environ: Mapping[str, str] | None = None) -> None:
    """Refuse what would go wrong or leak: keys given twice, stray words, the HF token."""
    seen = set()
    for item in spec.extra:
        if item.startswith("-"):  # `--help` would make libreyolo print and exit: "died"
            raise LaunchError(
                f"extra arguments: {item!r} is not a KEY=VALUE argument "
                "(libreyolo train takes KEY=VALUE only)"
            )
        key = arg_key(item)
        if key is None:
            raise LaunchError(f"extra arguments: {item!r} is not key=value")
        if key in FIELD_KEYS:
            raise LaunchError(f"extra arguments: {key} has its own field; set it there")
        if key in seen:
            raise LaunchError(f"extra arguments: {key} is given twice")
        seen.add(key)
    token = (os.environ if environ is None else environ).get("HF_TOKEN") or ""
    if len(token) >= 8 and any(token in item for item in build_argv(spec)):
        raise LaunchError(
            "the HF token must not be on the command line (everyone on the machine can read "
            "it there); the run gets it from the environment"
        )


def libreyolo_executable() -> str | None:
    """The `libreyolo` console script beside this Python, else on PATH; None if missing."""
    beside = os.path.join(os.path.dirname(sys.executable), "libreyolo")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("libreyolo")


def build_argv(spec: LaunchSpec, executable: str | None = None) -> list[str]:
    """The exact argv of the run: `libreyolo train key=value ...`."""
    exe = executable or libreyolo_executable() or "libreyolo"
    return [
        exe,
        "train",
        f"model={spec.model}",
        f"data={spec.data}",
        f"epochs={spec.epochs}",
        f"batch={spec.batch}",
        f"imgsz={spec.imgsz}",
        f"device={spec.device}",
        f"project={spec.project}",
        f"name={spec.name}",
        *spec.extra,
    ]


def display_command(argv: Sequence[str]) -> str:
    """The command as a shell would need it typed (for display only)."""
    return shlex.join(list(argv))


@dataclass(frozen=True)
class HfStatus:
    token_set: bool  # HF_TOKEN is set (its value is never shown or stored)
    home: str  # where HF_HOME points (the Hub cache)
    home_from_env: bool


def hf_status(environ: Mapping[str, str] | None = None) -> HfStatus:
    env = os.environ if environ is None else environ
    home = env.get("HF_HOME") or ""
    if home:
        return HfStatus(bool(env.get("HF_TOKEN")), os.path.expanduser(home), True)
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return HfStatus(bool(env.get("HF_TOKEN")), os.path.join(cache, "huggingface"), False)


def gpu_count_from_nvml() -> int:
    """How many GPUs NVML sees now (0 when NVML is unavailable); never raises."""
    try:
        from .gpu import GpuMonitor

        monitor = GpuMonitor()
        try:
            view = monitor.sample(time.time(), (), None)
        finally:
            monitor.close()
        return len(view.devices) if view.available else 0
    except Exception:
        return 0


# -- records --------------------------------------------------------------------
# (read by core.launch_records; what a launch writes is written here)


def append_line(path: str, obj: dict) -> None:
    """One complete JSON line (see core.records), in a file private to its owner (0600)."""
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
    (core.doctor.run_doctor).
    """
    check_spec(spec, env)
    exe = executable or libreyolo_executable()
    if exe is None:
        raise LaunchError(f"libreyolo is not installed for {sys.executable}: {INSTALL_HINT}")
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
    Raises LaunchError. Used by launch() and by core.resume.
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


# -- stopping ----------------------------------------------------------------------


@dataclass(frozen=True)
class StopResult:
    ok: bool  # the process has ended (or was not running)
    final_state: str | None  # failed / dead / completed ... as the run reads now
    signals_sent: tuple[str, ...] = ()  # "SIGINT", "SIGTERM", "SIGKILL"
    error: str | None = None
    target: str | None = None  # "process group 123" / "process 123"
    seconds: float = 0.0

    def to_json(self) -> dict:
        data = asdict(self)
        data["signals_sent"] = list(self.signals_sent)
        return data


ProgressFn = Callable[[str, "float | None"], None]


def _ended(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _send(target: Target, sig: int) -> tuple[bool, str | None]:
    """Send sig: (sent, why it could not be). A process that has ended is not signalled."""
    if _ended(target.proc):
        return False, None
    try:
        if target.group is not None:
            os.killpg(target.group, sig)
        else:
            target.proc.send_signal(sig)  # psutil re-checks the pid is the same process
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False, None
    except (PermissionError, psutil.AccessDenied):
        return False, f"not allowed to signal {target.label}"
    return True, None


def _escalate(
    target: Target,
    settings,
    on_progress: ProgressFn | None,
    sleep: Callable[[float], None],
    now: Callable[[], float],
) -> tuple[bool, tuple[str, ...], str | None, float]:
    term_after = float(getattr(settings, "stop_term_after", 30.0))
    kill_after = max(float(getattr(settings, "stop_kill_after", 60.0)), term_after)
    plan = [
        ("SIGINT", signal.SIGINT, 0.0),
        ("SIGTERM", signal.SIGTERM, term_after),
        ("SIGKILL", signal.SIGKILL, kill_after),
    ]
    sent: list[str] = []
    t0 = now()
    last_report = None

    def report(phase: str, left: float | None) -> None:
        nonlocal last_report
        key = (phase, None if left is None else math.ceil(left))
        if on_progress is not None and key != last_report:
            last_report = key
            try:
                on_progress(phase, left)
            except Exception:
                pass

    step = 0
    while True:
        if all(_ended(p) for p in target.waits):
            report("ended", None)
            return True, tuple(sent), None, now() - t0
        elapsed = now() - t0
        while step < len(plan) and elapsed >= plan[step][2]:
            label, sig, _ = plan[step]
            ok, problem = _send(target, sig)
            if problem:
                return False, tuple(sent), problem, now() - t0
            if ok:
                sent.append(label)
            step += 1
        if step < len(plan):
            report(plan[step - 1][0].lower(), max(plan[step][2] - elapsed, 0.0))
        else:
            if elapsed >= kill_after + KILL_WAIT_S:
                return (
                    False,
                    tuple(sent),
                    f"{target.label} is still alive {KILL_WAIT_S:.0f} s after SIGKILL "
                    "(stuck in the kernel, e.g. on a dead GPU or NFS)",
                    now() - t0,
                )
            report("sigkill", max(kill_after + KILL_WAIT_S - elapsed, 0.0))
        sleep(STOP_POLL_S)


def stop_run(
    run_dir: str,
    settings,
    on_progress: ProgressFn | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
) -> StopResult:
    """Stop the run in run_dir: SIGINT, SIGTERM after settings.stop_term_after s,
    SIGKILL after settings.stop_kill_after s. Blocks until the process has ended.

    on_progress(phase, seconds_left): phase "sigint" / "sigterm" (seconds until the
    next signal), "sigkill" (seconds left to wait), "ended" (None). Only a process
    that core.stop_target.verify accepts as the run is ever signalled.
    """
    st = read_status(run_dir)
    if st is None:
        return StopResult(False, None, error=f"{run_dir}: no readable status.json; nothing sent")
    state = st.get("state")
    pid = st.get("pid")
    started_at = parse_time(st.get("started_at"))
    if state != "running":
        return StopResult(True, str(state) if state else None, error=None)
    proc = verify(pid, started_at, _launched_create_time(run_dir, pid))
    if isinstance(proc, str):
        final = derive_state("running", check_pid(pid, started_at), None, None, now())
        if proc == GONE:  # it died without saying so: nothing left to stop
            return StopResult(True, final)
        return StopResult(False, final, error=f"not stopped: {proc}; nothing was signalled")
    target = stop_target(proc)
    ok, sent, error, seconds = _escalate(target, settings, on_progress, sleep, now)
    return StopResult(ok, _final_state(run_dir, now()), sent, error, target.label, seconds)


def _launched_create_time(run_dir: str, pid) -> float | None:
    """The exact start time recorded when we launched this pid, if we did."""
    project = os.path.dirname(os.path.abspath(run_dir))
    for record in reversed(read_launches(project)):
        if record.pid == pid and record.create_time is not None:
            if record.run_dir in (None, os.path.abspath(run_dir)):
                return record.create_time
    return None


def _final_state(run_dir: str, now: float) -> str | None:
    st = read_status(run_dir)
    if st is None:
        return None
    state = st.get("state") if isinstance(st.get("state"), str) else None
    pid = st.get("pid")
    pid_check = check_pid(pid, parse_time(st.get("started_at"))) if state == "running" else None
    return derive_state(state, pid_check, None, None, now)


def stop_launch(
    record: LaunchRecord,
    settings,
    on_progress: ProgressFn | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
) -> StopResult:
    """Stop a launch that has no status.json yet (state "starting"); as stop_run."""
    state = launch_state(record, now())
    if state.state == "started" and state.run_dir:
        return stop_run(state.run_dir, settings, on_progress, sleep, now)
    if state.state == "died":
        return StopResult(True, "died", error=None)
    proc = verify(record.pid, None, record.create_time)
    if proc == GONE:
        return StopResult(True, launch_state(record, now()).state)
    if isinstance(proc, str):
        return StopResult(False, None, error=f"not stopped: {proc}; nothing was signalled")
    target = stop_target(proc)
    ok, sent, error, seconds = _escalate(target, settings, on_progress, sleep, now)
    after = launch_state(record, now())
    final = _final_state(after.run_dir, now()) if after.run_dir else after.state
    return StopResult(ok, final, sent, error, target.label, seconds)


def records_to_json(items: Iterable[tuple[LaunchRecord, LaunchState]]) -> list[dict]:
    return [{**record.to_json(), "state": asdict(state)} for record, state in items]
