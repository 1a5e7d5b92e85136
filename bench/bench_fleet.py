#!/usr/bin/env python
"""What the fleet costs on each SSH link: bytes per second per host, in steady state.

Three "machines" (tests/support/ssh_server.py: asyncssh servers on 127.0.0.1 that run
`rgpu-tui agent ROOT` through /bin/sh, as sshd would), each with one live run written by
bench/replay.py (one epoch every 2 s, 10 train.log lines a second, 200 epochs of history:
the stress case of bench_app.py) and simulated GPUs. The real OpenSSH client reaches each
one through a byte-counting TCP relay, so what is counted is what crosses the link:
encrypted SSH packets, both ways. One core.fleet.fleet.HostLink per host (what `fleet` and the
fleet screen use) keeps each host's snapshot up to date.

After `--warmup` seconds (the connection, the first full snapshot) it measures over
`--seconds` and prints, per host: bytes/s from the host (the link, and the agent's JSON
lines alone), bytes/s to it, lines/s, and the size of the first full snapshot. With
`--select` each host's live run is selected (its metrics and log tail stream too: what a
host's full view costs).

    .venv/bin/python bench/bench_fleet.py                     # 3 hosts, 1 GPU each, 60 s
    .venv/bin/python bench/bench_fleet.py --gpus 8 --seconds 30
    .venv/bin/python bench/bench_fleet.py --select              # each host's full view
    .venv/bin/python bench/bench_fleet.py --interval 1 --json
    .venv/bin/python bench/bench_fleet.py --tui --seconds 30   # the fleet screen itself

With `--tui` the links are the fleet screen's own: `rgpu-tui fleet` runs in a
pseudo-terminal of 80x24 (bench_app's), and what is measured is the bytes it writes to
the terminal (the hosts table, then h1's full view after `enter`), and each link's bytes
in both phases.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchlib import log, machine, utc_iso

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from support.ssh_server import SshKeys, SshServer  # noqa: E402

from rgpu_tui.core.base.hosts import HostSpec  # noqa: E402
from rgpu_tui.core.fleet.fleet import HostLink  # noqa: E402

REPLAY = HERE / "replay.py"
FIXTURE_RUN = HERE.parent / "tests" / "fixtures" / "run_completed"
BUDGET = 2048  # bytes/s per host link (issue 16)


class Relay:
    """127.0.0.1:port -> 127.0.0.1:target, counting the bytes each way."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.down = 0  # from the server (the host) to the client
        self.up = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(client, server, "up"), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, "down"), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, way: str) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    setattr(self, way, getattr(self, way) + len(data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.down, self.up

    def close(self) -> None:
        self._listener.close()


def start_replayer(run_dir: Path, seconds: float) -> subprocess.Popen:
    argv = [
        sys.executable, str(REPLAY), str(run_dir), "--epoch-seconds", "2",
        "--log-lines-per-second", "10", "--epochs", "100000", "--prefill-epochs", "200",
        "--duration", str(seconds),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (run_dir / "status.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the replayer did not start")
        time.sleep(0.05)
    return proc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=3, help="machines, each with one live run (3)")
    p.add_argument("--gpus", type=int, default=1, help="simulated GPUs per machine (1)")
    p.add_argument("--seconds", type=float, default=60.0, help="measured seconds (60)")
    p.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring (10)")
    p.add_argument("--interval", type=float, default=None, help="the agents' --interval")
    p.add_argument(
        "--select",
        action="store_true",
        help="select each host's live run (its metrics and log tail stream: a full view)",
    )
    p.add_argument(
        "--tui",
        action="store_true",
        help="measure `rgpu-tui fleet` itself in an 80x24 pty: bytes to the terminal",
    )
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = p.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="rgpu-bench-fleet-"))
    keys = SshKeys(base / "ssh")
    venv_bin = str(Path(sys.executable).parent)
    servers, relays, replayers, links = [], [], [], []
    command = "rgpu-tui agent" + (f" --interval {args.interval:g}" if args.interval else "")
    try:
        for i in range(args.hosts):
            name = f"h{i + 1}"
            home = base / name
            root = home / "runs"
            (home / ".config").mkdir(parents=True)
            shutil.copytree(FIXTURE_RUN, root / "done")
            replayers.append(start_replayer(root / "live", args.warmup + args.seconds + 30))
            env = {
                "PATH": f"{venv_bin}:/usr/bin:/bin",
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "LANG": "C.UTF-8",
                "RGPU_FAKE_GPUS": str(args.gpus),
                "RGPU_PRICE_PER_HOUR": "1.89",
            }
            server = SshServer(keys, env, home).start()
            relay = Relay(server.port)
            keys.add_host(name, relay.port, server)
            servers.append(server)
            relays.append(relay)
            spec = HostSpec(name, name, str(root), command)
            links.append(HostLink(spec, ssh_config=str(keys.config), connect_timeout=20))
        if args.tui:
            return tui_bench(args, base, keys, links, relays)
        log(f"{args.hosts} hosts, {args.gpus} GPU(s) each, one live run each; warming up")
        for link in links:
            link.start()
        time.sleep(args.warmup)
        for link in links:
            if not link.state().reachable:
                raise RuntimeError(f"{link.name}: {link.state().error}")
        first = {link.name: link.state() for link in links}
        if args.select:
            for link in links:
                live = next(r for r in first[link.name].snapshot["runs"] if r["name"] == "live")
                answer = link.send({"cmd": "select", "run": live["run_dir"]}).result(30)
                if not answer["ok"]:
                    raise RuntimeError(f"{link.name}: select: {answer['error']}")
            time.sleep(args.warmup / 2)
        before = [(r.counts(), link.state().bytes_in, s.bytes_out) for r, link, s in
                  zip(relays, links, servers, strict=True)]  # fmt: skip
        lines_before = [link.state().seq for link in links]
        log(f"measuring {args.seconds:g} s")
        time.sleep(args.seconds)
        results = []
        for i, link in enumerate(links):
            (down0, up0), json0, _ = before[i]
            down1, up1 = relays[i].counts()
            state = link.state()
            results.append(
                {
                    "host": link.name,
                    "link_down_bytes_per_s": (down1 - down0) / args.seconds,
                    "link_up_bytes_per_s": (up1 - up0) / args.seconds,
                    "json_bytes_per_s": (state.bytes_in - json0) / args.seconds,
                    "lines_per_s": (state.seq - lines_before[i]) / args.seconds,
                    "reachable": state.reachable,
                    "first_snapshot_bytes": len(
                        json.dumps(first[link.name].snapshot, separators=(",", ":"))
                    ),
                }
            )
    finally:
        for link in links:
            link.close()
        for proc in replayers:
            proc.terminate()
            proc.wait(30)
        for server in servers:
            server.stop()
        for relay in relays:
            relay.close()
        shutil.rmtree(base, ignore_errors=True)

    report = {
        "when": utc_iso(),
        "machine": machine(),
        "hosts": args.hosts,
        "gpus_per_host": args.gpus,
        "interval": args.interval or 2.0,  # the agent's default
        "seconds": args.seconds,
        "selected": args.select,
        "budget_bytes_per_s": BUDGET,
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"fleet link, {args.hosts} hosts x 1 live run, {args.gpus} GPU(s) each, agent interval "
        f"{report['interval']:g} s, {args.seconds:g} s measured"
        + (", the live run selected (a full view)" if args.select else "")
        + f" ({report['when']})"
    )
    print(f"{'host':<6}{'link down B/s':>15}{'json B/s':>10}{'link up B/s':>13}"
          f"{'lines/s':>9}{'first snapshot':>16}")  # fmt: skip
    for r in results:
        verdict = (
            "ok" if r["link_down_bytes_per_s"] + r["link_up_bytes_per_s"] <= BUDGET else ("OVER")
        )
        print(
            f"{r['host']:<6}{r['link_down_bytes_per_s']:>15.0f}{r['json_bytes_per_s']:>10.0f}"
            f"{r['link_up_bytes_per_s']:>13.0f}{r['lines_per_s']:>9.2f}"
            f"{r['first_snapshot_bytes']:>14} B  {verdict} (budget {BUDGET} B/s)"
        )
    return 0


