"""The fleet's side of the charts: the runs marked on every host, and which charts each
host's agent carries (its `chart` command, core.fleet.agent).

Marks are (host, run_dir) pairs, at most six over all hosts, kept while the fleet runs. A
host's agent carries charts only while a host's full view shows them (its chart view or
compare table is open): the runs marked on that host, or, with no mark anywhere, the
host's run on screen. Otherwise it is asked for none, so the link costs what it did. A
command is sent again after each reconnect.
"""

from __future__ import annotations

from ...core.model.snapshot import Snapshot
from ...core.picture.charts import MAX_RUNS, ChartRequest
from ...core.render.chart_layout import ShownRun, run_colours, shown_run


def mark_key(host: str, run_dir: str) -> str:
    return f"{host}:{run_dir}"


class FleetCharts:
    """A mixin of FleetApp: `marks`, `toggle_mark()`, `sync_charts()`, `shown_runs_for()`."""

    def init_charts(self) -> None:
        self.marks: list[tuple[str, str]] = []
        self._chart_sent: dict[str, tuple] = {}  # host -> (connects, request sent)

    def chart_requests(self) -> dict[str, ChartRequest | None]:
        """What each host's agent should carry now."""
        screen = self.host_screen
        wanted = screen is not None and screen.is_mounted and screen.charts_wanted()
        out: dict[str, ChartRequest | None] = {name: None for name in self.links}
        if not wanted:
            return out
        picked = screen.chart_metrics()
        pairs = list(self.marks)
        if not pairs and screen.selected is not None:
            pairs = [(screen.host, screen.selected)]
        for host in out:
            runs = [run for h, run in pairs if h == host]
            if runs:
                out[host] = ChartRequest.of(runs, picked)
        return out

    def sync_charts(self) -> None:
        """Send each host the chart command it needs, once per connection and request."""
        for host, request in self.chart_requests().items():
            link = self.link(host)
            if link is None:
                continue
            state = link.state()
            sent = self._chart_sent.get(host)
            if not state.reachable:
                continue
            if sent is None and request is None:
                continue  # the agent starts with no charts
            key = (state.connects, request)
            if sent == key:
                continue
            self._chart_sent[host] = key
            cmd = {"cmd": "chart", **(request.to_json() if request else {"runs": []})}
            self.send_command(host, cmd, "chart")

    def toggle_mark(self, host: str, run_dir: str) -> str | None:
        """Mark (host, run_dir) or unmark it, at most MAX_RUNS over all hosts; what to
        say, or None."""
        pair = (host, run_dir)
        if pair in self.marks:
            self.marks.remove(pair)
        elif len(self.marks) >= MAX_RUNS:
            return f"at most {MAX_RUNS} runs are compared: unmark one first (space)"
        else:
            self.marks.append(pair)
        return None

    def pair_colours(self, pairs: list[tuple[str, str]]) -> dict[str, str]:
        """mark_key -> colour, by host and run name (the same wherever the root is)."""
        names = []
        for host, run_dir in pairs:
            view = self.views.get(host)
            info = view.snapshot.run(run_dir) if view is not None and view.snapshot else None
            names.append(f"{host}:{info.name if info is not None else run_dir}")
        return run_colours([mark_key(h, r) for h, r in pairs], names)

    def host_marks(self, host: str) -> dict[str, str]:
        """run_dir -> colour of the runs marked on `host` (the runs list's dots)."""
        colours = self.pair_colours(self.marks)
        return {r: colours[mark_key(h, r)] for h, r in self.marks if h == host}

    def chart_pairs(self) -> list[tuple[str, str]]:
        screen = self.host_screen
        if self.marks:
            return list(self.marks)
        if screen is not None and screen.selected is not None:
            return [(screen.host, screen.selected)]
        return []

    def shown_runs_for(self) -> list[ShownRun]:
        """The ShownRuns of the marked runs (else the open host's run on screen), from each
        host's newest snapshot; a run whose chart has not come yet is left out."""
        pairs = self.chart_pairs()
        colours = self.pair_colours(pairs)
        out = []
        for host, run_dir in pairs:
            view = self.views.get(host)
            snap: Snapshot | None = view.snapshot if view is not None else None
            if snap is None:
                continue
            key = mark_key(host, run_dir)
            run = shown_run(key, run_dir, snap, colours[key], host=host)
            if run is not None:
                out.append(run)
        return out
