"""The real app under Textual's Pilot, at 80x24 and 160x48."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from rgpu_tui.core.base.text import shorten_middle
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.widgets.gpus import GpuPane
from rgpu_tui.tui.widgets.log_pane import LogPane
from rgpu_tui.tui.widgets.metrics import MetricsPane
from rgpu_tui.tui.widgets.run_header import RunHeader
from rgpu_tui.tui.widgets.runs_list import RunsList

from .helpers import make_app, rendered, rendered_words, wait_for

SIZES = [(80, 24), (160, 48)]


def option_texts(app: RgpuApp) -> list[str]:
    runs = app.query_one(RunsList)
    return [runs.get_option_at_index(i).prompt.plain for i in range(runs.option_count)]


@pytest.mark.parametrize("size", SIZES)
async def test_panes_show_the_newest_run(runs_root, size):
    app = make_app(runs_root)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        # newest activity first: live (t0+3590), failed (t0+500), done (t0+106)
        texts = option_texts(app)
        assert [t.split()[-1] for t in texts] == ["live_exp", "failed_oom", "sample_done"]
        assert [t.split()[0] for t in texts] == ["RUN", "FAIL", "DONE"]
        if size[0] >= 100:  # a narrow list (80 columns) shows state and name only
            assert "30%" in texts[0]
            assert "40%" in texts[1]  # progress from metrics
            assert "100%" in texts[2]
        else:
            assert texts[0] == "RUN  live_exp"

        header = rendered(app.query_one(RunHeader))
        assert "live_exp" in header and "epoch 30/100" in header
        assert "ETA 1h09m" in header  # 70 epochs x 60 s - 10 s since the update
        assert "elapsed 1h00m" in header
        assert "best mAP50-95 1.5 @ep30" in header
        assert "updated 10s ago" in header

        metrics = rendered(app.query_one(MetricsPane))
        assert metrics.splitlines()[0].startswith("train/loss")
        assert "mAP50-95" in metrics and "lr/group0" in metrics
        assert "0.6667" in metrics  # last train/loss = 20/30

        log = app.query_one(LogPane)
        assert log.lines[-1] == "11:30:00 Epoch 30 - Average loss: 0.6667"


@pytest.mark.parametrize("size", SIZES)
async def test_selecting_another_run_switches_every_pane(runs_root, size):
    app = make_app(runs_root)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("j", "enter")  # the failed run
        await wait_for(pilot, lambda: "failed_oom" in rendered(app.query_one(RunHeader)))
        header = rendered(app.query_one(RunHeader))
        assert "FAIL" in header and "epoch 5/10" in header
        assert "OutOfMemoryError: CUDA out of memory" in header
        assert app.query_one(LogPane).lines[-1] == (
            "10:00:05 ERROR CUDA out of memory while allocating 2.00 GiB"
        )
        assert "5" in rendered(app.query_one(MetricsPane))  # train/loss 20/4

        await pilot.press("down", "enter")  # the completed sample run
        await wait_for(pilot, lambda: "sample_done" in rendered(app.query_one(RunHeader)))
        header = rendered(app.query_one(RunHeader))
        assert "DONE" in header and "epoch 3/3" in header and "@ep3" in header
        assert "Training complete" in app.query_one(LogPane).lines[-1]
        assert app.view.selected.endswith("sample_done")

        await pilot.press("k", "k", "enter")
        await wait_for(pilot, lambda: "live_exp" in rendered(app.query_one(RunHeader)))


async def test_m_pages_through_the_metrics(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.query_one(MetricsPane)
        labels = lambda: [row.split()[0] for row in rendered(pane).splitlines()]  # noqa: E731
        # live_exp: the main trio first, then the other numeric columns in the file's order
        # (current_metric and best_metric repeat mAP50-95: not shown)
        assert labels() == ["train/loss", "mAP50-95", "lr/group0"]
        assert pane.border_title == "metrics 1/2 (m: next)"
        await pilot.press("m")
        assert labels() == ["time", "train/box_loss", "mAP50"]
        assert pane.border_title == "metrics 2/2 (m: next)"
        await pilot.press("m")  # and round again
        assert labels() == ["train/loss", "mAP50-95", "lr/group0"]
        assert pane.border_title == "metrics 1/2 (m: next)"


async def test_help_opens_and_closes(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ != "HelpScreen"
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_live_refresh_picks_up_a_new_epoch(runs_root):
    app = make_app(runs_root, interval=0.05)
    live = runs_root.root / "live_exp"
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        row = {"epoch": 31, "train/loss": 0.25, "lr/group0": 0.031}
        with open(live / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        with open(live / "train.log", "a") as f:
            f.write("2026-12-02 11:31:00 | INFO     | Epoch 31 - Average loss: 0.2500\n")
        log = app.query_one(LogPane)
        await wait_for(pilot, lambda: "Epoch 31" in log.lines[-1])
        await pilot.pause()
        # the newest line is on screen: the pane follows the end of the log
        assert log.max_scroll_y > 0 and log.scroll_offset.y == log.max_scroll_y
        await wait_for(pilot, lambda: "0.25" in rendered(app.query_one(MetricsPane)))
        assert "epoch 31/100" in rendered(app.query_one(RunHeader))


async def test_empty_root_says_where_it_looked(tmp_path, runs_root):
    """The message wraps between words whatever the length of the root's path (pytest's
    temp path, its counter): no row ends with a space, one space joins the rows back, and a
    path wider than the pane is shortened in its middle, never cut in two."""
    empty = tmp_path / "empty"
    empty.mkdir()
    app = make_app(runs_root, root=empty)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        header = app.query_one(RunHeader)
        rows = rendered(header).split("\n")
        width = header.size.width
        assert len(rows) > 1  # the message wraps
        assert all(len(r) <= width and r == r.strip() for r in rows)
        joined = " ".join(rows)
        assert f"No runs under {shorten_middle(str(empty), width)} yet:" in joined
        assert "when `libreyolo train ... project=" in joined
        assert option_texts(app) == []


async def test_missing_root_still_opens(tmp_path, runs_root):
    app = make_app(runs_root, root=tmp_path / "nope")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert "does not exist yet" in rendered_words(app.query_one(RunHeader))
        (tmp_path / "nope").mkdir()
        # the root appearing later is picked up by the next refreshes
        app.interval = 0.05
        app.request_refresh()
        await wait_for(pilot, lambda: "No runs under" in rendered_words(app.query_one(RunHeader)))


async def test_unchanged_panes_are_not_repainted(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.pause()
        log, metrics = app.query_one(LogPane), app.query_one(MetricsPane)
        calls = {"log": 0, "metrics": 0}
        orig_clear, orig_refresh = log.clear, metrics.refresh

        def counting_clear(*a, **k):
            calls["log"] += 1
            return orig_clear(*a, **k)

        def counting_refresh(*a, **k):
            calls["metrics"] += 1
            return orig_refresh(*a, **k)

        log.clear = counting_clear
        metrics.refresh = counting_refresh
        before = app.snapshot
        app.request_refresh()
        await wait_for(pilot, lambda: app.snapshot is not before)
        await pilot.pause()
        assert calls == {"log": 0, "metrics": 0}


async def test_a_lost_gpu_is_marked_and_the_others_keep_showing(runs_root):
    app = RgpuApp(
        root=str(runs_root.root),
        interval=3600.0,
        clock=runs_root.clock,
        fake_gpus=3,
        fake_lose={1: 0.0},
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        lines = rendered(app.query_one(GpuPane)).splitlines()
        assert "GPUs 3 simulated" in lines[0]
        assert "LOST" in lines[2] and lines[2].lstrip().startswith("1 ")
        for row in (lines[1], lines[3]):
            assert "LOST" not in row and "%" in row and "W" in row
            assert row.rstrip().endswith("live_exp")  # mapped to the running run by its pid


async def test_no_gpus_says_so_in_one_line_and_the_rest_works(runs_root, monkeypatch):
    import sys

    # the real NVML code path with the bindings missing, whatever this machine has
    monkeypatch.setitem(sys.modules, "pynvml", None)
    app = make_app(runs_root, gpus=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        pane = app.query_one(GpuPane)
        head = rendered(pane).splitlines()[0]
        assert app.snapshot.gpus.available is False
        assert "GPU panel off" in head
        assert pane.region.height == 1
        assert "live_exp" in rendered(app.query_one(RunHeader))


async def test_refresh_goes_on_while_a_dialog_is_open(runs_root):
    app = make_app(runs_root, interval=0.05)
    live = runs_root.root / "live_exp"
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("question_mark")
        await pilot.pause()
        with open(live / "metrics.jsonl", "a") as f:
            f.write(json.dumps({"epoch": 31, "train/loss": 0.25}) + "\n")
        await wait_for(pilot, lambda: app.snapshot.runs[0].current_epoch == 31)
        seen = app.snapshot  # refreshes go on after it (a failed one keeps the old one)
        await wait_for(pilot, lambda: app.snapshot is not seen, what="a refresh after epoch 31")
        assert app.refresh_error is None
        assert "epoch 31/100" in rendered(app.query_one(RunHeader))  # the pane behind the dialog
        await pilot.press("escape")


async def test_the_header_formats_the_update_time_the_snapshot_carries(runs_root):
    """RunInfo.updated is the number; the header shows it and parses no text."""
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        snap = app.snapshot
        run = replace(snap.selected_run, updated_at="not a time", updated=snap.generated_at - 75)
        app.view.run_header.show(run, snap.generated_at)
        await pilot.pause()
        assert "updated 1m15s ago" in rendered(app.view.run_header)


async def test_a_failed_run_without_metrics_says_none_will_come(runs_root, tmp_path):
    """A FAILED run never gets metrics: the pane says it ended, not "yet"."""
    root = tmp_path / "r"
    shutil.copytree(
        runs_root.root / "failed_oom",
        root / "failed_oom",
        ignore=shutil.ignore_patterns("metrics.jsonl", "results.csv"),
    )
    app = make_app(runs_root, root=root)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert app.snapshot.selected_run.state == "failed"
        metrics = rendered_words(app.query_one(MetricsPane))
        assert metrics == "no metrics.jsonl or results.csv: the run ended before an epoch's line"
