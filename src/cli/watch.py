"""`rgpu-tui watch [PATH] [--json] [--interval S] [--no-autostop]`: the app's refresh loop
with no screen.

It builds a Snapshot with the same Collector as the app every interval, hands it to the
event engine (core.away.events), prints each new event as one line (or one JSON object a line
with --json, flushed at once) and gives it to notify_command (core.away.notify). What it has
reported is kept in the state file (core.records.event_state) so a restart repeats nothing; one
watcher per root (a second one exits 1). SIGINT and SIGTERM end it with status 0, after
the state is saved and queued notifications had up to NOTIFY_DRAIN_S to go out. SIGHUP is
left as it is (nohup ignores it). Stdout holds only events; what it says about itself
(where its state is, a refresh that failed, the state file that cannot be written) goes
to stderr. With autostop_command and autostop_idle_minutes set (and no --no-autostop) it
also runs the autostop (core.away.autostop) after each refresh: the only process that runs
that command (the app shows its countdown). The loop itself is core.away.watcher's; this
module parses, sets up (the lock, the printer, the notifier) and closes.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from .app import INTERVAL_RANGE
from .gpus import add_gpu_source_flags, settings_and_gpu_source
from .numbers import OneLineParser, number
from .options import DEFAULT_ROOT, add_settings_flags

DEFAULT_INTERVAL = 2.0  # seconds; a death is told within two refreshes
NOTIFY_DRAIN_S = 10.0  # on SIGTERM: queued notifications get this long to go out


def _parser() -> OneLineParser:
    p = OneLineParser(
        prog="rgpu-tui watch",
        description="Watch PATH with no screen (for nohup, tmux or a systemd user unit): "
        "print one line per event (run_started, run_done, run_failed, run_stopped, run_dead, "
        "run_stalled, new_best, idle, disk_low, balance_low, push_failed, autostop_held, "
        "autostop, autostop_failed, notify_failed) and run notify_command for it; run "
        "autostop_command once the machine idled autostop_idle_minutes with every run's "
        "weights on the Hub. Each event is told once; a restarted watcher repeats nothing. "
        "Ends with status 0 on SIGINT or SIGTERM.",
    )
    p.add_argument("path", nargs="?", default=DEFAULT_ROOT, help="runs root or one run directory")
    p.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per event: {"at", "event", "run", "message"}',
    )
    p.add_argument(
        "--interval",
        type=number(*INTERVAL_RANGE),
        default=DEFAULT_INTERVAL,
        help=f"seconds between refreshes, 0.1 to 3600 (default {DEFAULT_INTERVAL:g})",
    )
    p.add_argument(
        "--no-autostop",
        action="store_true",
        help="never run autostop_command from this watcher (events only)",
    )
    add_gpu_source_flags(p)
    add_settings_flags(p)
    return p


class _Printer:
    """Events to stdout, from the loop and from the notifier's thread, one whole line at a
    time, flushed at once (a `| tee` or a log file sees each as it happens)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._lock = threading.Lock()

    def __call__(self, event) -> None:
        line = json.dumps(event.to_json()) if self.as_json else event.to_text()
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def _say(text: str) -> None:
    sys.stderr.write(f"rgpu-tui watch: {text}\n")
    sys.stderr.flush()


def cmd_watch(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    got = settings_and_gpu_source(args)
    if got is None:
        return 2
    settings, choice = got

    from ..core.away.events import EventEngine
    from ..core.away.headless import Stop  # SIGINT/SIGTERM wake the loop
    from ..core.away.notify import Notifier, hf_token
    from ..core.away.price_feed import price_feed
    from ..core.away.watcher import Watcher, make_autostop
    from ..core.picture.collect import Collector
    from ..core.records.event_state import WatchLock, load_state, state_path

    root = os.path.abspath(args.path)
    state_file = state_path(root)
    lock = WatchLock(state_file)
    try:
        busy = lock.acquire()
    except OSError as exc:
        print(
            f"rgpu-tui: cannot keep watch state in {os.path.dirname(state_file)}: "
            f"{exc.strerror or exc} (set XDG_STATE_HOME to a writable folder)",
            file=sys.stderr,
        )
        return 1
    if busy:
        print(f"rgpu-tui: {busy}: {root}", file=sys.stderr)
        return 1

    printer = _Printer(args.json)
    stop = Stop()
    collector = notifier = autostop = None
    try:
        state, problem = load_state(state_file)
        if problem:
            _say(problem)
        token = hf_token()
        engine = EventEngine(settings, state, token=token)
        if settings.notify_command:
            notifier = Notifier(settings.notify_command, printer, token=token)
        collector = Collector(
            root,
            **choice.collector_args(),
            interval=args.interval,
            log_keep=20,
            settings=settings,
            price=price_feed(settings),
        )
        notify = settings.notify_command[0] if settings.notify_command else "off"
        _say(
            f"watching {root} every {args.interval:g} s (state {state_file}; "
            f"notify_command: {notify})"
        )

        def emit(event) -> None:
            printer(event)
            if notifier is not None:
                notifier.submit(event)

        autostop = make_autostop(
            settings, root, args.no_autostop, emit, engine, notifier, token, say=_say
        )
        watcher = Watcher(
            collector, engine, emit, state_file, args.interval, say=_say, autostop=autostop
        )
        watcher.run(stop)
    finally:
        if autostop is not None:
            autostop.close()
        if notifier is not None:
            notifier.close(NOTIFY_DRAIN_S)
        if collector is not None:
            collector.close()
        stop.close()
        lock.release()
    return 0
