"""Acting on a host through its agent: the commands a host's run source sends (its `s`,
`r`, and the push the run view's `p` and `P` dialogs confirm: tui.fleet.host_screen.HostRuns),
and what comes back: progress in the push bar and the stop report, results as
notices.

Every command is core.fleet.fleet.HostLink.send: a line to the agent, whose Future ends in
the agent's result (or in an error made here when the link is down or drops). Its
callbacks run on the link's thread and only post a message. What the agent does is the
same core code as the local keys, with that machine's settings and its own Hub token:
no token, no file crosses the link.
"""

from __future__ import annotations

import os

from ...core.base.text import printable
from ...core.hub.push import PushRequest
from ...core.launch.resume import ResumePlan
from ...core.launch.stop import StopResult
from ...core.model.snapshot_from_json import SnapshotJsonError, dataclass_from_json
from ..actions.runs import resume_body, stop_phase_text, stop_summary
from ..screens.dialogs import ConfirmScreen, ReportScreen
from .messages import CommandAnswered


class FleetCommands:
    """The fleet app's side (mixed into FleetApp): send, and handle what comes back."""

    def send_command(self, host: str, cmd: dict, kind: str, context=None) -> None:
        """Send `cmd` to `host`'s agent; its result comes back as a CommandAnswered of
        `kind` (progress lines as `kind`-progress). A select or a chart is not answered
        here: the snapshot shows it, and it is sent again after a reconnect."""
        link = self.link(host)
        if link is None:
            return
        if kind in ("select", "chart"):
            link.send(cmd)
            return

        def progressed(line: dict) -> None:
            self.post_from_thread(CommandAnswered(host, kind + "-progress", line, context))

        def answered(future) -> None:
            self.post_from_thread(CommandAnswered(host, kind, future.result(), context))

        link.send(cmd, progressed).add_done_callback(answered)

    def send_push(self, host: str, req: PushRequest, name: str) -> None:
        self._pushes[host] = self._pushes.get(host, 0) + 1
        cmd = {"cmd": "push", "run": req.run_dir, "file": req.file}
        self.send_command(host, cmd, "push", (req.file, req.run_dir))

    def send_stop(self, host: str, run_dir: str, name: str) -> None:
        screen = ReportScreen(f"stopping {name} on {host}", "sending SIGINT…")
        self._stop_screen = screen
        self.push_screen(screen)
        self.send_command(host, {"cmd": "stop", "run": run_dir}, "stop", (name, screen))

    def on_command_answered(self, message: CommandAnswered) -> None:
        handler = {
            "push-progress": self._push_progress,
            "push": self._pushed,
            "stop-progress": self._stop_progress,
            "stop": self._stopped,
            "resume-check": self._resume_planned,
            "resume": self._resumed,
        }.get(message.kind)
        if handler is not None:
            handler(message.host, message.answer, message.context)

    # -- push ---------------------------------------------------------------------

    def _push_bar(self, host: str):
        screen = self.host_screen
        return screen.push_bar if screen is not None and screen.host == host else None

    def _push_progress(self, host: str, line: dict, context) -> None:
        bar = self._push_bar(host)
        if bar is None:
            return
        file, run_dir = context
        done, total = line.get("done"), line.get("total")
        phase = line.get("phase") if isinstance(line.get("phase"), str) else None
        queued = max(self._pushes.get(host, 1) - 1, 0)
        bar.show(file, run_dir, phase, _count(done), _count(total), queued)

    def _pushed(self, host: str, answer: dict, context) -> None:
        left = self._pushes[host] = max(self._pushes.get(host, 1) - 1, 0)
        bar = self._push_bar(host)
        if bar is not None:
            bar.show(None, None, None, 0, 0, left)
        file, run_dir = context
        run = os.path.basename(run_dir)
        r = answer.get("push") if isinstance(answer.get("push"), dict) else {}
        for notice in r.get("notices") or ():
            self.notify(str(notice), title=f"push on {host}", severity="warning", timeout=15)
        repo = r.get("repo") or "?"
        if answer.get("ok") and r.get("skipped_unchanged"):
            self.notify(f"{r.get('file') or file} of {run} is unchanged on {repo}: no new commit.")
        elif answer.get("ok"):
            self.notify(
                f"Pushed {r.get('file') or file} of {run} on {host} to {repo}\n"
                f"{r.get('commit_url') or ''}",
                title="pushed",
                timeout=10,
            )
        else:
            why = answer.get("error") or r.get("error") or "push failed"
            self.notify(str(why), title=f"push failed on {host}", severity="error", timeout=20)

    # -- stop ---------------------------------------------------------------------

    def _stop_progress(self, host: str, line: dict, context) -> None:
        _name, screen = context
        phase = line.get("phase")
        left = line.get("seconds_left")
        if screen in self.screen_stack and isinstance(phase, str):
            left = left if isinstance(left, (int, float)) and not isinstance(left, bool) else None
            screen.show(stop_phase_text(phase, left))

    def _stopped(self, host: str, answer: dict, context) -> None:
        name, screen = context
        try:
            r = dataclass_from_json(StopResult, answer.get("stop"))
        except SnapshotJsonError:  # refused before it began (no such run, link down)
            r = StopResult(ok=False, final_state=None, error=answer.get("error") or "?")
        ok = bool(answer.get("ok")) and r.ok
        summary = stop_summary(name, ok, r.signals_sent, r.final_state, r.error)
        if ok:
            self.notify(f"{summary} (on {host})", title="stopped", timeout=10)
        else:
            self.notify(summary, title=f"stop failed on {host}", severity="error", timeout=20)
        if screen in self.screen_stack:
            screen.show(summary)

    # -- resume -------------------------------------------------------------------

    def _resume_planned(self, host: str, answer: dict, name) -> None:
        try:
            plan = dataclass_from_json(ResumePlan, answer.get("plan"))
        except SnapshotJsonError:
            plan = None
        if not answer.get("ok") or plan is None:
            why = answer.get("error") or "the agent sent no plan"
            self.notify(f"Not resumed on {host}: {why}", severity="error", timeout=15)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                cmd = {"cmd": "resume", "run": plan.run_dir}
                if plan.from_name:  # the checkpoint the dialog showed, not a newer look's
                    cmd["from"] = plan.from_name
                self.send_command(host, cmd, "resume", plan.name)

        body = resume_body(plan)
        body.append(f"\nOn {printable(host)}, through its agent.", style="dim")
        self.push_screen(ConfirmScreen("resume a run", body, "enter: resume"), answered)

    def _resumed(self, host: str, answer: dict, name) -> None:
        if not answer.get("ok"):
            why = answer.get("error") or "?"
            self.notify(f"Not resumed on {host}: {why}", severity="error", timeout=20)
            return
        launch = answer.get("launch") if isinstance(answer.get("launch"), dict) else {}
        self.notify(
            f"Resumed {name} on {host} (pid {launch.get('pid', '?')}); console log "
            f"{launch.get('console_log', '?')}",
            title="resumed",
            timeout=10,
        )


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
