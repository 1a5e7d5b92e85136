"""Text output of hostile runs: the text snapshot, the GPU,
system and cost text never hold a character a terminal acts on; the JSON keeps the
original strings (json escapes them)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rich.text import Text
from support.hostile import (
    BAD_BYTES_NAME,
    CSV_METRIC,
    ERROR_MESSAGE,
    ERROR_TYPE,
    HOSTILE_NAME,
    LOG_LINES,
    METRIC,
    MODEL,
    make_hostile_root,
    unsafe_chars,
)

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.model.snapshot import (
    CostView,
    DiskInfo,
    GpuDevice,
    GpuProcess,
    GpuView,
    SystemView,
)
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.cost import cost_to_text
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.render.snapshot_text import gpus_to_text, snapshot_to_text, system_to_text
from rgpu_tui.tui.inert import inert, inert_body


def _snapshot(root: Path, selected: str | None = None):
    return RunsWatcher(str(root)).refresh(now=time.time(), selected=selected)


def test_snapshot_text_of_a_hostile_root_is_inert(tmp_path: Path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    snap = _snapshot(root, selected=str(root / HOSTILE_NAME))
    assert snap.selected.run_dir == str(root / HOSTILE_NAME)
    text = snapshot_to_text(snap)
    assert unsafe_chars(text) == []
    text.encode("utf-8")  # no lone surrogate: prints under PYTHONIOENCODING=utf-8
    # every field is there, visibly
    assert "evil^[]0;PWNED^G" in text  # the run name, and the selected run's path
    assert f"{root}/evil^[]0;PWNED^G" in text
    assert "Boom^[]52;c;ZWNobyBwd25lZA==^G: clear^[[2J ask^[[6n c1\\x9b31m" in text
    assert "mAP^[]0;PWNED^G" in text  # the optimised metric's name (best, and its row)
    for shown in ("^[]0;PWNED^G", "clear^[[2J", "ask^[[6n", "c1\\x9b31m", "rtl\\u202eevil"):
        assert f"    {shown}" in text.splitlines(), shown  # the log lines
    assert "    tab here" in text.splitlines()  # the tab, to the next 8th column
    # the non-UTF-8 name with a newline stays on its one row of the table
    [bad_row] = [line for line in text.splitlines() if line.startswith("completed")]
    assert "bad\\xffname^Jsecond line" in bad_row


def test_snapshot_json_keeps_the_original_strings(tmp_path: Path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    snap = _snapshot(root, selected=str(root / HOSTILE_NAME))
    dumped = json.dumps(snapshot_to_json(snap))
    assert "\\u001b]0;PWNED\\u0007" in dumped  # escaped by json, not by printable
    assert "^[" not in dumped
    data = json.loads(dumped)
    run = next(r for r in data["runs"] if r["run_dir"] == str(root / HOSTILE_NAME))
    assert run["name"] == HOSTILE_NAME
    assert run["error"] == f"{ERROR_TYPE}: {ERROR_MESSAGE}"
    assert run["model"] == f"{MODEL[0]}-{MODEL[1]}"
    assert run["best_metric_name"] == METRIC
    assert METRIC in data["selected"]["metrics"]["columns"]
    assert data["selected"]["log_tail"][-len(LOG_LINES) :] == list(LOG_LINES)
    # the non-UTF-8 name: a lone surrogate in JSON (\udcff), which gives back the bytes
    names = [os.fsencode(r["run_dir"]) for r in data["runs"]]
    assert os.path.join(os.fsencode(root), BAD_BYTES_NAME) in names


def test_a_results_csv_header_is_kept_in_json_and_inert_in_text(tmp_path: Path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    [csv_run] = [p for p in root.iterdir() if p.name.startswith("csv")]
    snap = _snapshot(root, selected=str(csv_run))
    assert snap.selected.metrics.columns == ("epoch", CSV_METRIC)
    assert unsafe_chars(snapshot_to_text(snap)) == []


def test_gpu_and_system_text_with_hostile_names(tmp_path: Path) -> None:
    proc = GpuProcess(
        pid=7, name="python" + "\x1b[6n", used_mib=1.0, run_dir="/r/run\x1b]0;X\x07", kind="run"
    )
    gpus = GpuView(
        available=True,
        reason=None,
        source="nvml",
        driver_version="550\x9b",
        devices=(GpuDevice(index=0, name="H100\x1b[2J", uuid=None, state="ok", processes=(proc,)),),
        warnings=("straggler: run\x1b]52;c;eA==\x07",),
    )
    system = SystemView(
        cpu_percent=1.0,
        cpu_max_percent=1.0,
        load_avg=None,
        mem_used_bytes=None,
        mem_total_bytes=None,
        swap_used_bytes=None,
        swap_total_bytes=None,
        disk=DiskInfo("/runs\x1b]0;T\x07", 10, 5, 5),
        warnings=("disk full: /runs\x1b[2J",),
    )
    lines = gpus_to_text(gpus) + system_to_text(system)
    assert all(unsafe_chars(line) == [] for line in lines), lines
    text = "\n".join(lines)
    assert "pids 7 run^[]0;X^G" in text
    assert "disk /runs^[]0;T^G" in text


def test_cost_text_with_a_hostile_run_name(tmp_path: Path) -> None:
    root = make_hostile_root(tmp_path / "runs")
    run = _snapshot(root).run(str(root / HOSTILE_NAME))
    cost = CostView(
        configured=True,
        price_per_hour=2.0,
        run_spent=1.0,
        warnings=(f"Balance runs out before run {run.name} finishes",),
    )
    text = cost_to_text(cost, Settings(price_per_hour=2.0), time.time(), None, run)
    assert unsafe_chars(text) == []
    assert "run evil^[]0;PWNED^G" in text


def test_inert_keeps_styles_on_the_same_characters() -> None:
    row = Text("ok ")
    row.append("ev\x1bil", style="bold")
    row.append(" tail", style="red")
    out = inert(row)
    assert out.plain == "ok ev^[il tail"
    assert [(out.plain[s.start : s.end], str(s.style)) for s in out.spans] == [
        ("ev^[il", "bold"),
        (" tail", "red"),
    ]
    assert inert(Text("plain")) is not None and inert(Text("plain")).plain == "plain"


def test_inert_body_never_reads_markup() -> None:
    body = inert_body("run [bold]x[/] and [/]\x1b]0;T\x07\nnext")
    assert isinstance(body, Text)
    assert body.plain == "run [bold]x[/] and [/]^[]0;T^G\nnext"


def test_invisible_characters_in_run_names_are_shown_escaped(tmp_path: Path) -> None:
    # A zero-width space makes a twin of a run's name, U+2028 breaks a
    # line in a label, a bidi isolate and a tag character hide text: every one is escaped
    # in the text snapshot and in the exporter's run labels
    from rgpu_tui.core.render.prometheus import run_labels

    root = tmp_path / "runs"
    names = ["exp\u200b1", "line\u2028break", "iso\u2067x\u2069", "tag\U000e0041", "bom\ufeff"]
    for name in names:
        run = root / name
        run.mkdir(parents=True)
        (run / "status.json").write_text(json.dumps({"state": "completed", "total_epochs": 1}))
    snap = _snapshot(root)
    text = snapshot_to_text(snap)
    assert unsafe_chars(text) == []
    for shown in (
        "exp\\u200b1",
        "line\\u2028break",
        "iso\\u2067x\\u2069",
        "tag\\U000e0041",
        "bom\\ufeff",
    ):
        assert shown in text, shown
    labels = sorted(run_labels(snap).values())
    assert labels == sorted(
        ["exp\\u200b1", "line\\u2028break", "iso\\u2067x\\u2069", "tag\\U000e0041", "bom\\ufeff"]
    )
    assert all(unsafe_chars(label) == [] for label in labels)
