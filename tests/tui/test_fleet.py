"""The fleet screen under Pilot: the hosts table and a host's full view, fed recorded
snapshot JSON (the real Collector's snapshots of real run folders, through
snapshot_to_json) by FAKE links.

FAKE: `FakeLink` stands in for core.fleet.fleet.HostLink (state(), send() -> Future,
on_change from another thread). The real link over the real OpenSSH client is tested
end to end in tests/e2e/test_fleet_ssh.py (the link) and tests/e2e/test_fleet_tui.py
(this screen in tmux); here the fake lets a test say exactly what a host sends and
answers, and see every command the screen sends.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes
from textual.widgets import OptionList

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.fleet.fleet import HostState
from rgpu_tui.core.launch.resume import ResumePlan
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.tui.fleet.app import FleetApp
from rgpu_tui.tui.screens.dialogs import ConfirmScreen, PickScreen, ReportScreen
from rgpu_tui.tui.screens.runs_view import RunsView

from .conftest import iso
from .helpers import make_app, notices, rendered, wait_for

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"


class FakeLink:
    """FAKE core.fleet.fleet.HostLink (see the module doc)."""

    def __init__(self, name: str, on_change, root: str) -> None:
        self.name = name
        self._on_change = on_change
        self._state = HostState(
            name=name, root=root, reachable=False, error=None, since=None, snapshot=None,
            seq=-1, version=None, last_line_at=None, connects=0, bytes_in=0, settled=False,
        )  # fmt: skip
        self.sent: list[dict] = []
        self.waiting: list[tuple[dict, Future, object]] = []

    def state(self) -> HostState:
        return self._state

    def update(self, **changes) -> None:
        """The link's thread saw something: on_change from a thread of its own."""
        self._state = dataclasses.replace(self._state, settled=True, **changes)
        t = threading.Thread(target=self._on_change, args=(self,))
        t.start()
        t.join()

    def send(self, cmd: dict, on_progress=None) -> Future:
        self.sent.append(cmd)
        future: Future = Future()
        if not self._state.reachable:
            future.set_result({"result": 1, "ok": False, "error": f"{self.name} is not reachable"})
        else:
            self.waiting.append((cmd, future, on_progress))
        return future

    def answer(self, cmd_name: str, result: dict, progress: list[dict] = ()) -> dict:
        """Answer the oldest command of that name, from another thread; returns it."""
        for i, (cmd, future, on_progress) in enumerate(self.waiting):
            if cmd["cmd"] == cmd_name:
                del self.waiting[i]

                def reply(on_progress=on_progress, future=future) -> None:
                    for line in progress:
                        on_progress({"progress": 1, **line})
                    future.set_result({"result": 1, **result})

                t = threading.Thread(target=reply)
                t.start()
                t.join()
                return cmd
        raise AssertionError(f"no {cmd_name} command waiting: {self.sent}")


class FakeFleet:
    def __init__(self, on_change, hosts: dict[str, str]) -> None:
        self.links = [FakeLink(name, on_change, root) for name, root in hosts.items()]
        self.started = False

    def start(self) -> None:
        self.started = True

    def __getitem__(self, name: str) -> FakeLink:
        return next(link for link in self.links if link.name == name)


def record(root: Path, now: float, selected: str | None = None, **kw) -> dict:
    """A snapshot JSON document as the agent sends it (the real Collector, to JSON)."""
    collector = Collector(str(root), log_keep=50, **kw)
    try:
        collector.refresh(now - 120, selected)  # two looks: the idle clock counts
        snap = collector.refresh(now, selected)
    finally:
        collector.close()
    if selected is None:
        snap = dataclasses.replace(snap, selected=None)
    return json.loads(json.dumps(snapshot_to_json(snap)))


def _gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def machines(runs_root, tmp_path):
    """h1: the tui tests' root (running, failed, completed; 2 simulated GPUs, $2.50/h);
    h2: a dead run and a completed one (1 GPU, idle, $1.50/h); h3: refuses the connection."""
    live = runs_root.root / "live_exp"
    (live / "weights").mkdir()
    (live / "weights" / "best.pt").write_bytes(checkpoint_bytes(200_000, seed=1))
    h2 = tmp_path / "h2runs"
    h2.mkdir()
    shutil.copytree(FIXTURE_RUN, h2 / "done", ignore=shutil.ignore_patterns("val", "weights"))
    crashed = h2 / "crashed"
    crashed.mkdir()
    (crashed / "status.json").write_text(
        json.dumps(
            {"state": "running", "pid": _gone_pid(), "started_at": iso(runs_root.t0),
             "updated_at": iso(runs_root.now - 30), "total_epochs": 10, "current_epoch": 4}
        )
    )  # fmt: skip
    settings = Settings(price_per_hour=2.5, hub_repo="alice/exp")
    return {
        "h1": (runs_root.root, dict(fake_gpus=2, settings=settings)),
        "h2": (h2, dict(fake_gpus=1, settings=Settings(price_per_hour=1.5))),
        "h3": (tmp_path / "nowhere", None),
    }


