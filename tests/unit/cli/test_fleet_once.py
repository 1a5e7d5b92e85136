"""`rgpu-tui fleet --once` prints the screen's rows (core.fleet.fleet_summary): a host's
snapshot read back and held to the local ranges, so a hostile host's numbers (a price of
-5 $/h, a GPU at 1e9 %) are unknown in the printed table as they are on the screen, and a
snapshot that cannot be read is said on its host's line. The real Collector's JSON, then
altered as a hostile agent would send it."""

from __future__ import annotations

import time
from types import SimpleNamespace

from rgpu_tui.cli.fleet import table
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.collect import Collector


def _state(name: str, doc) -> SimpleNamespace:
    return SimpleNamespace(
        name=name, reachable=True, settled=True, error=None, since=None, snapshot=doc
    )


def _doc(root) -> dict:
    snap = Collector(str(root), fake_gpus=2, one_shot=True).refresh(time.time())
    return snapshot_to_json(snap)


def test_a_hostile_hosts_numbers_are_unknown_in_once(tmp_path) -> None:
    good = _doc(tmp_path)
    good["cost"].update(configured=True, price_per_hour=2.5)
    for device in good["gpus"]["devices"]:
        device["util_percent"] = 40.0
    odd = _doc(tmp_path)
    odd["cost"].update(configured=True, price_per_hour=-5)
    odd["gpus"]["devices"][0]["util_percent"] = 1e9
    odd["gpus"]["devices"][1]["util_percent"] = 60.0
    lines = table([_state("good", good), _state("odd", odd)])
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["good"] == ["yes", "2", "sim", "40%", "no", "runs", "2.50"]
    # out of range is unknown: no price, and the GPU mean of the GPU that gave a sane number
    assert rows["odd"] == ["yes", "2", "sim", "60%", "no", "runs", "?"]
    assert "-5" not in "\n".join(lines) and "1000000000" not in "\n".join(lines)


def test_an_unreadable_snapshot_is_said_on_its_hosts_line(tmp_path) -> None:
    doc = _doc(tmp_path)
    doc["runs"] = "not a list"
    lines = table([_state("bad", doc)])
    assert lines[1].split() == ["bad", "yes"]
    assert lines[2].startswith("  bad: its snapshot is unreadable: ")
