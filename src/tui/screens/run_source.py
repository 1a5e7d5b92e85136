"""What a run view (tui.screens.runs_view) is fed by and acts through: a *run source*.

Two sources exist: the local machine (tui.actions.local.LocalRuns: core's collector feeds
it, core's calls act) and one fleet host (tui.fleet.host_screen.HostRuns: the host's agent link
feeds it, agent commands act). The view is the same for both; everything that differs
between them is answered here, by the source, never by a list kept in the view:

- its keys (`keys()`: what the footer shows and the palette lists, in order);
- the panes of its own above the shared ones (`head()`), and its autostop line and cost
  strip (each with `show(cost, plan)` / `show(cost)`);
- which run it shows, its details and the header's message (`default_run`, `highlight`, `shown_run`,
  `details`, `message`), the marks and the charts (`toggle_mark`, `mark_colours`,
  `prune_marks`, `shown_runs`, `charts_changed`), a new selection (`picked`);
- what each key does (`push_choices`, `submit_push`, `stop`, `resume`, `launch`, `cost`,
  `preflight`, `autostop`): a key the source cannot carry out is answered by that source
  (a fleet host says where it is done), not refused by the view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.binding import Binding
    from textual.widget import Widget

    from ...core.hub.push import PushRequest
    from ...core.model.snapshot import RunInfo, SelectedRun, Snapshot
    from ...core.render.chart_layout import ShownRun
    from .runs_view import RunsView


class RunSource(Protocol):
    host: str | None  # a fleet host's name; None for this machine
    rings: bool  # the idle banner rings the terminal bell when it appears

    def keys(self) -> list[Binding]: ...

    def head(self) -> list[Widget]: ...

    def autostop_pane(self) -> Widget: ...

    def cost_pane(self) -> Widget: ...

    def attach(self, view: RunsView) -> None:
        """The view this source feeds (set once, when the view is made)."""

    def mounted(self) -> None:
        """The view is on screen: show what the source has (or wait for it)."""

    def closed(self) -> None:
        """The view is closing (esc, or the app ends)."""

    # -- what the view shows ------------------------------------------------------------

    def default_run(self, snap: Snapshot) -> str | None: ...

    def highlight(self, snap: Snapshot, selected: str | None) -> str | None:
        """The run the runs list highlights after a new snapshot."""

    def shown_run(self, snap: Snapshot, selected: str | None) -> RunInfo | None: ...

    def details(self, snap: Snapshot, selected: str | None) -> SelectedRun | None: ...

    def message(
        self, snap: Snapshot, run: RunInfo | None, details: SelectedRun | None
    ) -> str | None: ...

    def picked(self, run_dir: str) -> None:
        """The user selected another run (the view's `selected` is already it)."""

    def toggle_mark(self, run_dir: str) -> str | None: ...

    def mark_colours(self, snap: Snapshot) -> dict[str, str]: ...

    def prune_marks(self, snap: Snapshot) -> bool: ...

    def shown_runs(self) -> list[ShownRun]: ...

    def charts_changed(self) -> None: ...

    # -- what the keys do ---------------------------------------------------------------

    def no_details(self, snap: Snapshot | None, selected: str | None) -> str: ...

    def push_choices(
        self, sel: SelectedRun
    ) -> tuple[str, list[tuple[str, str]], str | None] | None: ...

    def submit_push(self, req: PushRequest) -> None: ...

    def stop(self, run: RunInfo) -> None: ...

    def resume(self, run: RunInfo) -> None: ...

    def launch(self) -> None: ...

    def cost(self) -> None: ...

    def preflight(self) -> None: ...

    def autostop(self) -> None: ...
