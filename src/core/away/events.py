"""Events: what changed since the last look that someone away from the screen should hear.

`EventEngine.observe(snapshot)` compares a Snapshot with what it has already reported and
returns the new events, each once per occurrence. `rgpu-tui watch` prints them and hands
them to the notify command (core.away.notify), keeping the engine's state in a file
(core.records.event_state) so a restarted watcher repeats nothing; the app shows them as notices
from an engine of its own that keeps its state in memory.

What one occurrence is:

- A run's events come from its state changing (core.picture.watch derives it): `run_started`
  (to running), `run_done` (completed), `run_failed` (failed; also a launch that died before
  its status.json), `run_dead` (status.json says running, its process is gone),
  `run_stalled` (alive, no status update for too long). A new attempt, told by a new pid in
  status.json (a resume), is a new occurrence even in the same state: a run that dies, is
  resumed and dies again is two `run_dead`, also when the watcher was down in between.
  `unknown` (a status.json being rewritten, unreadable for a moment) changes nothing, so a
  flicker never reports a run twice; stalled -> running is a recovery, not a new start.
- `new_best` (only with notify_new_best): a run's best epoch or metric changed.
- `push_failed`: a new record with outcome "error" in a run's .rgpu/pushes.jsonl (read
  incrementally, from the offset the watcher kept).
- Machine conditions are occurrences from when they begin to when they end: `idle` (the
  idle banner's rule: no run running and every GPU under 5% for idle_minutes), `disk_low`
  (the SystemView's disk rules: under 10% free, less than twice the largest checkpoint
  free, full within 24 h at the current rate), `balance_low` (the balance has run out,
  runs out before a running run's ETA, or in under 2 h). disk_low and balance_low end
  only after CLEAR_AFTER_S without the condition, so a disk hovering at the line is
  reported once, not at every crossing.
- `autostop_held` and `autostop` are reserved for the autostop part: it reports them
  through `condition()`, which also repeats a held condition at most every
  `repeat_after` seconds.

The first look: a watcher started on a root for the first time (no state file) reports
the bad states that hold now and are recent: dead, failed and stalled runs whose files
changed within FIRST_LOOK_S (24 h), and the machine conditions; it does not report runs
completed or started before it came, pushes made before it came, or week-old deaths.
Runs that appear later are news when they are running or stalled, or when their files
changed after the watcher's previous look (a run that finished while it was down). The
app's engine (`first_look=False`) reports nothing about what it finds at start (the screen
shows it), only what changes while it runs.

Every message is one printable line (core.base.text.printable) with anything shaped like a Hugging
Face token, the token itself when given, and URL credentials removed; at most MESSAGE_CHARS.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..base.config import Settings
from ..base.formatting import fmt_bytes, fmt_duration, fmt_money, fmt_number, fmt_rate, iso
from ..base.safeio import open_regular
from ..base.text import printable
from ..base.urls import strip_userinfo
from ..base.values import TIMES, checked, parse_json
from ..machine.system import CHECKPOINT_FACTOR, DISK_FULL_FRACTION, FULL_IN_WARN_HOURS
from ..model.snapshot import RunInfo, Snapshot
from ..records.launch_records import launched_for
from ..render.snapshot_text import epoch_text
from ..run.tail import redact

STATE_VERSION = 1
FIRST_LOOK_S = 24 * 3600.0  # a first start reports bad states of runs active this recently
CLEAR_AFTER_S = 600.0  # disk_low / balance_low end after this long without the condition
BALANCE_LOW_S = 2 * 3600.0  # the balance running out sooner than this is balance_low
RUN_FORGET_S = 7 * 86400.0  # a run gone from disk this long is forgotten
MAX_RUNS_KEPT = 10_000  # runs gone from disk are forgotten past this many entries
MESSAGE_CHARS = 400
PUSHES_READ_MAX = 1024 * 1024  # new bytes of one pushes.jsonl read at one refresh, at most

RUN_EVENTS = {
    "running": "run_started",
    "completed": "run_done",
    "failed": "run_failed",
    "stopped": "run_stopped",
    "dead": "run_dead",
    "stalled": "run_stalled",
}
EVENT_NAMES = (
    "run_started",
    "run_done",
    "run_failed",
    "run_stopped",
    "run_dead",
    "run_stalled",
    "new_best",
    "idle",
    "disk_low",
    "balance_low",
    "push_failed",
    "autostop_held",
    "autostop",
    "autostop_failed",
    "notify_failed",
)
# the states a first look reports (bad ones that need someone)
_FIRST_LOOK_STATES = ("dead", "failed", "stalled")
# a state that says nothing (a status.json being rewritten, unreadable for a moment): kept
# out of the record, so a flicker through it is no news
_NO_STATE = "unknown"


def clean(text: object, token: str | None = None) -> str:
    """One printable line with no token (the given one, or anything shaped like one) and no
    URL credentials, at most MESSAGE_CHARS characters."""
    text = "" if text is None else str(text)
    if token:
        text = text.replace(token, "***")
    text = " ".join(printable(redact(strip_userinfo(text))).split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


@dataclass(frozen=True)
class Event:
    at: float  # epoch seconds
    event: str  # one of EVENT_NAMES
    run: str | None  # the run directory (a token in it replaced), or None for the machine
    message: str  # one printable line

    def to_json(self) -> dict:
        return {"at": iso(self.at), "event": self.event, "run": self.run, "message": self.message}

    def to_text(self) -> str:
        return f"{iso(self.at)} {self.event} {self.message}"


class EventEngine:
    """Turns Snapshots into events, each once per occurrence (see the module's doc).

    `state` is what `state()` returned before (loaded from the watcher's file); None is a
    first start. `first_look`: report the bad states found at a first start. `pushes`: read
    every run's pushes.jsonl for push_failed (one stat per run and refresh). Not
    thread-safe: one caller, one refresh at a time."""

    def __init__(
        self,
        settings: Settings | None = None,
        state: dict | None = None,
        *,
        first_look: bool = True,
        pushes: bool = True,
        token: str | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.first_look = first_look
        self.pushes = pushes
        self.token = token
        self.dirty = False  # the state changed since `state()` was last taken
        self._runs: dict[str, dict] = {}
        self._conditions: dict[str, dict] = {}
        self._seen_until: float | None = None  # the last look, from any earlier process
        self._load(state)

    # -- the state -----------------------------------------------------------------

    def _load(self, state: dict | None) -> None:
        """Take what `state` holds, each entry checked (a damaged file loses entries,
        never raises)."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            return
        self._seen_until = _time(state.get("seen_until"))
        runs = state.get("runs")
        if isinstance(runs, dict):  # every entry (the state file's size bounds them)
            for run_dir, rec in runs.items():
                rec = _run_record(rec)
                if isinstance(run_dir, str) and rec is not None:
                    self._runs[run_dir] = rec
        conditions = state.get("conditions")
        if isinstance(conditions, dict):
            for name, cond in conditions.items():
                reported = _time(cond.get("reported_at")) if isinstance(cond, dict) else None
                if name in EVENT_NAMES and reported is not None:
                    self._conditions[name] = {
                        "reported_at": reported,
                        "clear_since": _time(cond.get("clear_since")),
                    }

    def state(self) -> dict:
        """What a restarted watcher needs (JSON-serialisable); clears `dirty`."""
        self.dirty = False
        return {
            "version": STATE_VERSION,
            "seen_until": self._seen_until,
            "runs": {k: dict(v) for k, v in self._runs.items()},
            "conditions": {k: dict(v) for k, v in self._conditions.items()},
        }

    @property
    def seen_until(self) -> float | None:
        return self._seen_until

    # -- one look --------------------------------------------------------------------

    def observe(self, snap: Snapshot) -> list[Event]:
        """The events `snap` holds that were not reported yet."""
        now = snap.generated_at
        first = self._seen_until is None  # never looked at this root before
        events: list[Event] = []
        present = set()
        for run in snap.runs:
            present.add(run.run_dir)
            try:
                events.extend(self._run(run, now, first))
            except Exception:  # a bug on one odd run must not silence the others
                continue
        self._forget(present, now)
        if not first or self.first_look:
            events.extend(self._machine(snap, now))
        else:
            self._machine(snap, now)  # the app's first look: remembered, not reported
        if first:
            self.dirty = True  # the first look is done: saved, whatever it found
        self._seen_until = now
        return events

    def _run(self, run: RunInfo, now: float, first: bool) -> list[Event]:
        rec = self._runs.get(run.run_dir)
        out: list[Event] = []
        if rec is None:
            rec = self._runs[run.run_dir] = {"state": None, "pid": None}
            if self.settings.notify_new_best:
                rec["best"] = [run.best_epoch, run.best_metric]
            if self.pushes:
                baseline = first or run.activity <= (self._seen_until or 0.0)
                rec["pushes"] = _pushes_start(run.run_dir, baseline)
            self.dirty = True
        elif rec.pop("gone_at", None) is not None:
            self.dirty = True
        if run.state != _NO_STATE:
            if rec["state"] is None:  # its first known state: news only if it is new
                if first:
                    report = (
                        self.first_look
                        and run.state in _FIRST_LOOK_STATES
                        and run.activity >= now - FIRST_LOOK_S
                    )
                else:  # appeared since the last look, or changed since then
                    since = run.activity > (self._seen_until or 0.0)
                    report = run.state in ("running", "stalled") or since
            else:
                new_attempt = (
                    run.pid is not None and rec["pid"] is not None and run.pid != rec["pid"]
                )
                changed = run.state != rec["state"]
                recovered = rec["state"] == "stalled" and run.state == "running"
                report = new_attempt or (changed and not recovered)
            # "starting" (a launch before its status.json) is no event: run_started follows
            if report and run.state in RUN_EVENTS:
                out.append(self._run_event(run, now))
            if (run.state, run.pid) != (rec["state"], rec["pid"]):
                rec["state"], rec["pid"] = run.state, run.pid
                self.dirty = True
        if self.settings.notify_new_best:
            out.extend(self._new_best(run, rec, now))
        if self.pushes and not _is_launch(run.run_dir):
            out.extend(self._push_failures(run, rec, now))
        return out

    def _run_event(self, run: RunInfo, now: float) -> Event:
        name = run.name
        epochs = epoch_text(run)
        if run.state == "running":
            model = f" {run.model}" if run.model else ""
            text = f"{name} started{model} (pid {run.pid}, epoch {epochs})"
        elif run.state == "completed":
            best = ""
            if run.best_metric is not None:
                metric = (run.best_metric_name or "metric").removeprefix("metrics/")
                best = f", best {metric} {fmt_number(run.best_metric)}"
                if run.best_epoch is not None:
                    best += f" at epoch {run.best_epoch}"
            took = f" in {fmt_duration(run.elapsed_seconds)}" if run.elapsed_seconds else ""
            if took and len(run.attempts) > 1:  # the sum of the attempts' times
                took += f" over {len(run.attempts)} attempts"
            text = f"{name} completed: epoch {epochs}{best}{took}"
        elif run.state == "failed":
            text = f"{name} failed at epoch {epochs}: {run.error or 'no error given'}"
        elif run.state == "stopped":  # by the user (a stop record): news, not a failure
            text = f"{name} stopped by the user at epoch {epochs}"
            if run.elapsed_seconds:
                text += f" (ran {fmt_duration(run.elapsed_seconds)})"
        elif run.state == "dead":
            text = f"{name} is DEAD at epoch {epochs}: {run.error or 'its process is gone'}"
            if run.elapsed_seconds:  # every attempt's time, as the cost counts it
                text += f" (ran {fmt_duration(run.elapsed_seconds)}"
                text += f" over {len(run.attempts)} attempts)" if len(run.attempts) > 1 else ")"
        else:  # stalled
            text = f"{name} stalled at epoch {epochs}: {run.error or 'no status update'}"
        # a launch that died before its status.json: the run directory it was launched for,
        # never its stand-in under .rgpu/launch/ (notify's {run})
        run_dir = launched_for(run.run_dir) or run.run_dir
        return self._event(now, RUN_EVENTS[run.state], run_dir, text)

    def _new_best(self, run: RunInfo, rec: dict, now: float) -> list[Event]:
        best = [run.best_epoch, run.best_metric]
        old = rec.get("best")
        rec["best"] = best
        if old == best:
            return []
        self.dirty = True
        if old is None or run.best_metric is None or run.state not in ("running", "completed"):
            return []  # first seen (or asked for only now): a baseline
        metric = (run.best_metric_name or "metric").removeprefix("metrics/")
        at = f" at epoch {run.best_epoch}" if run.best_epoch is not None else ""
        text = f"{run.name}: new best {metric} {fmt_number(run.best_metric)}{at}"
        return [self._event(now, "new_best", run.run_dir, text)]

    def _push_failures(self, run: RunInfo, rec: dict, now: float) -> list[Event]:
        before = rec.get("pushes")
        if before is None:  # not followed before (a damaged state entry): from now on
            rec["pushes"] = _pushes_start(run.run_dir, True)
            self.dirty = True
            return []
        records, after = _new_push_records(run.run_dir, before)
        if after != before:
            rec["pushes"] = after
            self.dirty = True
        out = []
        for record in records:
            if record.get("outcome") != "error":
                continue
            file = record.get("file") or "a file"
            text = f"{run.name}: push of {file} failed: {record.get('error') or 'no reason given'}"
            out.append(self._event(now, "push_failed", run.run_dir, text))
        return out

    def _forget(self, present: set[str], now: float) -> None:
        """Runs gone from disk: marked, and forgotten after RUN_FORGET_S (a run that comes
        back sooner, after an NFS hiccup, is not news)."""
        for run_dir in list(self._runs):
            if run_dir in present:
                continue
            rec = self._runs[run_dir]
            gone = rec.get("gone_at")
            if gone is None:
                rec["gone_at"] = now
                self.dirty = True
            elif now - gone > RUN_FORGET_S:
                del self._runs[run_dir]
                self.dirty = True
        if len(self._runs) > MAX_RUNS_KEPT:  # runs gone from disk go first, oldest first;
            # a run that is still there is never forgotten (it would be news again)
            gone = sorted(
                (rec["gone_at"], run_dir)
                for run_dir, rec in self._runs.items()
                if rec.get("gone_at") is not None
            )
            for _at, run_dir in gone[: len(self._runs) - MAX_RUNS_KEPT]:
                del self._runs[run_dir]
                self.dirty = True

    # -- the machine -----------------------------------------------------------------

    def _machine(self, snap: Snapshot, now: float) -> list[Event]:
        out = []
        for name, message, clear_after in (
            ("idle", idle_message(snap), 0.0),
            ("disk_low", disk_message(snap), CLEAR_AFTER_S),
            ("balance_low", balance_message(snap, now), CLEAR_AFTER_S),
        ):
            event = self.condition(name, message is not None, now, message or "", clear_after)
            if event is not None:
                out.append(event)
        return out

    def condition(
        self,
        name: str,
        active: bool,
        now: float,
        message: str,
        clear_after: float = 0.0,
        *,
        run: str | None = None,
        repeat_after: float | None = None,
    ) -> Event | None:
        """A condition that holds for a while (idle, disk_low, autostop_held): its event when
        it begins, again after `repeat_after` seconds while it holds (None: never), and
        None otherwise. It ends once it has not held for `clear_after` seconds."""
        cond = self._conditions.get(name)
        if not active:
            if cond is not None:
                if cond["clear_since"] is None:
                    cond["clear_since"] = now
                    self.dirty = True
                if now - cond["clear_since"] >= clear_after:
                    del self._conditions[name]
                    self.dirty = True
            return None
        if cond is not None:
            if cond["clear_since"] is not None:
                cond["clear_since"] = None
                self.dirty = True
            if repeat_after is None or now - cond["reported_at"] < repeat_after:
                return None
        self._conditions[name] = {"reported_at": now, "clear_since": None}
        self.dirty = True
        return self._event(now, name, run, message)

    def _event(self, now: float, name: str, run: str | None, text: str) -> Event:
        if run is not None:  # a path, kept as it is unless it holds a token
            run = redact(run.replace(self.token, "***") if self.token else run)
        return Event(at=now, event=name, run=run, message=clean(text, self.token))


# -- the machine conditions, from the Snapshot ---------------------------------------


def idle_message(snap: Snapshot) -> str | None:
    """The idle banner's rule (CostView.idle_now_seconds over idle_minutes)."""
    c = snap.cost
    if c is None or c.idle_now_seconds is None or c.idle_now_seconds < c.idle_minutes * 60:
        return None
    text = f"machine idle for {fmt_duration(c.idle_now_seconds)}: no run running or starting"
    if snap.gpus is not None and snap.gpus.available:
        text += f", every {'simulated ' if snap.gpus.simulated else ''}GPU under 5%"
    if c.price_per_hour is not None:
        spent = c.idle_now_seconds * c.price_per_hour / 3600
        text += f" ({fmt_money(spent)} spent idle at {fmt_rate(c.price_per_hour)})"
    return text + ": push checkpoints, then stop or destroy it"


def disk_message(snap: Snapshot) -> str | None:
    """The SystemView's disk rules."""
    s = snap.system
    d = s.disk if s is not None else None
    if d is None:
        return None
    why = []
    if d.total_bytes > 0 and d.free_bytes < DISK_FULL_FRACTION * d.total_bytes:
        why.append(f"{100 * (d.total_bytes - d.free_bytes) / d.total_bytes:.0f}% full")
    largest = s.largest_checkpoint_bytes
    if largest is not None and d.free_bytes < CHECKPOINT_FACTOR * largest:
        why.append(f"less than twice the largest checkpoint ({fmt_bytes(largest)})")
    if s.disk_full_in_hours is not None and s.disk_full_in_hours < FULL_IN_WARN_HOURS:
        why.append(f"full in {fmt_duration(s.disk_full_in_hours * 3600)} at the current rate")
    if not why:
        return None
    free, total = fmt_bytes(d.free_bytes), fmt_bytes(d.total_bytes)
    return f"disk low: {free} free of {total} on {d.path} ({'; '.join(why)})"


def balance_message(snap: Snapshot, now: float) -> str | None:
    """The balance has run out, runs out before a running run finishes (the selected one
    first), or within BALANCE_LOW_S."""
    c = snap.cost
    if c is None or c.balance_left is None:
        return None
    if c.balance_left <= 0:
        return (
            "the balance has run out by the settings: top up, "
            "or the machine and its runs may be lost"
        )
    out_at = c.balance_runs_out_at
    if out_at is None:
        return None
    selected = snap.selected_run
    runs = ([selected] if selected is not None else []) + [
        r for r in snap.runs if r is not selected
    ]
    for run in runs:
        if (
            run.state == "running"
            and run.eta_seconds is not None
            and out_at < now + run.eta_seconds
        ):
            return (
                f"the balance ({fmt_money(c.balance_left)}) runs out in "
                f"{fmt_duration(out_at - now)}, before {run.name} finishes (ETA "
                f"{fmt_duration(run.eta_seconds)}): top up or push checkpoints now"
            )
    if out_at - now < BALANCE_LOW_S:
        return (
            f"the balance ({fmt_money(c.balance_left)}) runs out in {fmt_duration(out_at - now)}"
            f" ({iso(out_at)}): top up or push checkpoints"
        )
    return None


# -- pushes.jsonl, read from where the last look stopped ---------------------------------


def _is_launch(run_dir: str) -> bool:
    """A launch with no status.json yet (core.picture.watch's pseudo run): no pushes of its own."""
    parent = os.path.dirname(run_dir)
    return (
        os.path.basename(parent) == "launch"
        and os.path.basename(os.path.dirname(parent)) == ".rgpu"
    )


def _pushes_path(run_dir: str) -> str:
    return os.path.join(run_dir, ".rgpu", "pushes.jsonl")


def _pushes_start(run_dir: str, baseline: bool) -> list[int]:
    """[inode, offset] to read from: the end of the file for a baseline (old records are
    not news), else its start."""
    if _is_launch(run_dir):
        return [0, 0]
    try:
        st = os.stat(_pushes_path(run_dir))
    except OSError:
        return [0, 0]
    return [st.st_ino, st.st_size if baseline else 0]


def _new_push_records(run_dir: str, at) -> tuple[list[dict], list[int]]:
    """The complete records appended since `at` ([inode, offset]) and the new position.
    A replaced file (another inode) or a shorter one is read from its start; at most
    PUSHES_READ_MAX new bytes are read (the newest ones); never blocks or raises."""
    ino, offset = at if _position(at) else (0, 0)
    path = _pushes_path(run_dir)
    try:
        st = os.stat(path)
    except OSError:
        return [], [0, 0]
    if st.st_ino != ino or st.st_size < offset:
        ino, offset = st.st_ino, 0
    if st.st_size == offset:
        return [], [ino, offset]
    start = max(offset, st.st_size - PUSHES_READ_MAX)
    try:
        fd = open_regular(path)
        try:
            data = os.pread(fd, st.st_size - start, start)
        finally:
            os.close(fd)
    except OSError:  # a FIFO planted there, gone since: no records
        return [], [ino, offset]
    if start > offset:  # skipped: the first line is a tail
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else b""
        start = st.st_size - len(data)
    end = data.rfind(b"\n") + 1  # a torn last line waits for its newline
    records = []
    for line in data[:end].split(b"\n"):
        try:
            value = parse_json(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records, [ino, start + end]


# -- checking what the state file holds ----------------------------------------------------


def _time(value) -> float | None:
    return checked(value, TIMES)[0]


def _position(value) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    )


def _run_record(rec) -> dict | None:
    if not isinstance(rec, dict):
        return None
    state = rec.get("state")
    pid = rec.get("pid")
    out: dict = {
        "state": state if state in RUN_EVENTS or state == "starting" else None,
        "pid": pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
    }
    gone = _time(rec.get("gone_at"))
    if gone is not None:
        out["gone_at"] = gone
    best = rec.get("best")
    if isinstance(best, list) and len(best) == 2:
        epoch, metric = best
        out["best"] = [
            epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None,
            metric if isinstance(metric, (int, float)) and not isinstance(metric, bool) else None,
        ]
    if _position(rec.get("pushes")):
        out["pushes"] = list(rec["pushes"])
    return out
