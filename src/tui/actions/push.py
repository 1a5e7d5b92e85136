"""Pushing to the Hub from the app: `p` and `P`, the confirm dialog, the one queue's events.

A mixin of RgpuApp (tui.app): it uses the app's snapshot, settings, push_queue, push_bar,
notify, push_screen and request_refresh. The push itself is core's (core.hub.push, through
core.hub.push_queue.PushQueue, which RgpuApp creates once).
"""

from __future__ import annotations

import os

from rich.text import Text

from ...core.base.text import printable
from ...core.hub.push import PushRequest
from ...core.hub.push_queue import PushEvent
from ...core.model.snapshot import SelectedRun
from ...core.run.checkpoints import validity_text
from ...core.run.hub_target import ARTIFACTS_REQUEST
from ..messages import PushUpdate
from ..screens.dialogs import ConfirmScreen, PickScreen


class PushActions:
    """The app's push keys and the push queue's events (mixed into RgpuApp)."""

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
        width = max((len(c.name) for c in sel.checkpoints), default=0)
        choices = [(c.name, f"{c.name:<{width}}  {validity_text(c)}") for c in sel.checkpoints]
        choices.append((ARTIFACTS_REQUEST, "small artifacts only (status, metrics, config)"))
        title = "push which file?"
        if sel.checkpoints_not_listed:
            title += f" ({sel.checkpoints_not_listed} older not listed)"

        def picked(file: str | None) -> None:
            if file:
                self._confirm_push(sel, file)

        self.push_screen(PickScreen(title, choices, default=sel.push_default), picked)

    def _selected_run(self) -> SelectedRun | None:
        snap = self.snapshot
        if snap is None or snap.selected is None:
            self.notify("No run selected.", severity="warning")
            return None
        return snap.selected

    def _confirm_push(self, sel: SelectedRun, file: str) -> None:
        """The confirm dialog, from what the Snapshot says of the file and its target
        (core.run.hub_target.push_target: the push itself goes where it says)."""
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
            if c.valid is False:  # torn: the push would refuse it (core.run.torch_checkpoint)
                self._push_refused(f"not pushed: {c.invalid}")
                return
            # printable before Text, which would drop a BEL or CR unseen
            body.append(printable(c.path) + "\n", style="bold")
            body.append(printable(validity_text(c)))
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
