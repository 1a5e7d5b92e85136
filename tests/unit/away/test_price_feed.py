"""price_command: the feed runs a real command on its own thread, keeps the
last good price across failures, and the cost views say where the price came from and how old
it is. The docs/cost.md examples for vast.ai, RunPod and Lambda run against stand-in `vastai`
and `curl` executables written here, which print the JSON shapes those providers document.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from support.cli_env import RGPU_TUI, clean_env
from support.docs import doc
from support.waiting import wait_until

from rgpu_tui.core.away.price_feed import PriceFeed, price_feed
from rgpu_tui.core.base.config import ConfigError, Settings, load_settings
from rgpu_tui.core.model.snapshot_json import cost_to_json
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.picture.cost import cost_once, cost_to_text
from rgpu_tui.core.picture.price import PriceReading, parse_price_output
from rgpu_tui.tui.widgets.cost import strip_text

NOW = 1_780_000_000.0


def script(folder: Path, name: str, body: str) -> Path:
    """A real executable `name` in `folder`: a Python script."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# -- what the command prints ----------------------------------------------------------


@pytest.mark.parametrize(
    "out, want",
    [
        (b"3.48\n", (3.48, None)),
        (b"$2.15 $40.00\n", (2.15, 40.0)),
        (b'{"price_per_hour": 1.5, "balance": -3}', (1.5, -3.0)),
        (b'[{"id": 7, "dph_total": 0.4123}]', (0.4123, None)),
        (b'{"data": {"myself": {"currentSpendPerHr": 2.2, "clientBalance": 51.3}}}', (2.2, 51.3)),
        (b'{"data": {"instance_type": {"price_cents_per_hour": 2392}}}', (23.92, None)),
        (b'{"price_per_hour": "1.25"}', (1.25, None)),
    ],
)
def test_what_it_may_print(out: bytes, want) -> None:
    assert parse_price_output(out) == want


