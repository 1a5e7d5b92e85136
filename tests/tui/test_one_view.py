"""One run view: the local app and a fleet host show a run with the same screen
(tui.screens.runs_view.RunsView), so the same keys on the same runs draw the same frame,
less what names the host (its bar, its keys in the footer, its chart labels) and the
local cost strip's pointer to `c` (the cost details are the machine's own).

The host is the test's FakeLink (tests/tui/test_fleet.py) fed each step's snapshot JSON of
the local app (the real Collector, the real JSON codec both ways): the frames compare what
the two views make of the same Snapshot, not two clocks.
"""

# ruff: noqa: F811 (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import json

from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.tui.screens.runs_view import RunsView

from .helpers import make_app, wait_for
from .test_fleet import fleet_app, machines  # noqa: F401 (a fixture)
from .test_screen_fit import _screen_text

SIZE = (110, 32)
# each step's keys, pressed in both views: move and show another run, the metrics' next
# page, mark it, the charts (smoothing, y-axis, the epoch cursor, the next panels), back
STEPS = [
    (),
    ("j", "enter"),
    ("m",),
    ("k", "enter"),
    ("space",),
    ("v",),
    ("e", "y"),
    ("right", "left"),
    ("m",),
    ("v",),
    ("space",),
]


def _body(text: str, *, host: str | None) -> list[str]:
    """The frame less the footer (each view's own keys); a host's less its bar (the first
    row) and its name in the chart labels; the local cost strip less its `c` pointer."""
    rows = text.splitlines()[:-1]
    if host is not None:
        rows = [row.replace(f"{host}:", "") for row in rows[1:]]
    return [row.replace("  (c: cost)", "").rstrip() for row in rows]


async def _settle(pilot, app) -> None:
    before = app.snapshot
    app.request_refresh()
    await wait_for(pilot, lambda: app.snapshot is not before)
    await pilot.pause()


async def test_the_same_keys_draw_the_same_frame_locally_and_on_a_fleet_host(runs_root, machines):
    settings = machines["h1"][1]["settings"]
    local = make_app(runs_root, gpus=2, settings=settings)
    frames, docs = [], []
    async with local.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: local.snapshot is not None)
        for keys in STEPS:
            await pilot.press(*keys)
            await _settle(pilot, local)
            assert isinstance(local.screen, RunsView)
            frames.append(_body(_screen_text(local), host=None))
            docs.append(json.loads(json.dumps(snapshot_to_json(local.snapshot))))
    assert len(set(map(tuple, frames))) > 5  # the keys changed what it shows

    app = fleet_app(runs_root, {"h1": machines["h1"]})
    width, height = SIZE
    async with app.run_test(size=(width, height + 1)) as pilot:  # + the host bar
        link = app.fleet["h1"]
        link.update(reachable=True, snapshot=docs[0], connects=1, since=runs_root.now)
        await wait_for(pilot, lambda: app.views.get("h1") is not None)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        screen = app.screen
        for step, (keys, doc, want) in enumerate(zip(STEPS, docs, frames, strict=True)):
            await pilot.press(*keys)
            link.update(snapshot=doc, seq=step)
            await wait_for(pilot, lambda doc=doc: app.views["h1"].state.snapshot is doc)
            await wait_for(pilot, lambda: screen.details() is not None)
            await pilot.pause()
            got = _body(_screen_text(app), host="h1")
            assert got == want, (step, keys, "\n".join(got), "\n".join(want))
