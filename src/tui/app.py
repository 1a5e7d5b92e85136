"""The Textual app: machine pane (GPUs, CPU, RAM, disk), runs list, run header,
metric sparklines, log tail.

One refresh loop: the refresher's thread builds the next Snapshot with core's
Collector and posts it; the app hands each pane its slice; a pane repaints
only when its slice changed. The refresher keeps a one-interval beat of its own,
but builds the next Snapshot only after the app applied the last one, so a slow
disk or a busy app never piles refreshes up.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, OptionList

from ..core.auto_push import AutoPusher
from ..core.collect import Collector
from ..core.config import Settings
from ..core.events import EventEngine
from ..core.gpu_probe import gpu_preflight, preflight_to_text
from ..core.hub import ARTIFACTS_REQUEST, PushEvent, PushQueue, PushRequest
from ..core.launch import LaunchRecord, stop_run
from ..core.resume import ResumeError, ResumePlan, plan_resume, start_resume
from ..core.snapshot import SelectedRun, Snapshot, fmt_duration, fmt_number
from ..core.text import printable
from . import compat
from .messages import PushUpdate, RefreshFailed, SnapshotReady, StopProgress
from .refresher import Refresher
from .screens.cost import CostScreen
from .screens.dialogs import ConfirmScreen, PickScreen, ReportScreen
from .screens.help import HelpScreen
from .screens.launch import LaunchScreen, launch_defaults
from .widgets.autostop import AutostopLine
from .widgets.cost import CostStrip, IdleBanner
from .widgets.gpus import GpuPane
from .widgets.log_pane import LogPane, LogTitle
from .widgets.metrics import MetricsPane
from .widgets.push_bar import PushBar
from .widgets.run_header import RunHeader
from .widgets.runs_list import RunsList

# the notices of events (core.events); the others are "information"
EVENT_SEVERITY = {
    "run_dead": "error",
    "run_failed": "error",
    "balance_low": "error",
    "run_stalled": "warning",
    "disk_low": "warning",
    "idle": "warning",
}
WIDE_COLUMNS = 140
SHORT_ROWS = 32  # below this the metrics pane drops its border


class RgpuApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "rgpu-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("m", "metrics_page", "Metrics"),
        Binding("c", "cost", "Cost"),
        Binding("p", "push", "Push"),
        Binding("P", "push_pick", "Push…", show=False),
        Binding("n", "launch", "New run"),
        Binding("s", "stop", "Stop"),
        Binding("r", "resume", "Resume", show=False),
        Binding("g", "preflight", "GPU check"),
        Binding("a", "autostop", "Autostop", show=False),
    ]

    def __init__(
        self,
        root: str,
        interval: float = 1.0,
        theme_name: str | None = None,
        clock: Callable[[], float] = time.time,
        fake_gpus: int | None = None,
        fake_lose: dict[int, float] | None = None,
        settings: Settings | None = None,
        gpu_replay=None,  # a core.gpu_replay.GpuRecording: replay it instead of NVML
        no_autostop: bool = False,  # hold the watcher's autostop while the app runs
    ) -> None:
        # the fast paths on Textual's internals (compat): on when this Textual allows them
        fast_paths = compat.install()
        super().__init__(driver_class=compat.driver_class(fast_paths))
        self.fast_paths = fast_paths
        self.root_arg = root
        self.interval = interval
        self.clock = clock
        self.settings = settings or Settings()
        # one queue, one upload at a time: its threads start on the first push
        self.push_queue = PushQueue(self.settings, self._push_event_from_thread)
        self.auto_pusher = AutoPusher(self.settings)
        self._exiting = False  # on_unmount closed the queue
        self._push_progress: dict = {}
        self._stop_screen: ReportScreen | None = None
        self._follow_pid: int | None = None  # a run we launched: select it when it appears
        self.collector = Collector(
            root,
            fake_gpus=fake_gpus,
            fake_lose=fake_lose,
            gpu_replay=gpu_replay,
            interval=interval,
            log_keep=500,
            settings=settings,
        )
        # the watcher's events as notices: what changes while the app runs (what it finds at
        # start is on the screen); in memory only, and no notify_command: that is `watch`'s
        # (its own pushes the app reports itself, so no push_failed here)
        self.events = EventEngine(self.settings, first_look=False, pushes=False)
        self.selected: str | None = os.path.abspath(root)  # a run dir given as root
        self.no_autostop = no_autostop
        self.snapshot: Snapshot | None = None
        self.refresh_error: str | None = None
        self._lock = threading.Lock()
        self._refresher = Refresher(self._build_snapshot, period=interval)
        if theme_name:
            if theme_name not in self.available_themes:
                names = ", ".join(sorted(self.available_themes))
                raise ValueError(f"unknown theme {theme_name!r}; one of: {names}")
            self.theme = theme_name

    def compose(self) -> ComposeResult:
        # the panes live on the default screen; keep references, since App.query_one looks
        # at the active screen, which is a dialog while one is open
        self.idle_banner = IdleBanner(id="idle")
        self.autostop_line = AutostopLine(
            self.root_arg, self.settings, hold=self.no_autostop, clock=self.clock, id="autostop"
        )
        self.gpu_pane = GpuPane(id="gpus")
        self.cost_strip = CostStrip(id="cost")
        self.push_bar = PushBar(id="push")
        self.runs_list = RunsList(id="runs")
        self.runs_list.border_title = "runs"
        self.run_header = RunHeader(id="header")
        self.metrics_pane = MetricsPane(id="metrics")
        self.log_title = LogTitle(id="log-title")
        self.log_pane = LogPane(self.log_title, id="log", fast=self.fast_paths.on(compat.LOG))
        yield self.idle_banner
        yield self.autostop_line
        yield self.gpu_pane
        yield self.cost_strip
        yield self.push_bar
        with Horizontal(id="body"):
            yield self.runs_list
            with Vertical(id="main"):
                yield self.run_header
                yield self.metrics_pane
                yield self.log_title
                yield self.log_pane
        yield Footer()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice (screens and widgets call the app's) names runs, files and errors
        from the runs: made printable, and never read as markup (a run named "[/]" would
        raise, one named "[bold]" would restyle it). The app's notices use no markup."""
        super().notify(
            printable(message, newlines=True),
            title=printable(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def on_mount(self) -> None:
        self.runs_list.focus()
        self._set_layout(self.size)
        self._refresher.start()
        self.request_refresh()

    def on_resize(self, event) -> None:
        self._set_layout(event.size)

    def on_unmount(self) -> None:
        self._refresher.stop(timeout=0)  # no new refreshes; one in flight holds the lock
        self._exiting = True
        self.push_queue.close(timeout=0)  # an upload in flight stops; nothing half-committed
        with self._lock:  # a refresh in flight finishes first
            self.collector.close()

    def _set_layout(self, size) -> None:
        self.set_class(size.width >= WIDE_COLUMNS, "-wide")
        self.set_class(size.height < SHORT_ROWS, "-short")

    # -- the refresh loop --------------------------------------------------

    def request_refresh(self) -> None:
        """Start a refresh now, or right after the one in flight."""
        self._refresher.schedule(0)

    def _build_snapshot(self) -> None:
        """On the refresher's thread."""
        selected = self.selected
        try:
            with self._lock:
                snap = self.collector.refresh(now=self.clock(), selected=selected)
        except Exception as exc:  # a reader bug must not take the UI down
            self.post_message(RefreshFailed(f"{type(exc).__name__}: {exc}"))
            return
        if self.settings.auto_push != "off":
            with self._lock:
                requests = self.auto_pusher.requests(snap, self.collector.runs)
            for req in requests:
                self._submit_push(req)
        self.post_message(SnapshotReady(snap))

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.refresh_error = None
        self.apply_snapshot(message.snapshot)
        self._refresh_done()

    def on_refresh_failed(self, message: RefreshFailed) -> None:
        self.refresh_error = f"refresh failed: {message.error}"
        if self.snapshot is not None:
            self.apply_snapshot(self.snapshot)
        self._refresh_done()

    def _refresh_done(self) -> None:
        # the go-ahead for the next one: an interval from now (the refresher's own beat,
        # due a little earlier, wins); sooner when the log holds lines back, so they come
        # with its frame
        held = self.log_pane.pending_in()
        self._refresher.schedule(self.interval if held is None else min(self.interval, held))

    def apply_snapshot(self, snap: Snapshot) -> None:
        self.snapshot = snap
        for event in self.events.observe(snap):
            severity = EVENT_SEVERITY.get(event.event, "information")
            self.notify(event.message, title=event.event, severity=severity, timeout=15)
        if self._follow_pid is not None:
            for r in snap.runs:
                if r.pid == self._follow_pid:
                    if r.state != "starting":
                        self._follow_pid = None  # found its real run directory
                    if self.selected != r.run_dir:
                        self.selected = r.run_dir
                        self.request_refresh()
                    break
        sel_dir = snap.selected.run_dir if snap.selected else None
        if self.selected not in {r.run_dir for r in snap.runs}:
            self.selected = sel_dir
        runs = self.runs_list
        title = f"runs ({len(snap.runs)})"
        if runs.border_title != title:  # setting it repaints the whole list
            runs.border_title = title
        runs.show_runs(snap.runs, sel_dir, snap.deep_dirs_skipped)
        self.gpu_pane.show(snap.gpus, snap.system, snap.runs)
        self.cost_strip.show(snap.cost)
        if self.idle_banner.show(snap.cost):
            self.bell()  # once, when the idle banner appears
        self.autostop_line.show(snap.cost)
        top = self.screen_stack[-1] if self.screen_stack else None  # empty while closing
        if isinstance(top, CostScreen):
            top.update_cost(snap)
        message = self.refresh_error or snap.problem
        self.run_header.show(
            snap.selected_run,
            snap.generated_at,
            message,
            snap.selected.pushes if snap.selected else None,
        )
        self.metrics_pane.show(snap.selected.metrics if snap.selected else None)
        self.log_pane.show(snap.selected.log if snap.selected else None)

    # -- actions -----------------------------------------------------------

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        run_dir = event.option.id
        if run_dir and run_dir != self.selected:
            self.selected = run_dir
            self.request_refresh()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_cost(self) -> None:
        self.push_screen(CostScreen(self.snapshot, self.settings))

    # -- pushing to the Hub ------------------------------------------------------

    def action_push(self) -> None:
        """`p`: best.pt of the selected run (last.pt when there is no best.pt)."""
        sel = self._selected_run()
        if sel is not None:
            self._confirm_push(sel, sel.push_default)

    def action_push_pick(self) -> None:
        """`P`: pick best.pt, last.pt, an epoch_N.pt, or the small artifacts only (the
        selected run's checkpoints, as the last Snapshot lists them)."""
        sel = self._selected_run()
        if sel is None:
            return
        choices = [(c.name, c.name) for c in sel.checkpoints]
        choices.append((ARTIFACTS_REQUEST, "small artifacts only (status, metrics, config)"))
        title = "push which file?"
        if sel.checkpoints_not_listed:
            title += f" ({sel.checkpoints_not_listed} older not listed)"

        def picked(file: str | None) -> None:
            if file:
                self._confirm_push(sel, file)

        self.push_screen(PickScreen(title, choices), picked)

    def _selected_run(self) -> SelectedRun | None:
        snap = self.snapshot
        if snap is None or snap.selected is None:
            self.notify("No run selected.", severity="warning")
            return None
        return snap.selected

    def _confirm_push(self, sel: SelectedRun, file: str) -> None:
        """The confirm dialog, from what the Snapshot says of the file and its target
        (core.hub_target.push_target: the push itself goes where it says)."""
        body = Text()
        if file == ARTIFACTS_REQUEST:
            target = sel.artifacts_target
            if target is None or target.problem:
                self._push_refused(target.problem if target else "no target")
                return
            body.append("The run's small artifacts (status.json, metrics.jsonl, results.csv, ")
            body.append("summary.json, train_config.yaml).\n")
            where = f"{target.folder}/" if target.folder else "the top of the repo"
        else:
            c = sel.checkpoint(file)
            target = c.target if c is not None else sel.artifacts_target
            if target is not None and target.repo_problem:
                self._push_refused(target.repo_problem)
                return
            if c is None or not c.exists:
                path = c.path if c is not None else os.path.join(sel.run_dir, "weights", file)
                self.notify(f"{path} does not exist.", severity="error")
                return
            if c.problem or target.problem:  # outside the run, a FIFO, a bad hub_path
                self._push_refused(c.problem or target.problem)
                return
            # printable before Text, which would drop a BEL or CR unseen
            body.append(printable(c.path) + "\n", style="bold")
            body.append(f"{(c.size or 0) / 1e6:.1f} MB")
            if c.epoch is not None:
                body.append(f", epoch {c.epoch}")
            if c.metric is not None:
                body.append(f", {printable(c.metric_name or 'metric')} {fmt_number(c.metric)}")
            body.append("\n")
            where = target.path
        body.append("to ")
        body.append(printable(f"{target.repo}: {where}"), style="bold")
        body.append("\n(with the run's small artifacts, in one commit; a new repo is private)")
        run_dir = sel.run_dir

        def answered(yes: bool | None) -> None:
            if yes:
                self._submit_push(PushRequest(run_dir=run_dir, file=file))

        self.push_screen(
            ConfirmScreen("push to the Hugging Face Hub", body, "enter: push"), answered
        )

    def _push_refused(self, why: str | None) -> None:
        self.notify(printable(why or "cannot push"), severity="error", timeout=10, markup=False)

    def _submit_push(self, req: PushRequest) -> None:
        """From the UI thread (a key) or the refresher's (auto-push): the one queue."""
        try:
            self.push_queue.submit(req)
        except RuntimeError:
            if not self._exiting:
                raise
            # closed: the app is exiting and a refresh in flight asked late; nothing starts

    def _push_event_from_thread(self, event: PushEvent) -> None:
        self.post_message(PushUpdate(event))  # thread-safe, never blocks the uploader

    def on_push_update(self, message: PushUpdate) -> None:
        ev = message.event
        queued = len(self.push_queue.pending())
        req = ev.request
        if ev.kind in ("started", "progress"):
            self.push_bar.show(
                req.file, req.run_dir, ev.phase, ev.bytes_done, ev.bytes_total, queued
            )
        elif ev.kind == "queued":
            current = self.push_queue.current()
            if current is None:
                self.push_bar.show(None, None, None, 0, 0, queued)
        elif ev.kind == "finished" and ev.result is not None:
            self.push_bar.show(None, None, None, 0, 0, queued)
            r = ev.result
            run = os.path.basename(req.run_dir)
            for notice in r.notices:  # an artifact skipped (outside the run, not a file)
                self.notify(
                    printable(notice), title="push", severity="warning", timeout=15, markup=False
                )
            if r.ok and r.skipped_unchanged:
                self.notify(
                    f"{r.file or req.file} of {run} is unchanged on {r.repo}: no new commit."
                )
            elif r.ok:
                self.notify(
                    f"Pushed {r.file or req.file} of {run} to {r.repo}\n{r.commit_url or ''}",
                    title="pushed",
                    timeout=10,
                )
            else:
                self.notify(
                    r.error or "push failed", title="push failed", severity="error", timeout=20
                )
            self.request_refresh()  # the header's "pushed ... ago" comes from the records

    # -- launching, stopping, checking the GPUs ---------------------------------

    def _gpu_count(self) -> int | None:
        gpus = self.snapshot.gpus if self.snapshot else None
        if gpus is None or not gpus.available or gpus.source == "fake":
            return 0  # simulated GPUs cannot train: the form proposes the CPU
        return len(gpus.devices)

    def action_launch(self) -> None:
        """`n`: the launch form; the new run is selected once it appears."""
        gpu_count = self._gpu_count()
        root = self.collector.runs.root
        defaults = launch_defaults(self.settings, root, gpu_count)

        def launched(record: LaunchRecord | None) -> None:
            if record is None:
                return
            self._follow_pid = record.pid
            self.notify(
                f"Started {record.name} (pid {record.pid}); console log {record.console_log}",
                title="launched",
                timeout=10,
            )
            self.request_refresh()

        self.push_screen(LaunchScreen(defaults, self.settings, gpu_count), launched)

    def action_stop(self) -> None:
        """`s`: SIGINT to the run's process group, SIGTERM and SIGKILL later if needed."""
        snap = self.snapshot
        run = snap.selected_run if snap else None
        if run is not None and run.state == "starting":
            self.notify("Still starting: stop it once it shows RUN.", severity="warning")
            return
        if run is None or run.state not in ("running", "stalled"):
            self.notify("The selected run is not running.", severity="warning")
            return
        s = self.settings
        body = Text()
        body.append(f"Stop {printable(run.name)} (pid {run.pid})?\n", style="bold")
        body.append(
            f"SIGINT now (libreyolo records failed/KeyboardInterrupt and keeps its last "
            f"checkpoint), SIGTERM after {s.stop_term_after:g} s, SIGKILL after "
            f"{s.stop_kill_after:g} s. Push its weights first if they matter."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                screen = ReportScreen(f"stopping {run.name}", "sending SIGINT…")
                self._stop_screen = screen
                self.push_screen(screen)
                self._stop_worker(run.run_dir, run.name)

        self.push_screen(ConfirmScreen("stop a run", body, "enter: stop"), answered)

    @work(thread=True, group="stop")
    def _stop_worker(self, run_dir: str, name: str) -> None:
        def progress(phase: str, seconds_left: float | None) -> None:
            self.post_message(StopProgress(name, phase, seconds_left, None))

        result = stop_run(run_dir, self.settings, on_progress=progress)
        self.post_message(StopProgress(name, "done", None, result))

    def on_stop_progress(self, message: StopProgress) -> None:
        screen = self._stop_screen if self._stop_screen in self.screen_stack else None
        if message.result is None:
            text = {
                "sigint": "SIGINT sent; SIGTERM in {s}",
                "sigterm": "SIGTERM sent; SIGKILL in {s}",
                "sigkill": "SIGKILL sent; waiting {s} for the process to end",
                "ended": "the process has ended",
            }.get(message.phase, message.phase + " {s}")
            left = fmt_duration(message.seconds_left) if message.seconds_left is not None else ""
            if screen is not None:
                screen.show(text.format(s=left))
            return
        r = message.result
        if r.ok:
            sent = ", ".join(r.signals_sent) or "no signal needed"
            reads = {
                "dead": "its status.json still says running: shown as DEAD",
                "failed": "libreyolo recorded it as failed (interrupted)",
            }.get(r.final_state or "", f"it reads {r.final_state or '?'}")
            summary = f"{message.name} stopped ({sent}); {reads}"
            self.notify(summary, title="stopped", timeout=10)
        else:
            summary = f"{message.name} not stopped: {r.error}"
            self.notify(summary, title="stop failed", severity="error", timeout=20)
        if screen is not None:
            screen.show(summary)
        self.request_refresh()

    def action_resume(self) -> None:
        """`r`: resume a DEAD or FAILED run from its last.pt (core.resume), after a confirm
        dialog with the exact command; the checks and the start run in a thread."""
        snap = self.snapshot
        run = snap.selected_run if snap else None
        if run is None:
            self.notify("No run selected.", severity="warning")
            return
        why = {
            "running": "is running",
            "stalled": "is still alive (stalled): stop it first (s)",
            "starting": "is still starting",
            "completed": "completed: nothing to resume",
        }.get(run.state)
        if why is None and run.state not in ("dead", "failed"):
            why = "is not DEAD or FAILED: nothing to resume"
        if why is not None:
            self.notify(f"{run.name} {why}.", severity="warning")
            return
        self._resume_plan_worker(run.run_dir)

    @work(thread=True, exclusive=True, group="resume-plan")
    def _resume_plan_worker(self, run_dir: str) -> None:
        try:
            plan = plan_resume(run_dir)
        except ResumeError as exc:
            self._from_thread(self.notify, f"Not resumed: {exc}", severity="error", timeout=15)
            return
        self._from_thread(self._confirm_resume, plan)

    def _from_thread(self, callback, *args, **kwargs) -> None:
        try:
            self.call_from_thread(callback, *args, **kwargs)
        except RuntimeError:  # the app is closing: nobody to tell
            pass

    def _confirm_resume(self, plan: ResumePlan) -> None:
        body = Text()
        done = plan.completed_epochs
        after = f" after epoch {done}" + (f"/{plan.total_epochs}" if plan.total_epochs else "")
        body.append(
            f"Resume {printable(plan.name)} ({plan.state.upper()}"
            f"{after if done is not None else ''}) in its own directory?\n",
            style="bold",
        )
        body.append(printable(plan.command) + "\n")
        body.append("Detached like a launch: it keeps training when the app quits.")
        for notice in plan.notices:
            body.append("\n" + printable(notice))

        def answered(yes: bool | None) -> None:
            if yes:
                self._resume_worker(plan.run_dir)

        self.push_screen(ConfirmScreen("resume a run", body, "enter: resume"), answered)

    @work(thread=True, group="resume")
    def _resume_worker(self, run_dir: str) -> None:
        try:  # checked again: the run may have changed while the dialog was open
            plan, record = start_resume(run_dir)
        except ResumeError as exc:
            self._from_thread(self.notify, f"Not resumed: {exc}", severity="error", timeout=20)
            return
        self._from_thread(self._resumed, plan, record)

    def _resumed(self, plan: ResumePlan, record: LaunchRecord) -> None:
        self._follow_pid = record.pid
        self.notify(
            f"Resumed {plan.name} (pid {record.pid}); console log {record.console_log}",
            title="resumed",
            timeout=10,
        )
        self.request_refresh()

    def action_preflight(self) -> None:
        """`g`: torch, CUDA and one real matmul on every GPU, in a subprocess."""
        screen = ReportScreen("GPU check", "running torch in a subprocess…")
        self.push_screen(screen)
        self._preflight_worker(screen)

    @work(thread=True, exclusive=True, group="preflight")
    def _preflight_worker(self, screen: ReportScreen) -> None:
        report = gpu_preflight()
        style = "bold green" if report.ok else "bold red"
        lines = preflight_to_text(report).splitlines()
        body = Text(lines[0] + "\n", style=style)
        body.append("\n".join(lines[1:]))
        self.call_from_thread(screen.show, body)

    def action_autostop(self) -> None:
        """`a`: cancel the watcher's autostop for this session, or turn it back on."""
        self.notify(self.autostop_line.toggle(), title="autostop", timeout=10)

    def action_metrics_page(self) -> None:
        self.metrics_pane.next_page()