@pytest.mark.parametrize(
    "out, why",
    [
        (b"", "printed nothing"),
        (b"Error: not logged in\n", "not a price"),
        (b"\xff\xfe", "not UTF-8"),
        (b"-1", "out of range"),
        (b"1e9", "out of range"),
        (b'{"dph_total": true}', "not a number"),
        (b'{"errors": [{"message": "Unauthorized"}]}', "it said: 'Unauthorized'"),
        (b'[{"dph_total": 1}, {"dph_total": 2}]', "list of 2 items"),
        (b"{" * 5000, "cannot be read"),
        (b"1" * (65 * 1024), "more than 64 KiB"),
        (b"\x1b[31m1.5\x1b[0m", "not a price"),
    ],
)
def test_what_is_refused(out: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        parse_price_output(out)


def test_the_setting_is_an_argv_list_with_variables(tmp_path: Path) -> None:
    env = {"RGPU_PRICE_COMMAND": '["vastai", "show", "instance", "$CONTAINER_ID", "--raw"]'}
    s = load_settings(str(_empty(tmp_path)), environ=env)
    assert s.price_command == ("vastai", "show", "instance", "$CONTAINER_ID", "--raw")
    for bad in ("vastai show instance", '["x", "${"]', "[]"):
        with pytest.raises(ConfigError, match="RGPU_PRICE_COMMAND: price_command"):
            load_settings(str(_empty(tmp_path)), environ={"RGPU_PRICE_COMMAND": bad})


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.toml"
    path.write_text("")
    return path


# -- the feed: real commands ----------------------------------------------------------


def test_a_failure_keeps_the_last_good_price_with_its_age(tmp_path: Path) -> None:
    # answers 2.50 once, then fails: the views keep 2.50 and say how old it is
    count = tmp_path / "count"
    cmd = script(
        tmp_path / "bin",
        "price",
        f"import pathlib, sys\np = pathlib.Path({str(count)!r})\n"
        "n = int(p.read_text()) if p.exists() else 0\np.write_text(str(n + 1))\n"
        "if n: sys.exit('provider API: 503 Service Unavailable')\nprint('2.50 40')\n",
    )
    clock = [NOW]
    feed = PriceFeed([str(cmd)], clock=lambda: clock[0])
    first = feed.read_once()
    assert (first.price_per_hour, first.balance, first.read_at, first.problem) == (
        2.5,
        40.0,
        NOW,
        None,
    )
    clock[0] = NOW + 600
    second = feed.read_once()
    assert second.price_per_hour == 2.5 and second.read_at == NOW
    assert second.problem == "exit status 1: provider API: 503 Service Unavailable"

    settings = Settings(price_per_hour=9.0, billing_started_at=NOW - 3600)
    now = NOW + 720
    c = cost_once(settings, now, price=second)
    assert c.price_per_hour == 2.5  # the provider's, not the typed 9.0
    assert c.price_source == "price_command (price)" and c.price_age_seconds == 720
    assert c.balance_left == pytest.approx(40 - 2.5 * 720 / 3600)  # read at NOW
    assert c.price_problem == (
        "price_command (price) failed (2 min ago): exit status 1: provider API: 503 Service "
        "Unavailable; showing its last price $2.50/h, read 12 min ago"
    )
    assert c.warnings == (c.price_problem,)
    text = cost_to_text(c, settings, now)
    assert "running       $2.50/h  (price_command (price), read 12 min ago)" in text
    assert "! price_command (price) failed (2 min ago)" in text
    data = cost_to_json(c)
    assert data["price_source"] == "price_command (price)"
    assert data["price_read_at"] == "2026-05-28T20:26:40+00:00"
    assert data["price_age_seconds"] == 720 and data["price_problem"] == c.price_problem
    assert str(strip_text(c)).startswith(
        "$2.50/h (price_command, 12 min ago)  spent $3.00  ! price_command (price) failed"
    )


def test_a_typed_price_names_its_setting_and_has_no_age() -> None:
    settings = Settings(price_per_hour=3.0, sources=(("price_per_hour", "--price-per-hour"),))
    c = cost_once(settings, NOW)
    assert (c.price_source, c.price_read_at, c.price_age_seconds, c.price_problem) == (
        "--price-per-hour",
        None,
        None,
        None,
    )
    assert str(strip_text(c)).startswith("$3.00/h  spent")


def test_no_answer_and_no_typed_price_says_so_not_the_hint() -> None:
    reading = PriceReading("vastai", problem="timed out after 30 s (killed)", attempts=1)
    c = cost_once(Settings(), NOW, price=replace_at(reading, NOW - 5))
    assert not c.configured and c.price_source is None
    want = (
        "No price: price_command (vastai) failed (just now): timed out after 30 s (killed); "
        "no price yet"
    )
    assert str(strip_text(c)) == want
    assert cost_to_text(c, Settings(), NOW).endswith("\n! " + want[len("No price: ") :])
    waiting = cost_once(Settings(price_per_hour=1.0), NOW, price=PriceReading("vastai"))
    assert waiting.price_per_hour == 1.0 and waiting.price_problem == (
        "price_command (vastai) has not answered yet; showing price_per_hour $1.00/h from the "
        "settings"
    )


def replace_at(reading: PriceReading, at: float) -> PriceReading:
    return replace(reading, problem_at=at)


@pytest.mark.parametrize(
    "body, why",
    [
        ("print('<html>502 Bad Gateway</html>')", "not a price"),
        ("import sys\nsys.stdout.write('9' * 50_000_000)", "printed more than 64 KiB"),
        ("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)", "exit status 3: boom"),
    ],
)
def test_garbage_huge_and_failing_commands(tmp_path: Path, body: str, why: str) -> None:
    cmd = script(tmp_path / "bin", "price", body)
    got = PriceFeed([str(cmd)]).read_once()
    assert got.price_per_hour is None and why in got.problem


def test_an_unset_variable_is_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cmd = script(tmp_path / "bin", "price", f"open({str(marker)!r}, 'w')\nprint(1)")
    got = PriceFeed([str(cmd), "$NO_SUCH_ID"], environ={"PATH": "/usr/bin"}).read_once()
    assert got.problem == "not run: $NO_SUCH_ID is not set" and not marker.exists()


def test_a_hanging_command_never_holds_a_refresh(tmp_path: Path) -> None:
    """The feed's thread waits on the command; the refresh takes the reading from memory
    while the command is still running, and the command is killed at its timeout."""
    pid_file = tmp_path / "pid"
    cmd = script(
        tmp_path / "bin",
        "price",
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n",
    )
    feed = PriceFeed([str(cmd)], timeout=60.0).start()
    collector = Collector(str(tmp_path / "runs"), settings=Settings(), price=feed)
    try:
        wait_until(pid_file.exists, "the price command to start")
        pid = int(wait_until(pid_file.read_text, "its pid"))
        snap = collector.refresh(now=NOW)
        assert psutil.pid_exists(pid)  # the refresh came back while the command hangs
        assert snap.cost.price_problem == "price_command (price) has not answered yet; no price yet"
    finally:
        collector.close()  # closes the feed: the command in flight is killed
    wait_until(lambda: not _alive(pid), "the hanging command to be killed")
    timed = PriceFeed([str(cmd)], timeout=0.5).read_once()
    assert timed.problem.startswith("timed out after 0.5 s (killed)")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_thread_asks_again_and_recovers(tmp_path: Path) -> None:
    # fails first, answers from then on: the feed retries on its own
    count = tmp_path / "count"
    cmd = script(
        tmp_path / "bin",
        "price",
        f"import pathlib, sys\np = pathlib.Path({str(count)!r})\n"
        "n = int(p.read_text()) if p.exists() else 0\np.write_text(str(n + 1))\n"
        "if not n: sys.exit('not yet')\nprint(1.75)\n",
    )
    feed = PriceFeed([str(cmd)], every=60.0, retry=0.05).start()
    try:
        assert feed.wait_first(30.0)
        got = wait_until(lambda: feed.reading().price_per_hour, "a retry that answers")
        assert got == 1.75 and feed.reading().problem is None
    finally:
        feed.close()


# -- the docs' examples, against stand-ins -------------------------------------------------

VASTAI = """\
import json, sys
assert sys.argv[1:] == ["show", "instance", "4242", "--raw"], sys.argv
# `vastai show instance ID --raw`: the instance's fields (a few of many)
print(json.dumps({"id": 4242, "actual_status": "running", "gpu_name": "RTX 4090",
                  "num_gpus": 2, "dph_base": 0.7, "dph_total": 0.8123, "disk_space": 64}))
"""
CURL = """\
import json, os, sys
args = sys.argv[1:]
assert args[args.index("-H") + 1] == "@" + os.environ["HOME"] + "/." + HEADER, args
url = args[-1]
if url == "https://api.runpod.io/graphql":
    q = json.loads(args[args.index("--data") + 1])["query"]
    assert "currentSpendPerHr" in q and "clientBalance" in q, q
    print(json.dumps({"data": {"myself": {"currentSpendPerHr": 1.39, "clientBalance": 87.25}}}))
elif url == "https://cloud.lambdalabs.com/api/v1/instances/0920582c7ff041399e34823a0be62549":
    print(json.dumps({"data": {"id": "0920582c7ff041399e34823a0be62549", "status": "active",
        "instance_type": {"name": "gpu_8x_h100_sxm5", "price_cents_per_hour": 2392}}}))
else:
    sys.exit("curl: (6) Could not resolve host")
"""


def doc_examples() -> dict[str, str]:
    lines = re.findall(r"^price_command = \[.*\]$", doc("cost.md"), re.MULTILINE)
    out = {}
    for line in lines:
        key = "vast" if "vastai" in line else "runpod" if "runpod" in line else "lambda"
        out[key] = line
    assert set(out) == {"vast", "runpod", "lambda"}, lines
    return out


@pytest.mark.parametrize(
    "provider, header, want",
    [("vast", "", (0.8123, None)), ("runpod", "runpod-header", (1.39, 87.25)),
     ("lambda", "lambda-header", (23.92, None))],
)  # fmt: skip
def test_the_docs_examples(tmp_path: Path, provider: str, header: str, want) -> None:
    bin_dir = tmp_path / "bin"
    script(bin_dir, "vastai", VASTAI)
    script(bin_dir, "curl", f"HEADER = {header!r}\n" + CURL)
    config = tmp_path / "config.toml"
    config.write_text(doc_examples()[provider] + "\n")
    settings = load_settings(str(config), environ={})
    environ = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "CONTAINER_ID": "4242",
        "LAMBDA_INSTANCE_ID": "0920582c7ff041399e34823a0be62549",
    }
    feed = price_feed(settings, environ, start=False)
    got = feed.read_once()
    assert got.problem is None, got.problem
    assert (got.price_per_hour, got.balance) == want
    assert got.source == f"price_command ({settings.price_command[0]})"


