"""The fleet over real SSH: asyncssh servers on 127.0.0.1 (tests/support/ssh_server.py)
that run `rgpu-tui agent ROOT` through /bin/sh as sshd would, reached with the real
OpenSSH client (/usr/bin/ssh) through a generated ssh_config.

h1 has a run whose trainer is alive (a real process named in status.json), h2 a dead run
(its process is gone, status.json still says running) and a completed one, h3 refuses
the connection. No training is needed; every wait polls against a deadline. h1's and h2's
GPUs are one-sample recordings (RGPU_GPU_REPLAY; FAKE: no NVML here): readings that hold
still, so a host's snapshot over the link and its own `snapshot --json` can be compared
whole, less the moment each was taken (MOMENT).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
from support.checkpoints import checkpoint_bytes
from support.cli_env import RGPU_TUI, clean_env
from support.hub_server import HubServer
from support.run_dir import iso, write_status
from support.ssh_server import SshKeys, SshServer, closed_port
from support.waiting import wait_until

from rgpu_tui.core.base.hosts import HostSpec
from rgpu_tui.core.fleet.fleet import HostLink

SSH = shutil.which("ssh")
pytestmark = pytest.mark.skipif(SSH is None, reason="the OpenSSH client (ssh) is not installed")

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
HF = "hf" + "_"
WRITE_TOKEN = HF + "FleetWriteTokenForTheLocalHub0123456"  # the machines' own
LOCAL_TOKEN = HF + "FleetLocalTokenThatMustStayHere98765"  # where the fleet runs
VENV_BIN = str(Path(sys.executable).parent)


def write_run_status(run_dir: Path, state: str, pid: int, started_at: str, **fields) -> None:
    """status.json of a run on a fleet machine: `state`, `pid`, 2 of 10 epochs done."""
    doc = {
        "state": state,
        "pid": pid,
        "started_at": started_at,
        "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "total_epochs": 10,
        "completed_epochs": 2,
        **fields,
    }
    write_status(run_dir, doc)


def gpu_recording(folder: Path, util: float, pids: tuple[int, ...] = ()) -> Path:
    """FAKE GPUs (no NVML here): one recorded sample of one RTX 4090, held for ever."""
    device = {
        "index": 0, "minor": 0, "uuid": f"GPU-{folder.name}-0",
        "name": "NVIDIA GeForce RTX 4090", "util_percent": util, "mem_util_percent": 41,
        "mem_used_mib": 20500, "mem_total_mib": 24564, "temperature_c": 70, "power_w": 380.0,
        "power_limit_w": 450.0, "processes": [{"pid": pid, "used_mib": 20000} for pid in pids],
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpus.jsonl"
    path.write_text(json.dumps({"t": 0.0, "driver_version": "550.54.15", "devices": [device]}))
    return path


class Machine:
    """One SSH server and the runs root its agent watches; simulated GPUs unless `gpus`
    names a recording."""

    def __init__(
        self, keys: SshKeys, tmp: Path, name: str, gpus: Path | None = None, **env_extra: str
    ) -> None:
        self.root = tmp / name / "runs"
        self.root.mkdir(parents=True)
        source = {"RGPU_GPU_REPLAY": str(gpus)} if gpus else {"RGPU_FAKE_GPUS": "1"}
        self.env = clean_env(tmp / name, **source, **env_extra)
        self.env["PATH"] = f"{VENV_BIN}:/usr/bin:/bin"
        self.server = SshServer(keys, self.env, tmp / name / "home").start()
        keys.add_host(name, self.server.port, self.server)


@pytest.fixture
def fleet_env(tmp_path: Path):
    """(keys, {"h1": Machine, "h2": Machine}, trainer process): h1 with a running run
    (a live trainer), h2 with a dead and a completed run, h3 a closed port."""
    keys = SshKeys(tmp_path / "ssh")
    machines: dict[str, Machine] = {}
    live = str(tmp_path / "h1" / "runs" / "live")  # h1's run: its command line names it
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", live])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone_started = psutil.Process(gone.pid).create_time()
    gone.wait()
    try:
        for name, util, pids in (("h1", 97, (trainer.pid,)), ("h2", 0, ())):
            recording = gpu_recording(tmp_path / name, util, pids)
            machines[name] = Machine(keys, tmp_path, name, gpus=recording)
        started = iso(psutil.Process(trainer.pid).create_time())
        write_run_status(machines["h1"].root / "live", "running", trainer.pid, started)
        write_run_status(machines["h2"].root / "crashed", "running", gone.pid, iso(gone_started))
        shutil.copytree(FIXTURE_RUN, machines["h2"].root / "done")
        keys.add_host("h3", closed_port())
        yield keys, machines, trainer
    finally:
        for machine in machines.values():
            machine.server.stop()
        if trainer.poll() is None:
            trainer.kill()
        trainer.wait()


def fleet_cli(keys: SshKeys, env: dict, *args: str, timeout: float = 120):
    return subprocess.run(
        [str(RGPU_TUI), "fleet", "--ssh-config", str(keys.config), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def own_snapshot(machine: Machine) -> dict:
    """What `rgpu-tui snapshot --json` says on that machine."""
    proc = subprocess.run(
        [str(RGPU_TUI), "snapshot", str(machine.root), "--json"],
        env=machine.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def states(snapshot: dict) -> dict[str, str]:
    return {run["name"]: run["state"] for run in snapshot["runs"]}


# What differs between two snapshots of one machine taken a moment apart: the clock, how
# long the process has been watching (idle clocks, GPU histories), and the machine's live
# readings. Every other key and value of a host's snapshot must arrive as it left.
MOMENT = {
    "generated_at",
    "runs[].elapsed_seconds",
    "runs[].attempts[].seconds",  # a running attempt's time grows with the clock
    "runs[].eta_seconds",
    "gpus.idle_seconds",
    "gpus.idle_since",
    "gpus.devices[].util_history",
    "gpus.devices[].mem_history",
    "system.cpu_percent",
    "system.cpu_max_percent",
    "system.load_avg",
    "system.mem_used_bytes",
    "system.swap_used_bytes",
    "system.disk.used_bytes",
    "system.disk.free_bytes",
    "system.disk_full_in_hours",
    "cost.billed_hours",
    "cost.spent",
    "cost.run_spent",
    "cost.idle_seconds",
    "cost.idle_spent",
    "cost.idle_now_seconds",
    "cost.idle_now_spent",
}


def less_the_moment(doc, path: str = ""):
    """`doc` with the value at each MOMENT path replaced by a mark (the key stays)."""
    if isinstance(doc, dict):
        out = {}
        for key, value in doc.items():
            where = f"{path}.{key}" if path else key
            out[key] = "<moment>" if where in MOMENT else less_the_moment(value, where)
        return out
    if isinstance(doc, list):
        return [less_the_moment(item, f"{path}[]") for item in doc]
    return doc


def test_fleet_json_shows_each_hosts_runs_as_its_own_snapshot_and_the_dead_host(
    tmp_path: Path, fleet_env
) -> None:
    keys, machines, trainer = fleet_env
    for price, machine in zip((2.5, 4.0), machines.values(), strict=True):  # its own config
        config = Path(machine.env["XDG_CONFIG_HOME"]) / "rgpu-tui" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"price_per_hour = {price}\n")
    env = clean_env(tmp_path / "local")
    hosts = [f"{name}:{m.root}" for name, m in machines.items()] + ["h3:/nowhere"]
    proc = fleet_cli(keys, env, *hosts, "--json", "--connect-timeout", "20")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    by_name = {h["host"]: h for h in out["hosts"]}
    assert list(by_name) == ["h1", "h2", "h3"]
    for name, machine in machines.items():
        host = by_name[name]
        assert host["reachable"] is True and host["error"] is None, host["error"]
        assert host["root"] == str(machine.root)
        # the whole snapshot, as the machine prints it itself, less the moment; until the
        # fleet selects a run its agent sends no run's details (selected, pushes)
        own = {**own_snapshot(machine), "selected": None, "pushes": None}
        assert less_the_moment(host["snapshot"]) == less_the_moment(own)
    h1 = by_name["h1"]["snapshot"]
    assert [d["util_percent"] for d in h1["gpus"]["devices"]] == [97]  # what its GPUs said
    assert h1["runs"][0]["gpu_indices"] == [0] and h1["runs"][0]["total_epochs"] == 10
    assert h1["cost"]["price_per_hour"] == 2.5 and h1["cost"]["configured"] is True
    assert states(by_name["h1"]["snapshot"]) == {"live": "running"}
    assert states(by_name["h2"]["snapshot"]) == {"crashed": "dead", "done": "completed"}
    dead = by_name["h3"]
    assert dead["reachable"] is False and dead["snapshot"] is None
    # ssh's own one line, not the fleet's deadline: it did not hold the others up
    assert "Connection refused" in dead["error"] and "\n" not in dead["error"]
    assert trainer.poll() is None  # looking never touches a run
    for machine in machines.values():  # each agent ended when its ssh session closed
        wait_until(lambda m=machine: not m.server.pids(), "the agents to end", timeout=30)
    assert [c.split()[:2] for m in machines.values() for c in m.server.commands] == [
        ["rgpu-tui", "agent"],
        ["rgpu-tui", "agent"],
    ]


def test_fleet_table_and_hosts_from_the_config(tmp_path: Path, fleet_env) -> None:
    keys, machines, _trainer = fleet_env
    env = clean_env(tmp_path / "local")
    config = Path(env["XDG_CONFIG_HOME"]) / "rgpu-tui" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "".join(
            f'[[hosts]]\nname = "{name}"\nssh = "{name}"\nroot = "{m.root}"\n'
            f"price_per_hour = {i + 1.5}\n\n"
            for i, (name, m) in enumerate(machines.items())
        )
        + '[[hosts]]\nssh = "h3"\n'
    )
    proc = fleet_cli(keys, env, "--connect-timeout", "20")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["host", "reachable", "GPUs", "runs", "$/h"]
    rows = {line.split()[0]: line for line in lines[1:4]}
    assert rows["h1"].split()[1:] == ["yes", "1", "replay", "97%", "1", "running", "1.50"]
    assert "1 dead, 1 completed" in rows["h2"] and rows["h2"].endswith("2.50")
    assert rows["h3"].split()[1] == "no"
    assert lines[4].startswith("  h3: ssh: connect to host 127.0.0.1 port ")
    # the price reached each agent as --price-per-hour, quoted for the remote shell
    h1_root = machines["h1"].root
    assert machines["h1"].server.commands == [f"rgpu-tui agent --price-per-hour 1.5 {h1_root}"]


def _link(keys: SshKeys, name: str, root: Path, **kw) -> HostLink:
    spec = HostSpec(name=name, ssh=name, root=str(root), **kw)
    return HostLink(
        spec, ssh_config=str(keys.config), connect_timeout=20, backoff=(0.2, 0.4, 0.8)
    ).start()


def test_a_host_whose_agent_is_killed_comes_back(fleet_env) -> None:
    keys, machines, _trainer = fleet_env
    h1 = machines["h1"]
    link = _link(keys, "h1", h1.root)
    try:
        first = wait_until(lambda: link.state().reachable and link.state(), "h1 reachable", 60)
        assert first.connects == 1 and states(first.snapshot) == {"live": "running"}
        assert h1.server.kill_commands(signal.SIGKILL)
        down = wait_until(
            lambda: (s := link.state()).error and not s.reachable and s, "h1 down", 60
        )
        assert "the agent ended (status 137)" in down.error
        back = wait_until(lambda: (s := link.state()).reachable and s, "h1 back", 60)
        assert back.connects >= 2 and back.error is None
        assert states(back.snapshot) == {"live": "running"}
        assert len(h1.server.commands) == back.connects
        # the new connection's deltas apply: the link follows a run that ends
        write_run_status(h1.root / "live", "completed", _trainer.pid, "2026-01-01T00:00:00+00:00")
        wait_until(lambda: states(link.state().snapshot) == {"live": "completed"}, "a delta", 60)
    finally:
        link.close()


def test_an_agent_of_another_schema_is_refused_in_one_line(fleet_env) -> None:
    keys, machines, _trainer = fleet_env
    hello = json.dumps({"agent": "rgpu-tui", "version": "9.9.0", "schema_version": 2})
    fake = [sys.executable, "-c", f"print({hello!r}, flush=True); import time; time.sleep(60)"]
    link = _link(keys, "h2", machines["h2"].root, remote_command=tuple(fake))
    try:
        state = wait_until(lambda: (s := link.state()).error and s, "the refusal", 60)
        assert not state.reachable and state.snapshot is None
        assert state.error.startswith("host h2 runs rgpu-tui 9.9.0 (schema 2); install the same")
    finally:
        link.close()


def test_a_missing_agent_says_how_to_install_it(fleet_env) -> None:
    keys, machines, _trainer = fleet_env
    link = _link(keys, "h2", machines["h2"].root, remote_command="no-such-rgpu-tui agent")
    try:
        state = wait_until(lambda: (s := link.state()).error and s, "the error", 60)
        assert "no-such-rgpu-tui is not installed on h2" in state.error
        assert "pipx" in state.error
    finally:
        link.close()


def machine_with_a_hub(keys: SshKeys, tmp_path: Path, name: str, seed: int):
    """A local Hub server that knows WRITE_TOKEN (alice) and a machine `name` whose agent
    pushes there with that token, holding run exp1 (the fixture run) with a 50 kB best.pt.
    Returns (hub, machine, run, best's bytes); the caller stops the hub and the server."""
    hub = HubServer(str(tmp_path / "hub-storage"))
    hub.add_token(WRITE_TOKEN, "alice")
    hub.start()
    machine = Machine(
        keys,
        tmp_path,
        name,
        HF_ENDPOINT=hub.url,
        HF_TOKEN=WRITE_TOKEN,
        HF_HUB_DISABLE_XET="1",
        RGPU_HUB_REPO="alice/fleet",
    )
    run = machine.root / "exp1"
    shutil.copytree(FIXTURE_RUN, run)
    best = checkpoint_bytes(50_000, seed)
    (run / "weights").mkdir(exist_ok=True)
    (run / "weights" / "best.pt").write_bytes(best)
    return hub, machine, run, best


def plant_push_records(run: Path, token: str) -> None:
    """Push records another writer left in `run`: the machine's token in a commit URL's
    credentials and in an error (the app's own records never hold one)."""
    (run / ".rgpu").mkdir(exist_ok=True)
    records = [
        {"time": "2026-01-01T00:00:00+00:00", "file": "best.pt", "outcome": "ok", "size": 5,
         "commit_url": f"http://user:{token}@127.0.0.1:9/alice/fleet/commit/0"},
        {"time": "2026-01-01T00:01:00+00:00", "file": "best.pt", "outcome": "error",
         "error": f"401 Unauthorized for token {token}"},
    ]  # fmt: skip
    (run / ".rgpu" / "pushes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_stop_and_a_push_through_the_agent(tmp_path: Path, fleet_env, monkeypatch, request) -> None:
    keys, machines, _h1_trainer = fleet_env
    hub, machine, run, best = machine_with_a_hub(keys, tmp_path, "h4", seed=7)
    plant_push_records(run, WRITE_TOKEN)
    monkeypatch.setenv("HF_TOKEN", LOCAL_TOKEN)  # the fleet's own token: it stays here too
    # h4's trainer: its command line names its run (core.run.run_process)
    code = "import time; time.sleep(600)"
    trainer = subprocess.Popen([sys.executable, "-c", code, str(machine.root / "live")])
    request.addfinalizer(lambda: (trainer.kill(), trainer.wait()))
    started = iso(psutil.Process(trainer.pid).create_time())
    write_run_status(machine.root / "live", "running", trainer.pid, started)
    link = _link(keys, "h4", machine.root)
    try:
        wait_until(lambda: link.state().reachable, "h4 reachable", 60)
        # the run with push records selected: its records travel in the snapshot
        assert link.send({"cmd": "select", "run": str(run)}).result(30)["ok"] is True

        def pushes() -> dict | None:
            return (link.state().snapshot or {}).get("pushes")

        planted = wait_until(lambda: (p := pushes()) and p["attempts"] == 2 and p, "records")
        assert planted["last_error"] == "401 Unauthorized for token hf_***"
        assert planted["last_ok_url"] == "http://127.0.0.1:9/alice/fleet/commit/0"
        progress: list[dict] = []
        pushed = link.send({"cmd": "push", "run": str(run), "file": "best"}, progress.append)
        stopped = link.send({"cmd": "stop", "run": str(machine.root / "live")})
        stop = stopped.result(90)
        assert stop["ok"] is True, stop
        assert stop["stop"]["signals_sent"][0] == "SIGINT"
        assert trainer.wait(30) is not None
        result = pushed.result(120)
        assert result["ok"] is True, result
        assert result["push"]["commit_url"].startswith(f"{hub.url}/alice/fleet/commit/")
        assert hub.file_bytes("alice/fleet", "exp1/best.pt") == best
        assert {"settling", "uploading"} <= {p["phase"] for p in progress}
        now = wait_until(lambda: (p := pushes()) and p["attempts"] == 3 and p, "our record")
        assert now["last_ok_url"] == result["push"]["commit_url"] and now["last_error"] is None
        unknown = link.send({"cmd": "push", "run": "/etc", "file": "best"}).result(30)
        assert unknown == {
            "result": unknown["result"],
            "ok": False,
            "error": f"no run /etc under {machine.root}",
        }
        # the tokens stayed on their machines: nothing the agent sent back holds h4's,
        # nothing the fleet sent (command lines, environment) holds its own
        assert WRITE_TOKEN.encode() not in machine.server.sent_bytes()
        assert WRITE_TOKEN not in json.dumps(link.state().snapshot)
        assert machine.server.commands and machine.server.client_env
        assert all(LOCAL_TOKEN not in c for c in machine.server.commands)
        assert all(LOCAL_TOKEN not in json.dumps(e) for e in machine.server.client_env)
    finally:
        link.close()
        machine.server.stop()
        hub.stop()


def test_a_stalled_link_is_told_from_a_quiet_host(fleet_env) -> None:
    """An agent that says its heartbeat is 1 s and then goes silent: after three missed
    heartbeats the link is down, named as stalled, and tried again."""
    keys, machines, _trainer = fleet_env
    lines = [
        {"agent": "rgpu-tui", "version": "0.1.0", "schema_version": 1, "heartbeat": 1},
        {"seq": 0, "snapshot": {"runs": []}},
    ]
    script = f"import json, time\nfor l in {lines!r}: print(json.dumps(l), flush=True)\n"
    script += "time.sleep(60)\n"
    link = _link(keys, "h2", machines["h2"].root, remote_command=(sys.executable, "-c", script))
    try:
        wait_until(lambda: link.state().reachable, "h2 reachable", 60)
        state = wait_until(lambda: (s := link.state()).error and s, "the stall", 60)
        assert state.error == "no data for 3 s (the link stalled)" and not state.reachable
        wait_until(lambda: link.state().connects >= 2, "a new try", 60)
    finally:
        link.close()
