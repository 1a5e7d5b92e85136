"""Safe autostop: stop the machine once it idles, but never with weights that exist only here.

`rgpu-tui watch` (the act path; never a refresh, never the app) calls `Autostop.step(snap)`
after each refresh. The command (`autostop_command`, an argv list) may run only when every
weights file under the root is confirmed on the Hub now; any doubt holds it, with a reason
the user can act on (event `autostop_held`, repeated at most hourly):

- the root does not exist (said at the first refresh, whatever the machine does);
- a folder under the root could not be looked at (permission denied, too deep, too many
  folders: core.run.weights_finder);
- a weights file is not safe (core.hub.weights_safety: never pushed, changed since, a
  symlink out of the run, unreadable), or not known yet (being written, being hashed:
  then it waits);
- the Hub disagrees with pushes.jsonl (another file at the path, the path or repo gone, a
  token it refuses), or cannot be asked (no network, a 5xx or 429, HF_HUB_OFFLINE):
  `autostop_trust_records = true` lets the records stand in for the Hub then;
- an open app holds it (`a`, `--no-autostop`: core.records.autostop_files' hold).

"No runs found" is never "nothing to lose" unsaid: the countdown and the `autostop` event
name the root and say that no weights are under it. With `auto_push` on, unsafe weights are
pushed first (one push each per idle stretch, through a PushQueue) and checked again.

Each attempt asks the Hub afresh (an answer from an earlier attempt is not used). When all
holds, once the machine has idled `autostop_idle_minutes` by the one idle clock
(core.picture.idle, through the Snapshot's CostView):

- event `autostop` (the notify queue gets up to NOTIFY_WAIT_S to send it; the watcher
  refreshes often meanwhile: `wake_in`). Every refresh in that window looks again: the
  machine busy, an app's hold, the root, the weights (any file changed, added or not safe):
  any change cancels (event `autostop_held`, recorded "cancelled") and the idle time counts
  again from then;
- then the command, without a shell, with a timeout, its output captured
  (core.away.command, shared with notify_command); `$VAR` and `${VAR}` in its arguments are
  filled in from the environment (core.base.env_expand: an unset variable is an error, said
  once, and nothing runs);
- how it ended is recorded; a failure (exit status, timeout, cannot start) is event
  `autostop_failed` with its exit status and the last line it wrote, and the watcher goes
  on watching.

Once per idle stretch: after the command ran, nothing runs again until the machine has
been busy (a refresh that is not idle, or a run whose files changed since), or the machine
(container) was started again. The record (core.records.autostop_files) keeps that across a
restarted watcher: a watcher killed by the command itself (`shutdown -h now`) finds "started"
with no end, and counts that stretch as done. A failed command does not spend the stretch
for a restarted watcher (restarting it, perhaps with a fixed command, tries again).

The plan (counting down to a time, held and why, ran) is written for the app's countdown
line whenever it changes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..base.config import Settings
from ..base.env_expand import UnsetVariable, expand, variables
from ..base.formatting import fmt_duration, iso
from ..base.invocation import command
from ..hub.weights_safety import (
    OUTSIDE,
    PENDING,
    SAFE,
    TORN,
    UNCHECKABLE,
    UNSAFE,
    HubCheck,
    RunWeights,
    Survey,
    WeightsChecker,
)
from ..model.snapshot import Snapshot
from ..picture.cost import container_started_at
from ..records.autostop_files import AutostopFiles, own_start_time, someone_holds
from .autostop_text import (
    doubt_text,
    fired_what,
    held_text,
    hub_held_text,
    missing_root_text,
    scrub,
    summary,
    unreachable_text,
)
from .command import CommandResult, CommandRunner
from .events import Event, EventEngine, clean

AUTOSTOP_TIMEOUT_S = 300.0  # the command is killed after this long
HELD_REPEAT_S = 3600.0  # autostop_held is told again at most this often
NOTIFY_WAIT_S = 15.0  # the `autostop` notification gets this long to go out first
NOTIFY_LOOK_S = 0.5  # how often the watcher looks again while the notification goes out
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


@dataclass(frozen=True)
class _Notifying:
    """An attempt told (`autostop`), waiting for its notification before the command."""

    at: float
    until: float
    argv: list[str]
    evidence: frozenset  # the survey's files, versions and verdicts when it was told
    idle_s: float
    safe: list[RunWeights]
    hub: HubCheck


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
        drained: Callable[[], bool] | None = None,
        push_queue=None,
        say: Callable[[str], None] = lambda text: None,
        machine_started_at: float | None = None,
    ) -> None:
        why = enabled(settings)
        if why is not None:
            raise ValueError(why)
        self.settings = settings
        self.root = os.path.abspath(root)
        self.command = tuple(settings.autostop_command or ())
        self.limit_s = float(settings.autostop_idle_minutes or 0) * 60
        self.emit = emit
        self.engine = engine
        self.files = files or AutostopFiles.for_root(root)
        self.checker = checker or WeightsChecker()
        self.runner = runner or CommandRunner(AUTOSTOP_TIMEOUT_S, environ)
        self.token = token
        self.environ = os.environ if environ is None else environ
        self.drained = drained  # the notify queue is empty (None: no notifier)
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
        self._attempt: float | None = None  # this attempt began then (the Hub asked since)
        self._notifying: _Notifying | None = None
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

    def wake_in(self) -> float | None:
        """How soon the watcher should look again (its interval may be longer): often while
        the `autostop` notification goes out; None otherwise."""
        return NOTIFY_LOOK_S if self._notifying is not None else None

    def step(self, snap: Snapshot) -> None:
        now = snap.generated_at
        self._collect(now)
        if self._running:
            self._write_plan("running", now, message=f"running {shown_command(self.command)}")
            return
        if not os.path.isdir(self.root):  # never armed on a root that is not there
            self._cancel(now, f"{self.root} is gone")
            text = missing_root_text(self.root)
            self._held(now, text)
            self._write_plan("held", now, message=text)
            return
        cost = snap.cost
        stretch = cost.idle_now_seconds if cost is not None else None
        if stretch is None:  # busy (or not known): a new stretch starts when it idles
            self._cancel(now, "the machine became busy")
            self._rearm(now, "the machine was busy")
            self._held(now, None)
            self._count_from, self._held_by_app, self._attempt = None, False, None
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
            self._cancel(now, "an rgpu-tui app cancelled it (`a`)")
            self._held_by_app, self._count_from, self._attempt = True, None, None
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
        left = self.limit_s - idle_s
        if left > 0 and self._notifying is None:
            survey = self.checker.survey(self.root, snap.runs, now, fresh=False)
            self._attempt = None
            self._held(now, None)
            self._write_plan("counting", now, fires_at=now + left, message=summary(survey))
            return
        if self._notifying is not None:
            self._notify_step(now, self.checker.survey(self.root, snap.runs, now))
            return
        # the walk of up to SURVEY_EVERY_S ago while it holds; a whole walk before it tells
        survey = self.checker.survey(self.root, snap.runs, now, fresh=False)
        self._due(now, idle_s, survey, snap)

    def _due(self, now: float, idle_s: float, survey: Survey, snap: Snapshot) -> None:
        """Idle long enough: hold, push, wait for a check, or tell and run the command."""
        if self._attempt is None:
            self._attempt = now  # the Hub is asked afresh for this attempt
        if survey.doubts:
            self._hold(now, doubt_text(survey))
            return
        weights = survey.weights
        unsafe = [w for w in weights if w.verdict in UNSAFE]
        if unsafe and self.settings.auto_push != "off":
            self._auto_push(unsafe)
            if self.pushing():
                names = ", ".join(w.label for w in unsafe[:NAMED_RUNS])
                self._write_plan("pushing", now, message=f"pushing {names} first (auto_push)")
                return
        if unsafe:
            self._hold(now, held_text(unsafe, self.settings.auto_push != "off"))
            return
        pending = [w for w in weights if w.verdict in PENDING]
        if pending:  # not known yet: wait (a held condition stays as it was)
            self._write_plan("checking", now, message=summary(survey))
            return
        safe = [w for w in weights if w.verdict == SAFE]
        hub = self.checker.hub_check(safe, now, self._attempt) if safe else HubCheck(now, (), None)
        if hub is None:
            self._write_plan("checking", now, message="asking the Hub for the pushed files")
            return
        if hub.bad:
            self._hold(now, hub_held_text(hub))
            return
        if hub.unreachable and not self.settings.autostop_trust_records:
            self._hold(now, unreachable_text(hub))
            return
        fresh = self.checker.survey(self.root, snap.runs, now)  # a whole walk, now
        if fresh.doubts or fresh.keys() != survey.keys():  # judged again at the next look
            self._write_plan("checking", now, message=summary(fresh))
            return
        self._notify(now, idle_s, fresh, safe, hub)

    def _hold(self, now: float, text: str) -> None:
        self._held(now, text)
        self._write_plan("held", now, message=text)

    # -- acting ------------------------------------------------------------------------

    def _notify(
        self, now: float, idle_s: float, survey: Survey, safe: list[RunWeights], hub: HubCheck
    ) -> None:
        """Everything holds: tell (`autostop`), then run once the notification went out and
        a look at everything again finds it unchanged (`_notify_step`)."""
        self._held(now, None)
        try:
            argv = expand(self.command, self.environ)
        except UnsetVariable as exc:
            self._spent_at, self._outcome = now, "failed"
            self._outcome_text = f"autostop_command not run: {exc}"
            self._record({"at": iso(now), "event": "not_run", "error": str(exc)})
            self._event(
                now,
                "autostop_failed",
                f"autostop_command not run: {exc} in the watcher's environment; set it and "
                f"restart `{command()} watch` (the machine stays up)",
            )
            self._write_plan("failed", now, message=self._outcome_text)
            return
        trusted = bool(self.settings.autostop_trust_records)
        text = (
            f"machine idle for {fmt_duration(idle_s)} and {fired_what(survey, safe, hub, trusted)}"
            f": running autostop_command ({shown_command(self.command)})"
        )
        self._event(now, "autostop", text)
        self._notifying = _Notifying(
            now, now + NOTIFY_WAIT_S, argv, survey.keys(), idle_s, safe, hub
        )
        self._notify_step(now, survey)

    def _notify_step(self, now: float, survey: Survey) -> None:
        """While the notification goes out: anything changed cancels; once it went out (or
        NOTIFY_WAIT_S passed), the command runs."""
        pending = self._notifying
        if pending is None:  # pragma: no cover (called only while notifying)
            return
        why = _changed(survey, pending.evidence)
        if why is not None:
            self._cancel(now, why)
            return
        drained = self.drained is None or _ask(self.drained)
        if not drained and now < pending.until:
            self._write_plan("notifying", now, message="telling you first (notify_command)")
            return
        self._notifying = None
        self._start(now, pending)

    def _cancel(self, now: float, why: str) -> None:
        """An attempt told but not run: cancelled, said and recorded; the idle time counts
        again from now."""
        if self._notifying is None:
            return
        self._notifying, self._attempt = None, None
        self._count_from = now
        self._record({"at": iso(now), "event": "cancelled", "why": why})
        text = (
            f"autostop cancelled before its command ran: {why}; the machine stays up, and "
            f"autostop counts {fmt_duration(self.limit_s)} of idle time again from now"
        )
        self._event(now, "autostop_held", text)
        self._write_plan("counting", now, fires_at=now + self.limit_s, message=text)

    def _start(self, now: float, pending: _Notifying) -> None:
        self._spent_at, self._outcome = now, "failed"
        hub = pending.hub
        self._record(
            {
                "at": iso(now),
                "event": "started",
                "command": [scrub(arg, self.token) for arg in self.command],
                "idle_seconds": round(pending.idle_s, 1),
                "hub": "unreachable: " + hub.unreachable + " (records trusted)"
                if hub.unreachable
                else "checked",
                "weights": [
                    {
                        "run": w.run_dir,
                        "file": w.file,
                        "sha256": w.sha256,
                        "repo": (w.record or {}).get("repo"),
                        "path": (w.record or {}).get("path"),
                    }
                    for w in pending.safe
                ],
            }
        )
        self._spent_recorded = True
        self._running = True
        self._outcome_text = f"running {shown_command(self.command)}"
        self._write_plan("running", now, message=self._outcome_text)
        self._thread = threading.Thread(
            target=self._run, args=(now, pending.argv), name="rgpu-autostop", daemon=True
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
            if w.verdict in (OUTSIDE, UNCHECKABLE, TORN) or key in self._pushed:
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
        """What to say when the watcher starts: a root that is not there, variables the
        command needs that are unset."""
        out = []
        if not os.path.isdir(self.root):
            out.append(
                f"autostop not armed: {self.root} does not exist (a typo, or started from "
                "another folder?): autostop holds until it does"
            )
        missing = [name for name in variables(self.command) if not self.environ.get(name)]
        if missing:
            names = ", ".join(f"${n}" for n in missing)
            out.append(f"autostop_command needs {names}, not set here: autostop would fail")
        return out

    def close(self) -> None:
        """The watcher ends: the check worker stops, a push in flight is left (as the app
        does), a command in flight goes on in its own session."""
        self.checker.close()
        if self._queue is not None:
            self._queue.close(timeout=0)


def _changed(survey: Survey, evidence: frozenset) -> str | None:
    """Why the weights under the root are not what they were when `autostop` was told."""
    if survey.doubts:
        return f"cannot check everything under {survey.root} now: {survey.doubts[0]}"
    now = survey.keys()
    if now == evidence:
        return None
    new = sorted(now - evidence, key=str)
    if new:
        run_dir, file = new[0][0], new[0][1]
        name = next((w.name for w in survey.weights if w.run_dir == run_dir), run_dir)
        return f"{name} {file} changed or appeared"
    run_dir, file = sorted(evidence - now, key=str)[0][:2]
    return f"{os.path.basename(run_dir)} {file} is gone or changed"


def _ask(drained: Callable[[], bool]) -> bool:
    try:
        return bool(drained())
    except Exception:  # a notifier that cannot say: do not wait on it
        return True


def _seconds(text) -> float | None:
    from ..base.values import parse_time

    return parse_time(text) if isinstance(text, str) else None
