"""A remote host that sends too much or nonsense: its document is
bounded (60 deltas of 16 MB each took the fleet to 1.08 GB; past 64 MB the link now drops
with one line), and its numbers out of range (a price of -5, a progress of -3.5, an epoch
of -5 or -1, a memory of -1) are unknown, and the host view says which.

The link runs a real process in place of ssh (a script that speaks the agent's lines);
nothing is mocked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support.waiting import wait_until

from rgpu_tui.core.base.hosts import HostSpec
from rgpu_tui.core.fleet.fleet import DOC_MAX_BYTES, DOC_MEASURE_BYTES, HostLink
from rgpu_tui.core.fleet.host_ranges import host_snapshot
from rgpu_tui.core.model.snapshot import SCHEMA_VERSION

DOC = {"generated_at": "2027-01-15T08:00:00+00:00", "root": "/r", "runs": [],
       "schema_version": SCHEMA_VERSION}  # fmt: skip

# stands in for `ssh HOST rgpu-tui agent ROOT`: the hello, a snapshot, then deltas of
# argv[1] bytes each, argv[2] of them; then it waits for its stdin to close
FAKE_AGENT = """\
import json, sys
size, count = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout
out.write(json.dumps({"agent": "rgpu-tui", "version": "0.1.0", "schema_version": %d,
                      "root": "/r", "interval": 1.0, "heartbeat": 3600.0}) + "\\n")
out.write(json.dumps({"snapshot": %s, "seq": 0}) + "\\n")
out.flush()
for n in range(1, count + 1):
    op = ["=", ["junk%%d" %% n], "x" * size]
    out.write(json.dumps({"delta": [op], "seq": n}) + "\\n")
    out.flush()
sys.stdin.read()
"""


def fake_ssh(tmp_path: Path, size: int, count: int) -> str:
    script = tmp_path / "fake-ssh"
    code = FAKE_AGENT % (SCHEMA_VERSION, json.dumps(DOC))
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.argv[1:] = ['{size}', '{count}']\n"
                      + code)  # fmt: skip
    script.chmod(0o755)
    return str(script)


def test_a_host_whose_document_outgrows_the_bound_is_dropped_in_one_line(tmp_path) -> None:
    size = 16 * 1024 * 1024
    link = HostLink(HostSpec(name="h1", ssh="h1", root="/r"), ssh=fake_ssh(tmp_path, size, 60),
                    reconnect=False).start()  # fmt: skip
    try:
        down = wait_until(lambda: (s := link.state()).error and s, "the link to drop", timeout=120)
    finally:
        link.close()
    assert down.error.startswith(f"the host's snapshot grew past {DOC_MAX_BYTES >> 20} MB")
    assert "\n" not in down.error and not down.reachable
    kept = len(json.dumps(down.snapshot, separators=(",", ":")))
    assert kept <= DOC_MAX_BYTES + DOC_MEASURE_BYTES  # the last document within the bound
    assert down.bytes_in < 8 * size  # it stopped reading at the bound, not after 60 deltas


def test_a_host_under_the_bound_keeps_its_link(tmp_path) -> None:
    link = HostLink(HostSpec(name="h1", ssh="h1", root="/r"), ssh=fake_ssh(tmp_path, 1 << 20, 20),
                    reconnect=False).start()  # fmt: skip
    try:
        up = wait_until(
            lambda: (s := link.state()).seq == 20 and s, "20 deltas applied", timeout=60
        )
        assert up.reachable and up.error is None and len(up.snapshot) == 4 + 20
    finally:
        link.close()


# -- numbers out of range -------------------------------------------------------------------


def hostile_doc() -> dict:
    return {
        **DOC,
        "runs": [
            {"run_dir": "/r/exp1", "name": "exp1", "state": "running", "pid": 4242,
             "current_epoch": -5, "total_epochs": -1, "progress": -3.5, "eta_seconds": -60,
             "best_epoch": 3, "gpu_indices": [0, -2]},
            {"run_dir": "/r/exp2", "name": "exp2", "state": "completed", "current_epoch": 10,
             "total_epochs": 10, "progress": 1.0, "problem": "status.json: odd"},
        ],
        "cost": {"configured": True, "price_per_hour": -5, "spent": 1.5, "idle_minutes": -1},
        "system": {"cpu_percent": 250.0, "cpu_max_percent": 50.0, "load_avg": [1, -1, 0],
                   "mem_used_bytes": -1, "mem_total_bytes": 8e9, "swap_used_bytes": 0,
                   "swap_total_bytes": 0,
                   "disk": {"path": "/", "total_bytes": 10, "used_bytes": -1,
                            "free_bytes": 11}},
        "gpus": {"available": True, "reason": None, "source": "nvml", "devices": [
            {"index": 0, "name": "H100", "uuid": "u", "state": "ok", "util_percent": 101,
             "mem_used_mib": -1, "mem_total_mib": 81559, "util_history": [5, -1, 200, 7],
             "processes": [{"pid": -4, "name": "x", "used_mib": 1, "run_dir": None,
                            "kind": "unknown"},
                           {"pid": 42, "name": "y", "used_mib": -3, "run_dir": None,
                            "kind": "unknown"}]},
            {"index": -1, "name": "ghost", "uuid": "g", "state": "ok"}]},
    }  # fmt: skip


def test_numbers_out_of_range_are_unknown_and_said() -> None:
    snap = host_snapshot(hostile_doc())
    exp1, exp2 = snap.runs
    assert (exp1.current_epoch, exp1.total_epochs, exp1.progress, exp1.eta_seconds) == (
        None, None, None, None,
    )  # fmt: skip
    assert exp1.best_epoch == 3 and exp1.pid == 4242 and exp1.gpu_indices == (0,)
    assert exp1.problem == (
        "from the host: current_epoch out of range (-5), total_epochs out of range (-1), "
        "progress out of range (-3.5), eta_seconds out of range (-60), gpu_indices out of "
        "range (-2)"
    )
    assert exp2.problem == "status.json: odd" and exp2.progress == 1.0  # in range: as is
    assert snap.cost.price_per_hour is None and snap.cost.spent == 1.5
    assert snap.cost.idle_minutes == 10.0  # not optional: its default
    assert snap.system.cpu_percent is None and snap.system.cpu_max_percent == 50.0
    assert snap.system.load_avg is None and snap.system.mem_used_bytes is None
    assert snap.system.disk is None
    [gpu] = snap.gpus.devices  # the GPU with index -1 is left out
    assert gpu.util_percent is None and gpu.mem_used_mib is None
    [proc] = gpu.processes  # pid -4 left out; a memory of -3 MiB unknown
    assert proc.pid == 42 and proc.used_mib is None
    assert gpu.mem_total_mib == 81559 and gpu.util_history == (5, None, None, 7)
    assert snap.problem.startswith("host sent numbers out of range, shown as unknown: ")
    for said in ("cost.price_per_hour (-5)", "cost.idle_minutes (-1)", "system.cpu_percent "
                 "(250.0)", "gpus.devices[0].util_percent (101)"):  # fmt: skip
        assert said in snap.problem or "more" in snap.problem
    assert "\n" not in snap.problem
