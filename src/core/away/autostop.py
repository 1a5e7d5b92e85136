"""Safe autostop: stop the machine once it idles, but never with weights that exist only here.

`rgpu-tui watch` (the act path; never a refresh, never the app) calls `Autostop.step(snap)`
after each refresh. The command (`autostop_command`, an argv list) runs once the machine has
been idle `autostop_idle_minutes` by the one idle clock (core.picture.idle, through the Snapshot's
CostView: no run running, every GPU under 5%) and every run's newest weights are safe
(core.hub.weights_safety: the sha256 on disk is the one its last successful push recorded, and
the Hub has that file at that path when it can be asked). Then:

- event `autostop` (before the command runs, so the notification can go out: the
  notify queue gets NOTIFY_WAIT_S to drain), the command runs without a shell, with a
  timeout, its output captured (core.away.command, shared with notify_command); `$VAR` and
  `${VAR}` in its arguments are filled in from the environment then (core.base.env_expand: an
  unset variable is an error, said once, and nothing runs);
- how it ended is recorded; a failure (exit status, timeout, cannot start) is event
  `autostop_failed` with its exit status and the last line it wrote, and the watcher
  goes on watching.

Once per idle stretch: after the command ran, nothing runs again until the machine has
been busy (a refresh that is not idle, or a run whose files changed since), or the machine
(container) was started again. The record (core.records.autostop_files) keeps that across a
restarted watcher: a watcher killed by the command itself (`shutdown -h now`) finds "started"
with no end, and counts that stretch as done. A failed command does not spend the stretch
for a restarted watcher (restarting it, perhaps with a fixed command, tries again).

When some run's weights are not safe the command does not run: event `autostop_held`
naming them and what to do, repeated at most hourly (EventEngine.condition). With
`auto_push` on, they are pushed first (one push each per idle stretch, through a
PushQueue); the check is made again when the pushes are done. A run with no weights never
holds it; an open app that cancelled it (`a`, or `--no-autostop`: core.records.autostop_files'
hold) holds it too, and after the app lets go the idle time is counted again from then.

The plan (counting down to a time, held and why, ran) is written for the app's countdown
line whenever it changes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping

from ..base.config import Settings
from ..base.env_expand import UnsetVariable, expand, variables
from ..base.formatting import fmt_duration, iso
from ..hub.weights_safety import (
    HASHING,
    OUTSIDE,
    PENDING,
    SAFE,
    UNSAFE,
    HubCheck,
    RunWeights,
    WeightsChecker,
)
from ..model.snapshot import Snapshot
from ..picture.cost import container_started_at
from ..records.autostop_files import AutostopFiles, own_start_time, someone_holds
from ..run.tail import redact
from .command import CommandResult, CommandRunner
from .events import Event, EventEngine, clean

AUTOSTOP_TIMEOUT_S = 300.0  # the command is killed after this long
HELD_REPEAT_S = 3600.0  # autostop_held is told again at most this often
NOTIFY_WAIT_S = 15.0  # the `autostop` notification gets this long to go out first
FIRES_AT_SLACK_S = 2.0  # the plan is rewritten when the countdown's end moves more
NAMED_RUNS = 3  # runs named in one message; the rest are counted


def enabled(settings: Settings) -> str | None:
    """None when autostop is on; else why it is off (one line)."""
    if not settings.autostop_command:
        return "autostop off (no autostop_command)"
    if settings.autostop_idle_minutes is None:
        return "autostop off: autostop_command is set but autostop_idle_minutes is not"
    return None


def shown_command(argv) -> str:
    """The command as the config holds it ($VAR not filled in: a value may be a secret)."""
    return " ".join(argv)


class Autostop:
    """One per watcher. `step` is called from the watcher's loop, one refresh at a time;
    events go out through `emit` (printed and notified by the watcher)."""

    def __init__(
        self,
        settings: Settings,
        root: str,
        emit: Callable[[Event], None],
        *,
        engine: EventEngine,
        files: AutostopFiles | None = None,
        checker: WeightsChecker | None = None,
        runner: CommandRunner | None = None,
        token: str | None = None,
        environ: Mapping[str, str] | None = None,
        drain: Callable[[float], object] | None = None,
        push_queue=None,
        say: Callable[[str], None] = lambda text: None,
        machine_started_at: float | None = None,
    ) -> None:
        why = enabled(settings)
        if why is not None:
            raise ValueError(why)
        self.settings = settings
        self.command = tuple(settings.autostop_command or ())
        self.limit_s = float(settings.autostop_idle_minutes or 0) * 60
        self.emit = emit
        self.engine = engine
        self.files = files or AutostopFiles.for_root(root)
        self.checker = checker or WeightsChecker()
        self.runner = runner or CommandRunner(AUTOSTOP_TIMEOUT_S, environ)
        self.token = token
        self.environ = os.environ if environ is None else environ
        self.drain = drain
        self.say = say
        self._queue = push_queue
        self._lock = threading.Lock()
        self._done: list[tuple[float, CommandResult]] = []
        self._running = False
        self._thread: threading.Thread | None = None
        self._spent_at: float | None = None  # this stretch's command started then
        self._spent_recorded = False  # a restarted watcher would read the stretch as spent
        self._from_record = False  # the spent stretch is one an earlier watcher recorded
        self._outcome: str | None = None  # "ran" | "failed": how this stretch's attempt ended
        self._outcome_text = ""
        self._held_by_app = False
        self._count_from: float | None = None  # idle counted from here (a hold ended)
        self._pushed: set = set()  # (run_dir, file, FileKey) auto-pushed this stretch
        self._plan: dict | None = None
        self.phase = "busy"  # what the plan says now: busy, counting, held, running, ran...
        self._write_problem: str | None = None
        self._pid = os.getpid()
        self._pid_started = own_start_time()
        started = container_started_at() if machine_started_at is None else machine_started_at
        self._machine_started_at = started[0] if isinstance(started, tuple) else started
        self._load()

    # -- what a restarted watcher knows ------------------------------------------------

    def _load(self) -> None:
        started = spent = None
        for rec in self.files.records():
            what, at = rec.get("event"), _seconds(rec.get("at"))
            if what == "started" and at is not None:
                started, spent = at, None
            elif what == "finished":
                if started is not None and rec.get("ok") is True:
                    spent = started
                started = None
            elif what == "rearmed":
                started = spent = None
        spent = started if started is not None else spent  # killed by its own command
        if spent is None:
            return
        self._spent_at, self._spent_recorded, self._from_record = spent, True, True
        self._outcome, self._outcome_text = "ran", f"autostop ran at {iso(spent)}"
        machine = self._machine_started_at
        if machine is not None and machine > spent:
            self._rearm(machine, "the machine was started again")

    # -- one refresh -------------------------------------------------------------------

    def step(self, snap: Snapshot) -> None:
        now = snap.generated_at
        self._collect(now)
        if self._running:
            self._write_plan("running", now, message=f"running {shown_command(self.command)}")
            return
        cost = snap.cost
        stretch = cost.idle_now_seconds if cost is not None else None
        if stretch is None:  # busy (or not known): a new stretch starts when it idles
            self._rearm(now, "the machine was busy")
            self._held(now, None)
            self._count_from, self._held_by_app = None, False
            self._pushed.clear()
            self._write_plan("busy", now)
            return
        if self._spent_at is not None and self._from_record:
            # what happened while no watcher looked: a run that changed since means the
            # machine was busy (this watcher's own refreshes tell it otherwise)
            changed = [r.name for r in snap.runs if r.activity > self._spent_at + 1.0]
            if changed:
                self._rearm(now, f"{changed[0]} changed since")
        if self._spent_at is not None:
            self._held(now, None)
            self._write_plan(self._outcome or "ran", now, message=self._outcome_text)
            return
        if someone_holds(self.files.hold):
            self._held_by_app, self._count_from = True, None
            text = (
                "autostop is held by an open rgpu-tui app (`a` there, or --no-autostop): "
                "the machine stays up while it runs"
            )
            self._held(now, text)
            self._write_plan("held_by_app", now, message=text)
            return
        if self._held_by_app:  # the app let go: the idle time counts from now
            self._held_by_app, self._count_from = False, now
        idle_s = stretch if self._count_from is None else min(stretch, now - self._count_from)
        weights = self.checker.check(snap.runs, now)
        left = self.limit_s - idle_s
        if left > 0:
            self._held(now, None)
            self._write_plan("counting", now, fires_at=now + left, message=summary(weights))
            return
        self._due(now, idle_s, weights)

    def _due(self, now: float, idle_s: float, weights: list[RunWeights]) -> None:
        """Idle long enough: push, hold, wait for a check, or run the command."""
        unsafe = [w for w in weights if w.verdict in UNSAFE]
        if unsafe and self.settings.auto_push != "off":
            self._auto_push(unsafe)
            if self.pushing():
                names = ", ".join(w.label for w in unsafe[:NAMED_RUNS])
                self._write_plan("pushing", now, message=f"pushing {names} first (auto_push)")
                return
        if unsafe:
            text = held_text(unsafe, self.settings.auto_push != "off")
            self._held(now, text)
            self._write_plan("held", now, message=text)
            return
        pending = [w for w in weights if w.verdict in PENDING]
        if pending:  # not known yet: wait (a held condition stays as it was)
            self._write_plan("checking", now, message=summary(weights))
            return
        safe = [w for w in weights if w.verdict == SAFE]
        hub = self.checker.hub_check(safe, now) if safe else HubCheck(now, (), None)
        if hub is None:
            self._write_plan("checking", now, message="asking the Hub for the pushed files")
            return
        if hub.bad:
            text = hub_held_text(hub)
            self._held(now, text)
            self._write_plan("held", now, message=text)
            return
        self._fire(now, idle_s, safe, hub)

    # -- acting ------------------------------------------------------------------------

    def _fire(self, now: float, idle_s: float, safe: list[RunWeights], hub: HubCheck) -> None:
        self._held(now, None)
        self._spent_at, self._outcome = now, "failed"
        try:
            argv = expand(self.command, self.environ)
        except UnsetVariable as exc:
            self._outcome_text = f"autostop_command not run: {exc}"
            self._record({"at": iso(now), "event": "not_run", "error": str(exc)})
            self._event(
                now,
                "autostop_failed",
                f"autostop_command not run: {exc} in the watcher's environment; set it and "
                "restart `rgpu-tui watch` (the machine stays up)",
            )
            self._write_plan("failed", now, message=self._outcome_text)
            return
        if not safe:
            what = "no run has weights to lose"
        else:
            what = f"all weights on the Hub ({', '.join(w.label for w in safe[:NAMED_RUNS])}"
            more = len(safe) - NAMED_RUNS
            what += f" and {more} more)" if more > 0 else ")"
            if hub.unreachable:
                what += f"; the Hub could not be asked ({hub.unreachable}): pushes.jsonl trusted"
            else:
                what += ", checked on the Hub"
        text = (
            f"machine idle for {fmt_duration(idle_s)} and {what}: running autostop_command "
            f"({shown_command(self.command)})"
        )
        self._record(
            {
                "at": iso(now),
                "event": "started",
                "command": [scrub(arg, self.token) for arg in self.command],
                "idle_seconds": round(idle_s, 1),
                "hub": "unreachable: " + hub.unreachable if hub.unreachable else "checked",
                "weights": [
                    {
                        "run": w.run_dir,
                        "file": w.file,
                        "sha256": w.sha256,
                        "repo": (w.record or {}).get("repo"),
                        "path": (w.record or {}).get("path"),
                    }
                    for w in safe
                ],
            }
        )
        self._spent_recorded = True
        self._running = True
        self._outcome_text = f"running {shown_command(self.command)}"
        self._event(now, "autostop", text)
        self._write_plan("running", now, message=self._outcome_text)
        self._thread = threading.Thread(
            target=self._run, args=(now, argv), name="rgpu-autostop", daemon=True
        )
        self._thread.start()

    def wait_command(self, timeout: float) -> bool:
        """Wait up to `timeout` for a command in flight to end (its end is taken in at the
        next `step`); True when none is in flight."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _run(self, started: float, argv: list[str]) -> None:
        if self.drain is not None:
            try:
                self.drain(NOTIFY_WAIT_S)  # the `autostop` notification goes out first
            except Exception:
                pass
        try:
            result = self.runner.run(argv)
        except Exception as exc:  # the runner never raises; a bug must not hide the end
            result = CommandResult(None, f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._done.append((started, result))

    def _collect(self, now: float) -> None:
        """The command's end, once it came: recorded, and told when it failed."""
        with self._lock:
            done, self._done = self._done, []
        for started, result in done:
            self._running = False
            tail = result.tail(self.token)
            self._record(
                {
                    "at": iso(now),
                    "event": "finished",
                    "started": iso(started),
                    "ok": result.ok,
                    "returncode": result.returncode,
                    "error": result.problem,
                    "tail": tail,
                }
            )
            if result.ok:
                self._outcome = "ran"
                self._outcome_text = f"autostop ran at {iso(started)} (exit status 0)"
                self.say(f"autostop_command {result.describe(self.token)}")
                continue
            self._spent_recorded = False  # a restarted watcher tries again
            self._outcome = "failed"
            self._outcome_text = f"autostop_command failed: {result.describe(self.token)}"
            self._event(
                now,
                "autostop_failed",
                f"{self._outcome_text}; the machine is still up: autostop runs again after "
                "the machine has been busy and idle again, or when `rgpu-tui watch` restarts",
            )

    def _rearm(self, now: float, why: str) -> None:
        if self._spent_at is None or self._running:
            return
        if self._spent_recorded:
            self._record({"at": iso(now), "event": "rearmed", "why": why})
        self._spent_at, self._spent_recorded, self._from_record = None, False, False
        self._outcome, self._outcome_text = None, ""

    def pushing(self) -> bool:
        """Whether auto-pushes asked for by autostop are queued or in flight."""
        return self._queue is not None and self._queue.busy()

    def _auto_push(self, unsafe: list[RunWeights]) -> None:
        from ..hub.push import PushRequest
        from ..hub.push_queue import PushQueue

        for w in unsafe:
            key = (w.run_dir, w.file, w.key)
            if w.verdict == OUTSIDE or key in self._pushed:
                continue
            self._pushed.add(key)
            if self._queue is None:
                self._queue = PushQueue(self.settings, lambda event: None)
            self.say(f"autostop: pushing {w.label} first (auto_push)")
            self._queue.submit(PushRequest(w.run_dir, w.file))

    # -- telling -----------------------------------------------------------------------

    def _held(self, now: float, text: str | None) -> None:
        event = self.engine.condition(
            "autostop_held", text is not None, now, text or "", repeat_after=HELD_REPEAT_S
        )
        if event is not None:
            self.emit(event)

    def _event(self, now: float, name: str, text: str) -> None:
        self.emit(Event(at=now, event=name, run=None, message=clean(text, self.token)))

    def _record(self, record: dict) -> None:
        try:
            self.files.append(record)
        except (OSError, ValueError) as exc:
            self._problem(f"cannot write {self.files.record}: {getattr(exc, 'strerror', exc)}")

    def _write_plan(
        self, phase: str, now: float, *, fires_at: float | None = None, message: str = ""
    ) -> None:
        self.phase = phase
        plan = {
            "pid": self._pid,
            "pid_started": self._pid_started,
            "phase": phase,
            "fires_at": round(fires_at) if fires_at is not None else None,
            "message": clean(message, self.token),
            "command": clean(shown_command(self.command), self.token),
            "idle_minutes": self.settings.autostop_idle_minutes,
        }
        old = self._plan
        if old is not None and {**old, "fires_at": None} == {**plan, "fires_at": None}:
            a, b = old.get("fires_at"), plan["fires_at"]
            if a == b or (a is not None and b is not None and abs(a - b) <= FIRES_AT_SLACK_S):
                return
        try:
            self.files.write_plan({**plan, "written_at": now})
        except (OSError, ValueError) as exc:
            self._problem(f"cannot write {self.files.plan}: {getattr(exc, 'strerror', exc)}")
            return
        self._plan = plan

    def _problem(self, text: str) -> None:
        if text != self._write_problem:
            self._write_problem = text
            self.say(text)

    def warnings(self) -> list[str]:
        """What to say when the watcher starts: variables the command needs that are unset."""
        missing = [name for name in variables(self.command) if not self.environ.get(name)]
        if not missing:
            return []
        names = ", ".join(f"${n}" for n in missing)
        return [f"autostop_command needs {names}, not set here: autostop would fail"]

    def close(self) -> None:
        """The watcher ends: the check worker stops, a push in flight is left (as the app
        does), a command in flight goes on in its own session."""
        self.checker.close()
        if self._queue is not None:
            self._queue.close(timeout=0)


# -- the messages ----------------------------------------------------------------------


def summary(weights: list[RunWeights]) -> str:
    """What the countdown line says of the weights now."""
    if not weights:
        return "no run has weights to lose"
    unsafe = [w for w in weights if w.verdict in UNSAFE]
    if unsafe:
        first = unsafe[0]
        more = f" (+{len(unsafe) - 1} more)" if len(unsafe) > 1 else ""
        return f"{first.name}: {first.detail}{more}: push it (p) or autostop holds"
    pending = [w for w in weights if w.verdict in PENDING]
    if pending:
        first = pending[0]
        verb = "hashing" if first.verdict == HASHING else "waiting for"
        return f"{verb} {first.label} to check it is on the Hub"
    return "all weights on the Hub"


def held_text(unsafe: list[RunWeights], auto_push: bool) -> str:
    parts = [f"{w.name}: {w.detail}" for w in unsafe[:NAMED_RUNS]]
    if len(unsafe) > NAMED_RUNS:
        parts.append(f"{len(unsafe) - NAMED_RUNS} more")
    failed = next((w for w in unsafe if w.last_error), None)
    how = "`p` in the app, or `rgpu-tui push " + unsafe[0].run_dir + "`"
    text = f"autostop held: {'; '.join(parts)}: push {'it' if len(unsafe) == 1 else 'them'} ({how})"
    if failed is not None:
        text += f"; the last push failed: {failed.last_error}"
    elif auto_push:
        text += "; auto_push tried once this idle stretch"
    return text


def hub_held_text(hub: HubCheck) -> str:
    bad = hub.bad
    parts = [f"{f.weights.label}: {f.detail}" for f in bad[:NAMED_RUNS]]
    if len(bad) > NAMED_RUNS:
        parts.append(f"{len(bad) - NAMED_RUNS} more")
    run_dir = bad[0].weights.run_dir
    return (
        f"autostop held: pushes.jsonl says pushed, but the Hub disagrees: {'; '.join(parts)}: "
        f"push again (`rgpu-tui push {run_dir} --force`)"
    )


def scrub(text: str, token: str | None) -> str:
    """`text` with the token (and anything shaped like one) replaced: what goes in a record."""
    return redact(text.replace(token, "***") if token else text)


def _seconds(text) -> float | None:
    from ..base.values import parse_time

    return parse_time(text) if isinstance(text, str) else None