def fleet_app(runs_root, machines) -> FleetApp:
    roots = {name: str(root) for name, (root, _kw) in machines.items()}
    return FleetApp(lambda on_change: FakeFleet(on_change, roots), clock=runs_root.clock)


def bring_up(app: FleetApp, runs_root, machines, selected: dict | None = None) -> None:
    for name, (root, kw) in machines.items():
        link = app.fleet[name]
        if kw is None:
            link.update(
                error="ssh: connect to host 127.0.0.1 port 9: Connection refused",
                since=runs_root.now - 125,
            )
            continue
        doc = record(root, runs_root.now, (selected or {}).get(name), **kw)
        link.update(reachable=True, snapshot=doc, since=runs_root.now - 600, connects=1,
                    version="0.1.0", seq=0)  # fmt: skip


def table_text(app: FleetApp) -> str:
    return rendered(app.table)


async def test_the_table_lists_every_host_with_its_runs_money_and_why_one_is_down(
    runs_root, machines
):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.fleet.started
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        rows = {line.split()[1] if line.startswith(">") else line.split()[0]: line
                for line in table_text(app).splitlines()[1:4]}  # fmt: skip
        assert set(rows) == {"h1", "h2", "h3"}
        h1 = rows["h1"].split()
        # 2 GPUs, simulated (said so), their mean utilisation
        assert h1[:5] == [">", "h1", "yes", "2", "sim"] and h1[5].endswith("%")
        assert "1 RUN 1 FAIL 1 DONE" in rows["h1"] and "2.50" in rows["h1"]
        # idle 2 minutes at $1.50/h: 5 cents burnt
        assert "1 DEAD 1 DONE" in rows["h2"] and rows["h2"].split()[-2:] == ["1.50", "$0.05"]
        assert "no 2m05s" in rows["h3"]
        assert "ssh: connect to host 127.0.0.1 port 9: Connection refused" in rows["h3"]
        lines = table_text(app).splitlines()
        assert lines[-1] == (
            "3 machines (2 reachable)  3 GPUs (3 simulated)  $4.00/h  idle 1: $1.50/h"
        )
        assert all(len(line) <= 78 for line in lines)  # 80 columns, the padding aside
        # the colours: DEAD and FAIL stand out
        row_h2 = next(r for r in app.table._rows if "DEAD" in r.plain)
        dead_at = row_h2.plain.index("DEAD")
        assert any(s.start == dead_at and "red" in str(s.style) for s in row_h2.spans)
        # the host comes back: the row follows, "no" goes
        app.fleet["h3"].update(reachable=True, error=None, snapshot=record(
            machines["h2"][0], runs_root.now, fake_gpus=1), since=runs_root.now)  # fmt: skip
        await wait_for(pilot, lambda: "Connection refused" not in table_text(app))
        assert "4 GPUs" in table_text(app).splitlines()[-1]
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_delta_repaints_only_its_hosts_row(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(100, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        before = list(app.table._keys)
        doc = json.loads(json.dumps(app.fleet["h2"].state().snapshot))
        doc["gpus"]["devices"][0]["util_percent"] = 97.0
        app.fleet["h2"].update(snapshot=doc)
        await wait_for(pilot, lambda: " 97%" in table_text(app))
        after = app.table._keys
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        h2_row = next(i for i, k in enumerate(after) if k[0].split()[0] == "h2")
        assert changed == [h2_row]


async def test_enter_opens_the_hosts_full_view_and_esc_comes_back(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("j", "enter")  # h2
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        screen = app.screen
        assert screen.host == "h2"
        h2 = app.fleet["h2"]
        await wait_for(pilot, lambda: screen.runs_list.option_count == 2)
        names = [str(screen.runs_list.get_option_at_index(i).prompt) for i in range(2)]
        assert [n.split()[-1] for n in names] == ["crashed", "done"]
        assert "DEAD" in names[0]
        # the newest run is selected on the agent: its details come with the next line
        newest = str(machines["h2"][0] / "crashed")
        assert h2.sent == [{"cmd": "select", "run": newest}]
        assert rendered(screen.log_title).startswith("─ log ─")  # no log until it comes
        h2.answer("select", {"ok": True, "error": None, "seq": 1})
        h2.update(snapshot=record(machines["h2"][0], runs_root.now, newest, fake_gpus=1))
        await wait_for(pilot, lambda: "fetching" not in rendered(screen.run_header))
        assert "DEAD  crashed" in rendered(screen.run_header)
        assert "h2  reachable  rgpu-tui 0.1.0" in rendered(screen.source.host_bar)
        # another run: another select
        await pilot.press("j", "enter")
        done = str(machines["h2"][0] / "done")
        await wait_for(pilot, lambda: h2.sent[-1] == {"cmd": "select", "run": done})
        h2.update(snapshot=record(machines["h2"][0], runs_root.now, done, fake_gpus=1))
        await wait_for(pilot, lambda: "log  train.log" in rendered(screen.log_title))
        assert "Training complete" in "\n".join(str(x) for x in screen.log_pane.lines)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RunsView))
        assert h2.sent[-1] == {"cmd": "select", "run": None}  # the table's cost again
        assert app.host_screen is None
        await pilot.press("enter")  # the cursor is still on h2
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_reconnect_selects_again_and_the_bar_says_when_it_is_down(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")  # h1
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        h1 = app.fleet["h1"]
        await wait_for(pilot, lambda: len(h1.sent) == 1)
        assert "fetching its metrics and log from h1" in rendered(app.screen.run_header)
        live = str(runs_root.root / "live_exp")
        h1.update(snapshot=record(runs_root.root, runs_root.now, live, **machines["h1"][1]))
        await wait_for(pilot, lambda: app.screen.details() is not None)
        h1.update(reachable=False, error="the agent ended (status 137)", since=runs_root.now - 3)
        await wait_for(pilot, lambda: "unreachable for 3s" in rendered(app.screen.source.host_bar))
        assert "the agent ended (status 137)" in rendered(app.screen.source.host_bar)
        assert "live_exp" in str(app.screen.runs_list.get_option_at_index(0).prompt)  # kept
        await pilot.press("p")  # acting on a host that is down says so at once
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("h1 is not reachable" in n for n in notices(app)))
        h1.update(reachable=True, error=None, connects=2)
        await wait_for(pilot, lambda: len([c for c in h1.sent if c["cmd"] == "select"]) == 2)
        assert h1.sent[-1]["cmd"] == "select" and h1.sent[-1]["run"].endswith("live_exp")


async def test_the_full_view_shows_what_the_local_app_shows(runs_root, machines):
    """The same run folder: the local app's panes and a host view fed that snapshot's
    JSON render the same rows (the host view's cost strip has no `c` pointer)."""
    settings = machines["h1"][1]["settings"]
    local = make_app(runs_root, gpus=2, settings=settings)
    async with local.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: local.snapshot is not None)
        await pilot.pause()
        want = {
            "gpus": rendered(local.view.gpu_pane),
            "cost": rendered(local.view.cost_strip).replace("  (c: cost)", ""),
            "header": rendered(local.view.run_header),
            "metrics": rendered(local.view.metrics_pane),
            "log_title": rendered(local.view.log_title),
            "log": [str(x) for x in local.view.log_pane.lines],
            "runs": [
                str(local.view.runs_list.get_option_at_index(i).prompt)
                for i in range(local.view.runs_list.option_count)
            ],
        }
        doc = json.loads(json.dumps(snapshot_to_json(local.snapshot)))
    app = fleet_app(runs_root, {"h1": machines["h1"]})
    async with app.run_test(size=(100, 30)) as pilot:
        app.fleet["h1"].update(reachable=True, snapshot=doc, connects=1, since=runs_root.now)
        await wait_for(pilot, lambda: "yes" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        screen = app.screen
        await wait_for(pilot, lambda: screen.details() is not None)
        await pilot.pause()
        got = {
            "gpus": rendered(screen.gpu_pane),
            "cost": rendered(screen.cost_strip),
            "header": rendered(screen.run_header),
            "metrics": rendered(screen.metrics_pane),
            "log_title": rendered(screen.log_title),
            "log": [str(x) for x in screen.log_pane.lines],
            "runs": [
                str(screen.runs_list.get_option_at_index(i).prompt)
                for i in range(screen.runs_list.option_count)
            ],
        }
        assert got == want
        assert "$2.50/h" in got["cost"] and "RUN" in got["header"]


HOST_TOKEN = "hf" + "_" + "TokenOfTheHostInItsPushRecords01234"  # in h1's run files
LOCAL_TOKEN = "hf" + "_" + "TokenWhereTheFleetRunsStaysHere56789"  # in the fleet's env


async def test_p_pushes_through_the_agent_with_the_same_dialog(runs_root, machines, monkeypatch):
    """The tokens stay where they are: the fleet's own (in its environment) is in no
    command it sends, the host's (in a push record of the selected run, read by the real
    Collector) in nothing the host's snapshot brings, shown or kept."""
    monkeypatch.setenv("HF_TOKEN", LOCAL_TOKEN)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", LOCAL_TOKEN)
    app = fleet_app(runs_root, machines)
    live = str(runs_root.root / "live_exp")
    (runs_root.root / "live_exp" / ".rgpu").mkdir(exist_ok=True)
    (runs_root.root / "live_exp" / ".rgpu" / "pushes.jsonl").write_text(
        json.dumps({"time": iso(runs_root.now - 60), "file": "best.pt", "outcome": "error",
                    "error": f"401 for token {HOST_TOKEN} at http://u:{HOST_TOKEN}@hub/x"})
        + "\n"
    )  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines, selected={"h1": live})
        assert app.fleet["h1"].state().snapshot["pushes"]["attempts"] == 1  # it travelled
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        h1 = app.fleet["h1"]
        await wait_for(pilot, lambda: app.screen.details() is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        assert f"{live}/weights/best.pt" in body and "200.2 kB, epoch 30" in body
        assert "alice/exp: live_exp/best.pt" in body  # the host's own target
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(c["cmd"] == "push" for c in h1.sent))
        assert h1.sent[-1] == {"cmd": "push", "run": live, "file": "best.pt"}
        assert LOCAL_TOKEN not in json.dumps(h1.sent)  # every command, select included
        shown = [rendered(app.screen.run_header), *notices(app)]
        assert "last push failed" in shown[0]
        assert HOST_TOKEN not in json.dumps([h1.state().snapshot, shown])
        h1.answer(
            "push",
            {"ok": True, "error": None, "push": {"ok": True, "file": "best.pt",
             "repo": "alice/exp", "commit_url": "http://hub/alice/exp/commit/1", "notices": []}},
            progress=[{"cmd": "push", "phase": "uploading", "done": 100_000, "total": 200_000}],
        )  # fmt: skip
        await wait_for(pilot, lambda: any("Pushed best.pt of live_exp on h1" in n
                                          for n in notices(app)))  # fmt: skip
        assert any("http://hub/alice/exp/commit/1" in n for n in notices(app))
        await pilot.press("P")  # the checkpoints the agent listed, nothing else
        await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
        options = app.screen.query_one(OptionList)
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == [
            "best.pt"
        ]


