"""Faults in the run files themselves: a metrics line or status.json half-written or rewritten
in place, a 10 MB single line, a log that is not UTF-8, truncated, recreated or removed.
The last good value is kept with a sentence saying why, and the next refresh recovers.

Run: .venv/bin/pytest tests/faults -q
"""

from __future__ import annotations

import json
import time
import tracemalloc

from support.run_dir import make_run, metric_row, write_status
from tui.helpers import rendered, wait_for

from faults.helpers import HALF_WRITTEN, LOG_MISSING, alive, only_run, status_doc
from rgpu_tui import cli
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.render.snapshot_text import snapshot_to_text
from rgpu_tui.core.run.tail import MAX_LOG_LINE
from rgpu_tui.tui.app import RgpuApp

# -- torn and half-written files ---------------------------------------------------


def test_torn_metrics_line_waits_for_its_newline(tmp_path, collector) -> None:
    """Fault: metrics.jsonl read while its last line is half-written (torn)."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(epoch=3), epochs=3)
    c = collector(tmp_path / "runs")
    snap = c.refresh(time.time())
    assert snap.selected.metrics.rows == 3

    line = json.dumps(metric_row(4)) + "\n"
    with open(run / "metrics.jsonl", "a") as f:
        f.write(line[:25])  # torn mid-row
    snap = c.refresh(time.time())
    m = snap.selected.metrics
    assert (m.rows, m.last["epoch"], m.malformed_lines, m.problem) == (3, 3, 0, None)
    assert m.column("train/loss").values == (10.0, 5.0, 3.3333)
    assert only_run(snap).current_epoch == 3
    json.dumps(snapshot_to_json(snap))  # the torn state serialises

    with open(run / "metrics.jsonl", "a") as f:
        f.write(line[25:])
    m = c.refresh(time.time()).selected.metrics
    assert (m.rows, m.last["epoch"], m.malformed_lines) == (4, 4, 0)
    assert m.column("train/loss").values == (10.0, 5.0, 3.3333, 2.5)


def test_status_json_rewritten_in_place_keeps_the_last_good_value_and_says_why(
    tmp_path, collector, spawn
) -> None:
    """Fault: status.json replaced by a non-atomic writer (truncate, partial write, then
    the rest) while it is read: the last good value stays, the run says why, then recovers."""
    run = make_run(tmp_path / "runs", "exp", status=None, epochs=0)
    trainer = alive(spawn(cwd=run))
    write_status(run, status_doc(epoch=5, **trainer), mtime=time.time() - 30)
    c = collector(tmp_path / "runs")
    good = only_run(c.refresh(time.time()))
    assert (good.state, good.current_epoch, good.problem) == ("running", 5, None)

    new = json.dumps(status_doc(epoch=6, **trainer)).encode()
    with open(run / "status.json", "r+b", buffering=0) as f:
        f.truncate(0)  # the writer has just opened it with "w"
        r = only_run(c.refresh(time.time()))
        assert (r.state, r.current_epoch, r.total_epochs, r.problem) == (
            "running", 5, 10, HALF_WRITTEN,
        )  # fmt: skip
        f.write(new[: len(new) // 2])  # part of the new content
        snap = c.refresh(time.time())
        r = only_run(snap)
        assert (r.state, r.current_epoch, r.problem) == ("running", 5, HALF_WRITTEN)
        assert snapshot_to_json(snap)["runs"][0]["problem"] == HALF_WRITTEN
        assert f"({HALF_WRITTEN})" in snapshot_to_text(snap)
        f.write(new[len(new) // 2 :])  # the writer finishes
    r = only_run(c.refresh(time.time()))
    assert (r.state, r.current_epoch, r.problem) == ("running", 6, None)


async def test_half_written_status_json_in_the_app_header(tmp_path, spawn) -> None:
    """Fault: status.json half-written while the app refreshes: the header keeps the epoch
    and says why; once written whole the note goes away."""
    root = tmp_path / "runs"
    run = make_run(root, "exp", status=None, epochs=0)
    trainer = alive(spawn(cwd=run))
    write_status(run, status_doc(epoch=5, **trainer), mtime=time.time() - 30)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert "epoch 5/10" in rendered(app.view.run_header)
        (run / "status.json").write_bytes(json.dumps(status_doc(epoch=6, **trainer)).encode()[:40])
        app.request_refresh()
        await wait_for(pilot, lambda: HALF_WRITTEN in rendered(app.view.run_header))
        header = rendered(app.view.run_header)
        assert "RUN" in header and "epoch 5/10" in header
        assert app.refresh_error is None
        (run / "status.json").write_text(json.dumps(status_doc(epoch=6, **trainer)))
        app.request_refresh()
        await wait_for(pilot, lambda: "epoch 6/10" in rendered(app.view.run_header))
        assert HALF_WRITTEN not in rendered(app.view.run_header)


# -- the log ---------------------------------------------------------------------------


def test_a_10_mb_single_line_in_the_log(tmp_path, collector) -> None:
    """Fault: one 10 MB line (no newline for 10 MB) appended to train.log: the tail cuts it
    at 4096 characters, memory stays flat, and the lines around it are shown."""
    run = make_run(
        tmp_path / "runs", "exp", status=status_doc(), log=["epoch 1", "epoch 2"], epochs=3
    )
    c = collector(tmp_path / "runs")
    assert c.refresh(time.time()).selected.log.lines == ("epoch 1", "epoch 2")

    with open(run / "train.log", "ab") as f:
        f.write(b"x" * (10 * 1024 * 1024) + b"\nafter the long line\n")
    tracemalloc.start()
    try:
        snap = c.refresh(time.time())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = snap.selected.log.lines
    assert lines[:2] == ("epoch 1", "epoch 2")
    assert lines[2] == "x" * MAX_LOG_LINE
    assert lines[3:] == ("after the long line",)
    assert peak < 3 * 1024 * 1024, peak  # read in batches, never the whole line
    assert snap.selected.log.problem is None

    # a 10 MB line still being written is not shown until its newline arrives
    with open(run / "train.log", "ab") as f:
        f.write(b"y" * (10 * 1024 * 1024))
    assert c.refresh(time.time()).selected.log.lines[-1] == "after the long line"
    with open(run / "train.log", "ab") as f:
        f.write(b"y\nlast\n")
    assert c.refresh(time.time()).selected.log.lines[-2:] == ("y" * MAX_LOG_LINE, "last")


def test_a_10_mb_single_line_in_metrics_jsonl_is_skipped_and_counted(tmp_path, collector):
    """Fault: a 10 MB line in metrics.jsonl: skipped as malformed, the rows after it count."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), epochs=2)
    c = collector(tmp_path / "runs")
    c.refresh(time.time())
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b'{"epoch": 3, "junk": "' + b"z" * (10 * 1024 * 1024) + b'"}\n')
        f.write((json.dumps(metric_row(3)) + "\n").encode())
    m = c.refresh(time.time()).selected.metrics
    assert (m.rows, m.last["epoch"], m.malformed_lines) == (3, 3, 1)
    assert "junk" not in m.columns


