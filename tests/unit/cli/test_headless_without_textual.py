"""Every headless command runs without Textual: `snapshot`, `watch`, `agent`, `exporter`,
`chart --json`, `compare --json` and `fleet --once`, each run for real in a subprocess
whose interpreter says at exit which `textual` modules it had loaded (none). A command
that pulled the TUI in would pay its import time and memory on a machine without a
screen, and break where Textual is not usable."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_env import clean_env
from support.waiting import wait_until

FIXTURE_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "run_completed"

# The wrapper: rgpu-tui's own entry point, with a report of the loaded textual modules
# written at interpreter exit (after the command returned, or ended on SIGINT / stdin EOF).
WRAPPER = """\
import atexit, os, sys

def report():
    loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
    with open(os.environ["MODULES_REPORT"], "w") as f:
        f.write("".join(m + "\\n" for m in loaded) + "END\\n")

atexit.register(report)
from rgpu_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("a", "b"):
        shutil.copytree(FIXTURE_RUN, runs / name, ignore=shutil.ignore_patterns("weights", "val"))
    return runs


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    report = tmp_path / "modules.txt"
    env = clean_env(tmp_path, MODULES_REPORT=str(report), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, str(wrapper), *args],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, report


def textual_modules(proc: subprocess.Popen, report: Path) -> list[str]:
    """The textual modules the command had loaded when its interpreter ended (it must end
    with status 0 and write its report whole)."""
    proc.stdin.close()
    proc.stdin = None  # closed: the command sees end of input
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = report.read_text().splitlines()
    assert lines[-1] == "END", lines  # the report was written whole
    return lines[:-1]


@pytest.mark.parametrize(
    "args",
    [
        ("snapshot", "--fake-gpus", "1"),
        ("snapshot", "--json", "--fake-gpus", "1"),
        ("chart", "--json", "RUN_A"),
        ("compare", "--json", "RUN_A", "RUN_B"),
    ],
    ids=["snapshot", "snapshot-json", "chart-json", "compare-json"],
)
def test_a_command_that_prints_once_loads_no_textual(tmp_path, root, args) -> None:
    runs = {"RUN_A": str(root / "a"), "RUN_B": str(root / "b")}
    argv = [runs.get(a, a) for a in args]
    if argv[0] == "snapshot":
        argv.append(str(root))
    proc, report = start(tmp_path, *argv)
    assert textual_modules(proc, report) == []


def test_fleet_once_loads_no_textual(tmp_path) -> None:
    """A host that cannot be reached (ssh to a closed local port) is one row of the table;
    the table is printed by the same code either way."""
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text("Host closed\n  HostName 127.0.0.1\n  Port 9\n")
    proc, report = start(
        tmp_path, "fleet", "--once", "--ssh-config", str(ssh_config), "--connect-timeout", "2",
        "closed:/nowhere",
    )  # fmt: skip
    assert textual_modules(proc, report) == []


@pytest.mark.parametrize("command", ["watch", "exporter"])
def test_a_long_running_command_loads_no_textual(tmp_path, root, command) -> None:
    """watch and exporter run until SIGINT: stopped once they are at work (the exporter
    serving, the watcher's state file written by a refresh)."""
    if command == "exporter":
        args = ["exporter", "--listen", "127.0.0.1:0", "--fake-gpus", "1", str(root)]
    else:
        args = ["watch", "--interval", "0.1", "--no-autostop", "--fake-gpus", "1", str(root)]
    proc, report = start(tmp_path, *args)
    first = proc.stderr.readline()  # both say what they do on stderr
    if command == "exporter":
        assert "serving http://" in first, first
    else:
        state = Path(re.search(r"\(state (\S+?);", first).group(1))
        wait_until(state.exists, timeout=30)
    os.kill(proc.pid, signal.SIGINT)
    assert textual_modules(proc, report) == []


def test_agent_loads_no_textual(tmp_path, root) -> None:
    """The agent speaks JSON lines on stdout and ends when its stdin closes."""
    proc, report = start(tmp_path, "agent", "--fake-gpus", "1", str(root))
    hello = proc.stdout.readline()
    assert hello.startswith("{"), hello
    assert textual_modules(proc, report) == []