# -- the commands: `cost --json`, `snapshot --json` ---------------------------------------


def test_cost_and_snapshot_commands_say_where_the_price_came_from(tmp_path: Path) -> None:
    good = script(tmp_path / "bin", "provider", "print('{\"price_per_hour\": 1.2}')")
    bad = script(tmp_path / "bin", "broken", "import sys\nsys.exit('HTTP 401: bad API key')")
    env = clean_env(tmp_path, RGPU_PRICE_COMMAND=json.dumps([str(good)]))
    proc = subprocess.run(
        [str(RGPU_TUI), "cost", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["price_per_hour"] == 1.2 and data["price_source"] == "price_command (provider)"
    assert data["price_age_seconds"] is not None and data["price_read_at"].endswith("+00:00")
    env = clean_env(tmp_path, RGPU_PRICE_COMMAND=json.dumps([str(bad)]), RGPU_PRICE_PER_HOUR="0.5")
    runs = tmp_path / "runs"
    runs.mkdir()
    proc = subprocess.run(
        [str(RGPU_TUI), "snapshot", "--json", str(runs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    cost = json.loads(proc.stdout)["cost"]
    assert cost["price_per_hour"] == 0.5 and cost["price_source"] == "RGPU_PRICE_PER_HOUR"
    assert cost["price_problem"] == (
        "price_command (broken) failed (just now): exit status 1: HTTP 401: bad API key; "
        "showing price_per_hour $0.50/h from the settings"
    )
    proc = subprocess.run(
        [str(RGPU_TUI), "cost"], capture_output=True, text=True, env=env, timeout=60
    )
    assert "running       $0.50/h  (RGPU_PRICE_PER_HOUR)" in proc.stdout
    assert "! price_command (broken) failed (just now): exit status 1: HTTP 401" in proc.stdout
    assert os.environ.get("RGPU_PRICE_COMMAND") is None
