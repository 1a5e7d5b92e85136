"""Launching, stopping, resuming and checking the GPUs on this machine: `n`, `s`, `r`, `g`.

LocalRunActions does the work of the local run source (tui.actions.local) with the app's
snapshot, settings, collector, notify, push_screen and request_refresh, and tells the source
which run to follow (the one the view selects once it appears). The work is core's
(core.launch.launch through the launch form, core.launch.stop, core.launch.resume,
core.launch.gpu_probe), in worker threads.
"""

from __future__ import annotations

import os

from rich.text import Text

from ...core.base.formatting import fmt_duration
from ...core.base.text import printable
from ...core.launch.clone import Prefill, prefill
from ...core.launch.gpu_probe import gpu_preflight, preflight_to_text
from ...core.launch.resume import ResumeError, ResumePlan, choose, plan_resume, start_resume
from ...core.launch.stop import stop_run
from ...core.model.snapshot import RunInfo
from ...core.records.launch_records import LaunchRecord
from ..messages import StopProgress
from ..screens.dialogs import ConfirmScreen, PickScreen, ReportScreen
from ..screens.launch import LaunchScreen, launch_defaults

STOP_PHASE_TEXT = {
    "sigint": "SIGINT sent; SIGTERM in {s}",
    "sigterm": "SIGTERM sent; SIGKILL in {s}",
    "sigkill": "SIGKILL sent; waiting {s} for the process to end",
    "ended": "the process has ended",
}


def stop_phase_text(phase: str, seconds_left: float | None) -> str:
    """A stop's progress line (core.launch.stop's phases), for the stop's report dialog."""
    text = STOP_PHASE_TEXT.get(phase, phase + " {s}")
    return text.format(s=fmt_duration(seconds_left) if seconds_left is not None else "")


def stop_summary(name: str, ok: bool, signals_sent, final_state: str | None, error) -> str:
    """The notice a stop ends with (a core.launch.stop.StopResult's fields)."""
    if not ok:
        return f"{name} not stopped: {error}"
    sent = ", ".join(signals_sent) or "no signal needed"
    reads = {
        "stopped": "shown as STOPPED, its epochs kept (r resumes it)",
        "dead": "its status.json still says running: shown as DEAD",
        "failed": "libreyolo recorded it as failed",
    }.get(final_state or "", f"it reads {final_state or '?'}")
    return f"{name} stopped ({sent}); {reads}"


def resume_body(plan: ResumePlan) -> Text:
    """The resume dialog's body: the run, where it stopped, the checkpoint it resumes from
    (its epoch, the epochs trained again), the exact command, the torn files kept aside."""
    body = Text()
    done = plan.completed_epochs
    after = f" after epoch {done}" + (f"/{plan.total_epochs}" if plan.total_epochs else "")
    body.append(
        f"Resume {printable(plan.name)} ({plan.state.upper()}"
        f"{after if done is not None else ''}) in its own directory?\n",
        style="bold",
    )
    body.append(printable(plan.command) + "\n")
    body.append(printable(plan.from_text()[:1].upper() + plan.from_text()[1:]) + ".\n")
    if plan.set_aside:
        names = ", ".join(printable(os.path.basename(p)) for p in plan.set_aside)
        body.append(f"Torn, kept aside as NAME.torn-TIME when it starts: {names}.\n")
    body.append("Detached like a launch: it keeps training when the app quits.")
    for notice in plan.notices:
        body.append("\n" + printable(notice))
    return body


def resume_choices(plan: ResumePlan) -> list[tuple[str, str]]:
    """The checkpoints a resume may start from, as the dialog lists them."""
    width = max((len(c.name) for c in plan.candidates), default=0)
    return [(c.name, f"{c.name:<{width}}  {c.describe()}") for c in plan.candidates]


