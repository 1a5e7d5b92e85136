"""A host's numbers out of range in the fleet's host view: unknown, and
the view says which (the run's header; the cost strip shows no negative price). FAKE links
as in tests/tui/test_fleet.py, fed the real Collector's snapshot JSON, then altered."""

from __future__ import annotations

import json

from rgpu_tui.tui.screens.runs_view import RunsView

from .helpers import rendered, wait_for
from .test_fleet import bring_up, fleet_app, machines, table_text  # noqa: F401 (a fixture)


async def test_out_of_range_numbers_are_unknown_and_the_header_says_which(runs_root, machines):  # noqa: F811
    app = fleet_app(runs_root, machines)
    live = str(runs_root.root / "live_exp")
    async with app.run_test(size=(100, 30)) as pilot:
        bring_up(app, runs_root, machines, selected={"h1": live})
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        h1 = app.fleet["h1"]
        odd = json.loads(json.dumps(h1.state().snapshot))
        [run] = [r for r in odd["runs"] if r["run_dir"] == live]
        run.update(progress=-3.5, current_epoch=-5, total_epochs=-1, problem=None)
        odd["cost"]["price_per_hour"] = -5
        h1.update(snapshot=odd)
        await wait_for(pilot, lambda: "out of range" in rendered(app.screen.run_header))
        header = rendered(app.screen.run_header)
        assert "from the host: current_epoch out of range (-5)" in header
        assert "-350%" not in header and "-5/" not in header and "?%" in header
        assert "-5" not in rendered(app.screen.cost_strip)