def test_non_utf8_log_is_shown_with_replacement_characters(tmp_path, collector, capsys):
    """Fault: train.log holding bytes that are not UTF-8 (latin-1 text, binary junk) and a
    UTF-8 character torn between two writes."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=None, epochs=3)
    (run / "train.log").write_bytes(
        b"epoch 1 ok\n"
        b"caf\xe9 au lait \xff\xfe\n"  # latin-1 and a BOM-like pair
        b"\x80\x81\x00binary\n" + "ünïcödé ok\n".encode()
    )
    c = collector(tmp_path / "runs")
    snap = c.refresh(time.time())
    assert snap.selected.log.lines == (
        "epoch 1 ok",
        "caf\ufffd au lait \ufffd\ufffd",
        "\ufffd\ufffd\x00binary",
        "ünïcödé ok",
    )
    assert snap.selected.log.problem is None

    été = "été\n".encode()
    with open(run / "train.log", "ab") as f:
        f.write(été[:1])  # torn inside the first character
    c.refresh(time.time())
    with open(run / "train.log", "ab") as f:
        f.write(été[1:])
    assert c.refresh(time.time()).selected.log.lines[-1] == "été"

    # what `rgpu-tui snapshot --json` prints for it is valid JSON with the same text
    assert cli.main(["snapshot", "--json", "--fake-gpus", "1", str(tmp_path / "runs")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"]["log_tail"][1] == "caf\ufffd au lait \ufffd\ufffd"
    assert out["selected"]["log_tail"][-1] == "été"


def test_log_truncated_then_recreated_then_removed(tmp_path, collector) -> None:
    """Fault: train.log truncated in place, deleted and created again, deleted: the tail
    starts over each time and never shows stale lines (the new content is read while it is
    still shorter than the old, as at a 1 s refresh)."""
    old = [f"2026-12-02 10:00:0{i} | INFO     | old line {i}" for i in range(3)]
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=old, epochs=3)
    log = run / "train.log"
    c = collector(tmp_path / "runs")
    assert c.refresh(time.time()).selected.log.lines == tuple(old)

    with open(log, "r+b") as f:  # truncated in place (same inode)
        f.truncate(0)
    assert c.refresh(time.time()).selected.log.lines == ()
    with open(log, "ab") as f:
        f.write(b"new 1\n")
    assert c.refresh(time.time()).selected.log.lines == ("new 1",)
    with open(log, "ab") as f:
        f.write(b"new 2\n")
    assert c.refresh(time.time()).selected.log.lines == ("new 1", "new 2")

    log.unlink()  # deleted: the tail empties and says why
    view = c.refresh(time.time()).selected.log
    assert (view.lines, view.problem) == ((), LOG_MISSING)
    log.write_text("again\n")  # created again (ext4 may hand it the same inode)
    view = c.refresh(time.time()).selected.log
    assert (view.lines, view.problem) == (("again",), None)


def test_log_truncated_or_recreated_and_grown_past_the_old_size_between_two_refreshes(
    tmp_path, collector
):
    """Fault: train.log truncated in place (`> train.log`), or deleted and created again,
    and written past its old size before the next refresh."""
    run = make_run(tmp_path / "runs", "exp", status=status_doc(), log=["old 1", "old 2"], epochs=3)
    log = run / "train.log"
    c = collector(tmp_path / "runs")
    assert c.refresh(time.time()).selected.log.lines == ("old 1", "old 2")
    with open(log, "r+b") as f:
        f.truncate(0)
        f.write(b"".join(b"restarted line %d\n" % i for i in range(10)))
    lines = c.refresh(time.time()).selected.log.lines
    assert lines == tuple(f"restarted line {i}" for i in range(10))

    log.unlink()
    log.write_text("".join(f"recreated line {i}\n" for i in range(20)))
    lines = c.refresh(time.time()).selected.log.lines
    assert lines == tuple(f"recreated line {i}" for i in range(20))