class LocalRunActions:
    """The local machine's launch, stop, resume and GPU-check keys: the work of
    tui.actions.local.LocalRuns's `launch`, `stop`, `resume` and `preflight`, in the app's
    worker threads."""

    def __init__(self, app, follow) -> None:
        self.app = app
        self._follow_run = follow  # follow(pid): select the run once it appears
        # what the launch form held when it last closed, by the run it was opened on
        # (this session only)
        self.launch_values: dict = {}
        self._stop_screen: ReportScreen | None = None

    def _gpu_count(self) -> int | None:
        snap = self.app.snapshot
        gpus = snap.gpus if snap else None
        if gpus is None or not gpus.available or gpus.source == "fake":
            return 0  # simulated GPUs cannot train: the form proposes the CPU
        return len(gpus.devices)

    def launch(self, selected: RunInfo | None, runs) -> None:
        root = self.app.collector.runs.root
        self.app.run_worker(
            lambda: self._prefill_worker(root, selected, runs),
            thread=True, exclusive=True, group="launch-prefill",
        )  # fmt: skip

    def _prefill_worker(self, root: str, selected: RunInfo | None, runs) -> None:
        key = selected.run_dir if selected is not None else None
        got = None
        if key not in self.launch_values:
            try:
                got = prefill(root, selected, runs)
            except Exception:  # a reader bug: the form opens with its defaults
                got = None
        self._from_thread(self._open_launch_form, root, key, got)

    def _open_launch_form(self, root: str, key: str | None, got: Prefill | None) -> None:
        app = self.app
        if any(isinstance(s, LaunchScreen) for s in app.screen_stack):
            return  # `n` twice: one form
        gpu_count = self._gpu_count()
        values = launch_defaults(app.settings, root, gpu_count)
        memory = self.launch_values
        source = None
        if key in memory:
            values, source = dict(memory[key]), "as you left it"
        elif got is not None:
            values.update(got.values)
            source = got.source

        def remember(typed: dict[str, str]) -> None:
            memory[key] = typed

        def launched(record: LaunchRecord | None) -> None:
            if record is not None:
                self._follow(record, f"Started {record.name}", "launched")

        form = LaunchScreen(values, app.settings, gpu_count, source=source, on_values=remember)
        app.push_screen(form, launched)

    def stop(self, run: RunInfo) -> None:
        """`s`: SIGINT to the run's process group, SIGTERM and SIGKILL later if needed."""
        s = self.app.settings
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
                self.app.push_screen(screen)
                run_dir, name = run.run_dir, run.name
                self.app.run_worker(
                    lambda: self._stop_worker(run_dir, name), thread=True, group="stop"
                )

        self.app.push_screen(ConfirmScreen("stop a run", body, "enter: stop"), answered)

    def _stop_worker(self, run_dir: str, name: str) -> None:
        app = self.app

        def progress(phase: str, seconds_left: float | None) -> None:
            app.post_message(StopProgress(name, phase, seconds_left, None))

        result = stop_run(run_dir, app.settings, on_progress=progress, by="app")
        app.post_message(StopProgress(name, "done", None, result))

    def stop_progress(self, message: StopProgress) -> None:
        app = self.app
        screen = self._stop_screen if self._stop_screen in app.screen_stack else None
        if message.result is None:
            if screen is not None:
                screen.show(stop_phase_text(message.phase, message.seconds_left))
            return
        r = message.result
        summary = stop_summary(message.name, r.ok, r.signals_sent, r.final_state, r.error)
        if r.ok:
            app.notify(summary, title="stopped", timeout=10)
        else:
            app.notify(summary, title="stop failed", severity="error", timeout=20)
        if screen is not None:
            screen.show(summary)
        app.request_refresh()

    def resume(self, run: RunInfo) -> None:
        """The checks (core.launch.resume.plan_resume) in a thread, then the dialog."""
        run_dir = run.run_dir
        self.app.run_worker(
            lambda: self._resume_plan_worker(run_dir),
            thread=True, exclusive=True, group="resume-plan",
        )  # fmt: skip

    def _resume_plan_worker(self, run_dir: str) -> None:
        try:
            plan = plan_resume(run_dir)
        except ResumeError as exc:
            self._from_thread(self.app.notify, f"Not resumed: {exc}", severity="error", timeout=15)
            return
        self._from_thread(self._confirm_resume, plan)

    def _from_thread(self, callback, *args, **kwargs) -> None:
        try:
            self.app.call_from_thread(callback, *args, **kwargs)
        except RuntimeError:  # the app is closing: nobody to tell
            pass

    def _confirm_resume(self, plan: ResumePlan) -> None:
        """The resume dialog: the checkpoints it may start from (epoch, size, validity; the
        newest complete one highlighted), the command for the highlighted one."""

        def describe(name: str) -> Text:
            try:
                return resume_body(choose(plan, name))
            except ResumeError as exc:
                return Text(printable(str(exc)))

        def answered(name: str | None) -> None:
            if name:
                run_dir = plan.run_dir
                self.app.run_worker(
                    lambda: self._resume_worker(run_dir, name), thread=True, group="resume"
                )

        dialog = PickScreen(
            "resume a run: from which checkpoint?",
            resume_choices(plan),
            default=plan.from_name,
            body=resume_body(plan),
            describe=describe,
            disabled=[c.name for c in plan.candidates if not c.valid],
            keys="enter: resume from it",
        )
        self.app.push_screen(dialog, answered)

    def _resume_worker(self, run_dir: str, choice: str | None = None) -> None:
        try:  # checked again: the run may have changed while the dialog was open
            plan, record = start_resume(run_dir, choice=choice)
        except ResumeError as exc:
            self._from_thread(self.app.notify, f"Not resumed: {exc}", severity="error", timeout=20)
            return
        self._from_thread(self._resumed, plan, record)

    def _resumed(self, plan: ResumePlan, record: LaunchRecord) -> None:
        self._follow(record, f"Resumed {plan.name}", "resumed")

    def _follow(self, record: LaunchRecord, what: str, title: str) -> None:
        """A run just started (launched or resumed): say so, and select it once it shows."""
        self._follow_run(record.pid)
        self.app.notify(
            f"{what} (pid {record.pid}); console log {record.console_log}",
            title=title,
            timeout=10,
        )
        self.app.request_refresh()

    def preflight(self) -> None:
        """`g`: torch, CUDA and one real matmul on every GPU, in a subprocess."""
        screen = ReportScreen("GPU check", "running torch in a subprocess…")
        self.app.push_screen(screen)
        self.app.run_worker(
            lambda: self._preflight_worker(screen),
            thread=True, exclusive=True, group="preflight",
        )  # fmt: skip

    def _preflight_worker(self, screen: ReportScreen) -> None:
        report = gpu_preflight()
        style = "bold green" if report.ok else "bold red"
        lines = preflight_to_text(report).splitlines()
        body = Text(lines[0] + "\n", style=style)
        body.append("\n".join(lines[1:]))
        self.app.call_from_thread(screen.show, body)
