"""The fleet screen end to end: `rgpu-tui fleet` in a private tmux at 80x24, over the real
OpenSSH client to real SSH servers on 127.0.0.1 (tests/support/ssh_server.py, the
fixtures of tests/e2e/test_fleet_ssh.py): h1 with a live run, h2 with a dead and a
completed run, h3 refusing the connection. Driven with the keys a user presses; the
screen read with `tmux capture-pane`, polled against deadlines.

* the table lists the three hosts (h3 unreachable with ssh's one line), `enter` opens
  h2's full view (its runs list), `esc` comes back, `q` exits 0;
* an agent killed on its machine: the table says h1 is unreachable, then reachable again;
* `p` in a host's full view, confirmed, pushes best.pt from that machine to the local
  Hub server with that machine's token (the fleet never has it).
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import psutil
import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.pty_app import PtyApp
from support.run_dir import iso
from support.tmux import Tmux, tmux_executable
from support.waiting import wait_until

from e2e.test_fleet_ssh import (  # noqa: F401  (fleet_env is a fixture)
    LOCAL_TOKEN,
    WRITE_TOKEN,
    fleet_env,
    machine_with_a_hub,
    plant_push_records,
    write_run_status,
)

pytestmark = pytest.mark.skipif(
    shutil.which("ssh") is None or tmux_executable() is None,
    reason="needs the OpenSSH client (ssh) and tmux",
)
UI_TIMEOUT = 60.0  # an ssh login and the agent's first refresh, on a loaded box


def host_row(screen: str, host: str) -> str | None:
    """The hosts table's row of `host` (the cursor's "> " aside)."""
    for line in screen.splitlines():
        words = line.replace(">", " ").split()
        if words[:1] == [host] and len(words) > 1:
            return " ".join(words)
    return None


def row_says(host: str, *words: str):
    def check(screen: str) -> bool:
        row = host_row(screen, host)
        return row is not None and all(w in row for w in words)

    return check


def start_fleet(term: Tmux, tmp_path: Path, keys, hosts: list[str], **extra: str) -> None:
    env = clean_env(tmp_path / "local")
    pane_env = {k: env[k] for k in ("HOME", "XDG_CONFIG_HOME", "LANG", "PATH")} | extra
    argv = [str(RGPU_TUI), "fleet", "--ssh-config", str(keys.config), "--connect-timeout", "20"]
    term.start_app([*argv, *hosts], tmp_path / "rc", env=pane_env)


def test_the_table_a_hosts_full_view_and_q(tmp_path: Path, fleet_env) -> None:  # noqa: F811
    keys, machines, trainer = fleet_env
    hosts = [f"{name}:{m.root}" for name, m in machines.items()] + ["h3:/nowhere"]
    with Tmux(80, 24) as term:
        start_fleet(term, tmp_path, keys, hosts)
        screen = term.wait_for(row_says("h1", "yes", "1 RUN"), "h1 reachable", UI_TIMEOUT)
        screen = term.wait_for(row_says("h2", "yes", "1 DEAD", "1 DONE"), "h2", UI_TIMEOUT)
        screen = term.wait_for(row_says("h3", "no", "ssh: connect to host"), "h3", UI_TIMEOUT)
        assert "Connection refused" in " ".join(screen.split())  # whole, wrapped under itself
        assert "3 machines (2 reachable)  2 GPUs" in screen
        term.send("j", "Enter")  # h2
        screen = term.wait_for(
            lambda s: "h2  reachable" in s and "DEAD" in s and "crashed" in s, "h2's view"
        )
        assert "done" in screen and "runs (2)" in screen
        term.wait_for(lambda s: "process" in s and "is gone" in s, "the dead run's header")
        term.send("Escape")
        term.wait_for(lambda s: host_row(s, "h3") is not None, "the table again")
        term.send("q")
        assert term.wait_exit(30) == 0
    assert trainer.poll() is None  # looking never touched a run
    for machine in machines.values():  # each agent ended with its ssh session
        wait_until(lambda m=machine: not m.server.pids(), "the agents to end", timeout=30)


def test_a_killed_agent_is_unreachable_then_back_in_the_table(
    tmp_path: Path,
    fleet_env,  # noqa: F811
) -> None:
    keys, machines, _trainer = fleet_env
    h1 = machines["h1"]
    with Tmux(80, 24) as term:
        start_fleet(term, tmp_path, keys, [f"h1:{h1.root}", f"h2:{machines['h2'].root}"])
        term.wait_for(row_says("h1", "yes", "1 RUN"), "h1 reachable", UI_TIMEOUT)
        assert h1.server.kill_commands(signal.SIGKILL)
        term.wait_for(row_says("h1", "no", "the agent ended"), "h1 down", UI_TIMEOUT)
        term.wait_for(row_says("h1", "yes", "1 RUN"), "h1 back", UI_TIMEOUT)
        assert len(h1.server.commands) >= 2  # a new ssh session, a new agent
        term.send("q")
        assert term.wait_exit(30) == 0


def test_p_in_a_hosts_full_view_pushes_from_that_machine(
    tmp_path: Path,
    fleet_env,  # noqa: F811
) -> None:
    keys, _machines, trainer = fleet_env
    hub, machine, run, best = machine_with_a_hub(keys, tmp_path, "h4", seed=11)
    plant_push_records(run, WRITE_TOKEN)  # h4's token in the records the full view reads
    # the newest run, so the full view opens on it
    write_run_status(run, "completed", trainer.pid, iso(psutil.Process(trainer.pid).create_time()))
    screens: list[str] = []
    try:
        with Tmux(80, 24) as term:
            # the fleet has a token of its own: it must not travel either
            start_fleet(term, tmp_path, keys, [f"h4:{machine.root}"], HF_TOKEN=LOCAL_TOKEN)
            term.wait_for(row_says("h4", "yes", "1 DONE"), "h4 reachable", UI_TIMEOUT)
            term.send("Enter")
            screens.append(
                term.wait_for(lambda s: "h4  reachable" in s and "log  train.log" in s, "exp1")
            )
            # its push records arrived (the run is selected): the failed attempt is shown
            screens.append(term.wait_for("last push failed", "the records", UI_TIMEOUT))
            term.send("p")
            screen = term.wait_for("enter: push", "the confirm dialog")
            screens.append(screen)
            assert "alice/fleet: exp1/best.pt" in screen
            term.send("Enter")
            screens.append(term.wait_for("Pushed best.pt of exp1 on h4", "the notice", UI_TIMEOUT))
            assert hub.file_bytes("alice/fleet", "exp1/best.pt") == best
            term.send("q")
            assert term.wait_exit(30) == 0
        # the push ran on h4 with h4's token: no token crossed the link, either way
        records = (run / ".rgpu" / "pushes.jsonl").read_text().splitlines()
        assert json.loads(records[-1])["outcome"] == "ok"
        assert WRITE_TOKEN.encode() not in machine.server.sent_bytes()
        assert not any(WRITE_TOKEN[:12] in screen for screen in screens)
        assert machine.server.commands and machine.server.client_env
        assert all(LOCAL_TOKEN not in command for command in machine.server.commands)
        assert all(LOCAL_TOKEN not in json.dumps(env) for env in machine.server.client_env)
    finally:
        machine.server.stop()
        hub.stop()


def test_once_prints_the_table_in_a_terminal(tmp_path: Path, fleet_env) -> None:  # noqa: F811
    """With stdout a terminal, where `fleet` alone opens the screen, `--once` prints the
    table and exits."""
    keys, machines, _trainer = fleet_env
    env = clean_env(tmp_path / "local", TERM="xterm-256color")
    hosts = [f"{name}:{m.root}" for name, m in machines.items()]
    argv = [str(RGPU_TUI), "fleet", "--ssh-config", str(keys.config), *hosts]
    app = PtyApp([*argv, "--once", "--connect-timeout", "20"], env, 100, 30)
    try:
        assert app.wait_exit(UI_TIMEOUT, "--once did not print and exit") == 0
        out = app.output()
    finally:
        app.close()
    assert b"\x1b" not in out  # no screen: plain lines
    lines = out.decode().splitlines()
    assert lines[0].split() == ["host", "reachable", "GPUs", "runs", "$/h"]
    # their GPUs are replayed from a recording (--gpu-replay): said so
    assert lines[1].split() == ["h1", "yes", "1", "replay", "97%", "1", "running", "?"]
    assert lines[2].split() == [
        "h2", "yes", "1", "replay", "0%", "1", "dead,", "1", "completed", "?"
    ]  # fmt: skip
    assert len(lines) == 3
