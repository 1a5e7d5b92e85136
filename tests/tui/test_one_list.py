"""One list of runs: the app, `rgpu-tui snapshot`, `rgpu-tui agent` and
`rgpu-tui watch` build it the same way from the same files. A run launched from the app,
killed, resumed and killed again is one row everywhere; its launch is never a "FAIL exp
(launch)" of its own."""

from __future__ import annotations

import time
from pathlib import Path

from support.cli_env import clean_env
from support.resumed_run import killed_and_resumed
from support.run_lists import agent_list, snapshot_list, watch_env, watch_list

from rgpu_tui.tui.app import RgpuApp

from .helpers import rendered, wait_for


async def test_the_app_snapshot_agent_and_watch_list_the_same_one_run(tmp_path: Path) -> None:
    project = tmp_path / "runs"
    t0 = time.time() - 3600
    run = killed_and_resumed(project, t0, exits=False)  # an app opened later: no exits
    env = clean_env(tmp_path)
    want = {(str(run), "exp")}
    app = RgpuApp(root=str(project), interval=0.2, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.runs)
        shown = {(r.run_dir, r.name) for r in app.snapshot.runs}
        await wait_for(
            pilot, lambda: "elapsed 1m10s in 2 attempts" in rendered(app.view.run_header)
        )
    assert shown == want
    assert snapshot_list(project, env) == want
    assert agent_list(project, env) == want
    assert watch_list(project, watch_env(env, tmp_path)) == {str(run)}
