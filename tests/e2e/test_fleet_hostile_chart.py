"""A host whose agent sends a chart that does not hold together (a series longer or shorter
than its epochs, stride 0 and negative rows, 20,000 columns and a saved epoch of 10^18),
in `rgpu-tui fleet` in a private tmux, over the real OpenSSH client to real SSH servers
(tests/support/ssh_server.py): each bad host's chart view says what is wrong with its
chart and draws nothing of it, `space` and `v` go on working, the good host's charts draw,
and `q` exits 0. Before core.fleet.host_ranges.whole_chart, `v` in such a host's view
ended the whole fleet app with a traceback (IndexError, ValueError in zip())."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from support.ssh_server import SshKeys
from support.tmux import Tmux, tmux_executable

from e2e.test_fleet_ssh import FIXTURE_RUN, VENV_BIN, Machine
from e2e.test_fleet_tui import UI_TIMEOUT, row_says, start_fleet

pytestmark = pytest.mark.skipif(
    shutil.which("ssh") is None or tmux_executable() is None,
    reason="needs the OpenSSH client (ssh) and tmux",
)
SUPPORT = Path(__file__).resolve().parents[1] / "support"
CASES = ("series_longer", "series_shorter", "stride_0", "columns")


def hostile_bin(folder: Path) -> Path:
    """A folder whose `rgpu-tui` is tests/support/hostile_agent.py."""
    folder.mkdir(parents=True)
    exe = folder / "rgpu-tui"
    exe.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(SUPPORT)!r})\n"
        "from hostile_agent import main\nsys.exit(main())\n"
    )
    exe.chmod(0o755)
    return folder


def machine(keys: SshKeys, tmp: Path, name: str, case: str | None) -> Machine:
    m = Machine(keys, tmp, name)
    shutil.copytree(FIXTURE_RUN, m.root / f"exp_{name}", ignore=shutil.ignore_patterns("val"))
    if case is not None:
        m.env["PATH"] = f"{hostile_bin(tmp / name / 'bin')}:{m.env['PATH']}"
        m.env.update(HOSTILE_CHART=case, RGPU_REAL=str(Path(VENV_BIN) / "rgpu-tui"))
        m.server.env = dict(m.env)
    return m


def test_a_hosts_bad_chart_is_said_and_the_fleet_goes_on(tmp_path: Path) -> None:
    keys = SshKeys(tmp_path / "ssh")
    machines = {"good": machine(keys, tmp_path, "good", None)}
    for i, case in enumerate(CASES):
        machines[f"bad{i}"] = machine(keys, tmp_path, f"bad{i}", case)
    try:
        hosts = [f"{name}:{m.root}" for name, m in machines.items()]
        with Tmux(120, 40) as term:
            start_fleet(term, tmp_path, keys, hosts)
            for name in machines:
                term.wait_for(row_says(name, "yes", "1 DONE"), f"{name} reachable", UI_TIMEOUT)
            for i in range(len(CASES)):
                term.send("j", "Enter")  # bad0, bad1, ... in the table's order
                term.wait_for(lambda s, i=i: f"bad{i}  reachable" in s, f"bad{i}'s view")
                term.send("v")
                screen = term.wait_for(
                    lambda s: "does not hold together" in " ".join(s.split()),
                    f"bad{i}'s chart said",
                    UI_TIMEOUT,
                )
                # an epoch cursor; the last one's run stays marked (shown beside good's
                # below), the others' are marked and unmarked: the keys still answer
                last = i == len(CASES) - 1
                term.send("Left", *(("space",) if last else ("space", "space")), "v")
                term.wait_for(lambda s: "v Charts" in s and "┤" not in s, f"bad{i}'s log view")
                term.send("Escape")
                term.wait_for(row_says("good", "yes", "1 DONE"), "the table again")
            assert "Traceback" not in screen
            term.send("k", "k", "k", "k", "Enter")  # back up to good
            term.wait_for(lambda s: "good  reachable" in s, "good's view")
            term.send("space", "v")  # good's run beside bad3's
            screen = term.wait_for(
                lambda s: "┤" in s and "loss" in s and "bad3:exp_bad3: the host sent" in s,
                "good's charts and bad3's line",
                UI_TIMEOUT,
            )
            assert "good:exp_good" in screen and "bad0" not in screen
            said = " ".join(screen.split())
            assert "bad3:exp_bad3: the host sent a chart that does not hold together" in said
            term.send("v", "Escape")
            term.wait_for(row_says("bad3", "yes", "1 DONE"), "the table again")
            term.send("q")
            assert term.wait_exit(30) == 0
    finally:
        for m in machines.values():
            m.server.stop()