def tui_bench(args, base: Path, keys: SshKeys, links: list, relays: list) -> int:
    """`rgpu-tui fleet` in an 80x24 pty: bytes/s to the terminal with the hosts table,
    then with h1's full view (`enter`), and each link's bytes/s in both phases."""
    from bench_app import Recorder, app_env, rows_report, spawn_in_pty, stop_child

    hosts = [f"{link.name}:{link.spec.root}" for link in links]
    argv = [str(Path(sys.executable).parent / "rgpu-tui"), "fleet", "--ssh-config"]
    argv += [str(keys.config), "--connect-timeout", "20", *hosts]
    if args.interval:  # the agents' pace, through each host's remote_command
        log("--interval is ignored with --tui (the fleet runs `rgpu-tui agent`)")
    pid, fd = spawn_in_pty(argv, app_env(base, None), 80, 24)
    rec = Recorder(fd)
    phases = {}
    try:
        for phase in ("table", "full view"):
            if phase == "full view":
                os.write(fd, b"\r")  # enter: h1, the cursor's host
            time.sleep(args.warmup)
            t0, b0, links0 = time.monotonic(), rec.bytes_now(), [r.counts() for r in relays]
            time.sleep(args.seconds)
            t1, b1, links1 = time.monotonic(), rec.bytes_now(), [r.counts() for r in relays]
            by_row: dict[int, float] = {}
            for pos, rate in rows_report(rec.window(t0, t1), t1 - t0).items():
                row = int(pos.split(",")[0])
                by_row[row] = round(by_row.get(row, 0.0) + rate, 1)
            phases[phase] = {
                "terminal_bytes_per_s": (b1 - b0) / args.seconds,
                "terminal_bytes_per_s_by_row": dict(sorted(by_row.items())),
                "link_bytes_per_s": {
                    link.name: (sum(c1) - sum(c0)) / args.seconds
                    for link, c0, c1 in zip(links, links0, links1, strict=True)
                },
            }
    finally:
        stopped = stop_child(pid, fd)
    report = {
        "when": utc_iso(),
        "machine": machine(),
        "hosts": args.hosts,
        "gpus_per_host": args.gpus,
        "size": "80x24",
        "seconds": args.seconds,
        "phases": phases,
        "stopped": stopped,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"fleet screen at 80x24, {args.hosts} hosts x 1 live run, {args.gpus} GPU(s) each, "
        f"{args.seconds:g} s measured per phase ({report['when']}); quit by {stopped}"
    )
    for phase, r in phases.items():
        per_link = "  ".join(f"{h} {b:.0f}" for h, b in r["link_bytes_per_s"].items())
        print(f"{phase:<10} terminal {r['terminal_bytes_per_s']:>7.0f} B/s   links B/s: {per_link}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