async def test_s_stops_through_the_agent_and_reports_its_phases(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        assert "Stop live_exp (pid 1) on h1?" in body
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        h1 = app.fleet["h1"]
        await wait_for(pilot, lambda: any(c["cmd"] == "stop" for c in h1.sent))
        cmd = h1.answer(
            "stop",
            {"ok": True, "error": None, "stop": {"ok": True, "final_state": "stopped",
             "signals_sent": ["SIGINT"], "error": None, "target": "process 1",
             "seconds": 1.5}},
            progress=[{"cmd": "stop", "phase": "sigint", "seconds_left": 30}],
        )  # fmt: skip
        assert cmd == {"cmd": "stop", "run": str(runs_root.root / "live_exp")}
        want = "live_exp stopped (SIGINT); shown as STOPPED, its epochs kept (r resumes it)"
        await wait_for(pilot, lambda: any(want in n for n in notices(app)))
        assert want in str(app.screen.query_one("#body").render())


async def test_r_plans_on_the_host_then_resumes_after_the_confirm(runs_root, machines):
    app = fleet_app(runs_root, machines)
    failed = str(runs_root.root / "failed_oom")
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        await pilot.press("r")  # live_exp is running: refused here, nothing sent
        said = "live_exp is running: r resumes a DEAD, FAILED or STOPPED run (s stops this one)."
        await wait_for(pilot, lambda: said in notices(app))
        await pilot.press("j", "enter", "r")
        h1 = app.fleet["h1"]
        await wait_for(pilot, lambda: any(c["cmd"] == "resume" for c in h1.sent))
        assert h1.sent[-1] == {"cmd": "resume", "run": failed, "check": True}
        plan = ResumePlan(
            run_dir=failed, checkpoint=f"{failed}/weights/last.pt", data="coco8.yaml",
            device="0", argv=("libreyolo", "train", "resume=True"), state="failed",
            completed_epochs=4, total_epochs=10,
        )  # fmt: skip
        h1.answer("resume", {"ok": True, "error": None, "plan": plan.to_json()})
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#body").render())
        assert "Resume failed_oom (FAILED after epoch 4/10)" in body
        assert "libreyolo train resume=True" in body and "On h1, through its agent." in body
        await pilot.press("enter")
        await wait_for(pilot, lambda: h1.sent[-1] == {"cmd": "resume", "run": failed})
        h1.answer("resume", {"ok": True, "error": None, "plan": plan.to_json(),
                             "launch": {"pid": 4321, "console_log": "/x/console.log"}})  # fmt: skip
        await wait_for(pilot, lambda: any("Resumed failed_oom on h1 (pid 4321)" in n
                                          for n in notices(app)))  # fmt: skip


async def test_a_hostile_snapshot_never_takes_the_screen_down(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines, selected={"h1": str(runs_root.root / "live_exp")})
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        h1 = app.fleet["h1"]
        good = h1.state().snapshot
        hostile = json.loads(json.dumps(good))
        hostile["runs"][0]["name"] = "evil\x1b]0;PWNED\x07[bold]"
        hostile["runs"][0]["progress"] = 1e300
        hostile["gpus"]["devices"][0]["util_history"] = [1e300, -1e300, "x", None]
        hostile["selected"]["metrics"]["series"]["train/loss"] = [1e308, -1e308, 0]
        hostile["selected"]["log_tail"] = ["\x1b[2J\x9bwipe", 7]
        h1.update(snapshot=hostile)
        await wait_for(pilot, lambda: "PWNED" in rendered(app.screen.run_header))
        assert "\x1b" not in rendered(app.screen.run_header)
        h1.update(snapshot={"runs": "not a list"})
        await wait_for(pilot, lambda: "unreadable" in rendered(app.screen.source.host_bar))
        assert "PWNED" in rendered(app.screen.run_header)  # the last good one stays
        assert app.is_running
        await pilot.press("escape")
        await wait_for(pilot, lambda: "unreadable" in table_text(app))


@pytest.mark.parametrize("width", [80, 120, 200])
async def test_the_table_fits_the_width(runs_root, machines, width):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(width, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        head = table_text(app).splitlines()[0].split()
        assert head[:4] == ["host", "reachable", "GPUs", "runs"]
        if width >= 120:
            assert head[4:] == ["best", "ETA", "$/h", "spent", "idle"]
        for line in table_text(app).splitlines()[:3]:
            assert len(line) <= width - 2


async def test_a_line_longer_than_the_width_is_cut_not_dropped(runs_root, machines):
    """The host bar names the host's root: a long one ends in "…" at the edge."""
    root = "/data/" + "very-long-folder-name/" * 8 + "runs"
    app = FleetApp(lambda on_change: FakeFleet(on_change, {"h1": root}), clock=runs_root.clock)
    async with app.run_test(size=(80, 24)) as pilot:
        doc = record(machines["h2"][0], runs_root.now, fake_gpus=1)
        app.fleet["h1"].update(reachable=True, snapshot=doc, connects=1, version="0.1.0")
        await wait_for(pilot, lambda: "yes" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        await pilot.pause()
        bar = app.screen.source.host_bar
        painted = "".join(seg.text for seg in bar.render_line(0))
        assert painted.startswith("h1  reachable  rgpu-tui 0.1.0  /data/very-long-folder")
        assert painted.endswith("…")
        strip = "".join(seg.text for seg in app.screen.cost_strip.render_line(0))
        # whole at 80 columns for a short host name
        assert (
            strip.strip()
            == "No price for h1: set price_per_hour in its [[hosts]] table or its config"
        )


async def test_the_table_under_a_hosts_view_waits_for_esc(runs_root, machines):
    """A widget of the screen underneath, refreshed, repaints the whole screen on top
    (bench_fleet.py --tui: 9.4 KB/s to the terminal instead of 0.8): the hidden table
    is brought up to date when the host's view closes, not while it is open."""
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(80, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        before = list(app.table._keys)
        doc = json.loads(json.dumps(app.fleet["h2"].state().snapshot))
        doc["gpus"]["devices"][0]["util_percent"] = 97.0
        app.fleet["h2"].update(snapshot=doc)
        await wait_for(pilot, lambda: app.views["h2"].snapshot.gpus.devices[0].util_percent == 97)
        await pilot.pause()
        assert app.table._keys == before
        await pilot.press("escape")
        await wait_for(pilot, lambda: " 97%" in table_text(app))


async def test_a_hosts_autostop_plan_in_the_table_and_its_view(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(100, 24)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        assert "autostop" not in table_text(app).splitlines()[0]  # no plan, no column
        doc = json.loads(json.dumps(app.fleet["h2"].state().snapshot))
        doc["autostop"] = {
            "phase": "counting",
            "message": "all weights on the Hub",
            "fires_at": iso(runs_root.now + 270),
        }
        app.fleet["h2"].update(snapshot=doc)
        await wait_for(pilot, lambda: "in 4m30s" in table_text(app))
        assert table_text(app).splitlines()[0].split()[-1] == "autostop"
        await pilot.press("j", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        await pilot.pause()
        line = rendered(app.screen.autostop_line)
        assert line == "autostop in 4m30s: all weights on the Hub (on h2)"
        assert app.screen.autostop_line.display


def record_charts(root: Path, now: float, runs: list[str], **kw) -> dict:
    """A snapshot document carrying the charts of `runs`, as the agent sends it after a
    chart command (the real Collector, to JSON)."""
    from rgpu_tui.core.picture.charts import ChartRequest

    collector = Collector(str(root), log_keep=50, **kw)
    try:
        snap = collector.refresh(now, None, charts=ChartRequest.of(runs))
    finally:
        collector.close()
    return json.loads(json.dumps(snapshot_to_json(dataclasses.replace(snap, selected=None))))


def charts_sent(link) -> list[list[str]]:
    return [c["runs"] for c in link.sent if c["cmd"] == "chart"]


async def test_charts_of_runs_marked_on_two_hosts_are_overlaid(runs_root, machines):
    """`v` in a host's view asks its agent for the run's charts; runs marked (space) on
    h1 and on h2 are drawn together; leaving the view asks every agent for none."""
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(120, 40)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        h1, h2 = app.fleet["h1"], app.fleet["h2"]
        live = str(runs_root.root / "live_exp")
        done = str(machines["h2"][0] / "done")
        await pilot.press("enter")  # h1
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        await pilot.press("v")
        await wait_for(pilot, lambda: charts_sent(h1) == [[live]])
        assert charts_sent(h2) == []  # no chart asked of a host with nothing to draw
        h1.update(
            snapshot=record_charts(runs_root.root, runs_root.now, [live], **machines["h1"][1])
        )
        await wait_for(pilot, lambda: app.screen.chart_view.runs)
        text = rendered(app.screen.chart_view)
        assert "box_loss" in text and "┤" in text
        await pilot.press("space")  # mark h1's live_exp
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RunsView))
        assert charts_sent(h1)[-1] == []  # the view closed: none
        await pilot.press("j", "enter")  # h2
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView) and app.screen.host == "h2")
        screen = app.screen
        await wait_for(pilot, lambda: screen.runs_list.option_count == 2)
        await pilot.press("j", "space")  # mark h2's done
        await pilot.press("v")
        await wait_for(pilot, lambda: charts_sent(h2) and charts_sent(h2)[-1] == [done])
        await wait_for(pilot, lambda: charts_sent(h1)[-1] == [live])
        h1.update(
            snapshot=record_charts(runs_root.root, runs_root.now, [live], **machines["h1"][1])
        )
        h2.update(snapshot=record_charts(machines["h2"][0], runs_root.now, [done], fake_gpus=1))
        await wait_for(pilot, lambda: len(screen.chart_view.runs) == 2)
        text = rendered(screen.chart_view)
        assert "━━ h1:live_exp" in text and "━━ h2:done" in text
        await pilot.press("t")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CompareScreen")
        body = rendered(app.screen.query_one("#body"))
        assert "h1:live_exp" in body and "h2:done" in body
        # the run's time as every view gives it (its attempt: 1 h running, not only its 30
        # epochs' 30 min) at h1's $2.50/h
        assert "$2.50" in body and "1h00m" in body
        await pilot.press("t", "escape")
        await wait_for(pilot, lambda: app.host_screen is None)
        assert charts_sent(h1)[-1] == [] and charts_sent(h2)[-1] == []
