"""Run directories and files that disappear or cannot be read while the app and the Collector
watch them: the selected run deleted, a run deleted between listing and reading, the runs
root deleted, status.json unreadable. The other runs keep updating.

Run: .venv/bin/pytest tests/faults -q
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from pathlib import Path

from support.run_dir import make_run, write_status
from tui.helpers import rendered, wait_for

from faults.helpers import LOG_MISSING, age, alive, only_run, status_doc
from rgpu_tui import cli
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.tui.app import RgpuApp

# -- directories disappearing -----------------------------------------------------------


def three_done_runs(root: Path) -> None:
    """newest, middle, oldest (by activity), each with a one-line log."""
    now = time.time()
    for i, name in enumerate(["newest", "middle", "oldest"]):
        run = make_run(
            root, name, status=status_doc("completed", 3, 3), log=[f"log of {name}"], epochs=3
        )
        then = now - 100 * (i + 1)
        for p in run.iterdir():
            os.utime(p, (then, then))


async def select_middle_then_delete_it(app: RgpuApp, pilot, root: Path) -> None:
    await wait_for(pilot, lambda: app.snapshot is not None)
    await pilot.press("j", "enter")
    await wait_for(pilot, lambda: "middle" in rendered(app.view.run_header))
    assert app.view.log_pane.lines[-1] == "log of middle"
    shutil.rmtree(root / "middle")
    app.request_refresh()
    await wait_for(pilot, lambda: len(app.snapshot.runs) == 2)
    await pilot.pause()


async def test_selected_run_directory_deleted_while_the_app_runs(tmp_path) -> None:
    """Fault: the selected run's directory is deleted (rm -rf) while the app shows it:
    the app keeps running, the selection falls back to the newest run, no error."""
    root = tmp_path / "runs"
    three_done_runs(root)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await select_middle_then_delete_it(app, pilot, root)
        assert app.is_running and app.refresh_error is None
        assert app.view.selected == str(root / "newest")
        assert app.snapshot.selected.run_dir == str(root / "newest")
        assert "newest" in rendered(app.view.run_header)
        assert app.view.log_pane.lines[-1] == "log of newest"
        assert [app.view.runs_list.get_option_at_index(i).id for i in range(2)] == [
            str(root / "newest"),
            str(root / "oldest"),
        ]
        app.request_refresh()  # later refreshes go on
        await wait_for(pilot, lambda: app.snapshot.selected.run_dir == str(root / "newest"))
        assert app.refresh_error is None


async def test_after_the_selected_run_is_deleted_the_list_highlights_the_fallback(tmp_path):
    """Fault: the selected run's directory deleted: the runs list highlights the run the
    header now shows, and j moves on from it."""
    root = tmp_path / "runs"
    three_done_runs(root)
    app = RgpuApp(root=str(root), interval=3600.0, fake_gpus=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await select_middle_then_delete_it(app, pilot, root)
        assert app.view.runs_list.highlighted == 0  # newest, the run the header shows
        await pilot.press("j", "enter")
        await wait_for(pilot, lambda: "oldest" in rendered(app.view.run_header), timeout=3)


def test_run_directory_deleted_between_listing_and_reading(tmp_path, collector) -> None:
    """Fault: a run directory removed in the middle of a refresh (after the runs were listed,
    before their files were read): no exception, the run's last good values stay this once,
    and the next refresh drops it."""
    root = tmp_path / "runs"
    victim = make_run(root, "victim", status=status_doc(epoch=4), log=["victim log"], epochs=3)
    make_run(root, "other", status=status_doc("completed", 3, 3), epochs=3)
    age(root / "other")
    c = collector(root)
    snap = c.refresh(time.time(), selected=str(victim))
    assert snap.selected.run_dir == str(victim)

    scan = c.runs.finder.scan

    def scan_then_delete():
        found = scan()
        shutil.rmtree(victim)
        return found

    c.runs.finder.scan = scan_then_delete
    snap = c.refresh(time.time(), selected=str(victim))
    gone = snap.run(str(victim))
    assert gone.current_epoch == 4 and gone.problem == "no status.json"
    assert snap.selected.log.problem == LOG_MISSING
    json.dumps(snapshot_to_json(snap))

    c.runs.finder.scan = scan
    snap = c.refresh(time.time(), selected=str(victim))
    assert [r.name for r in snap.runs] == ["other"]
    assert snap.selected.run_dir == str(root / "other")


def test_runs_root_deleted(tmp_path, collector) -> None:
    """Fault: the whole runs root removed while watched, then created again."""
    root = tmp_path / "runs"
    make_run(root, "exp", status=status_doc(), epochs=3)
    c = collector(root)
    assert len(c.refresh(time.time()).runs) == 1
    shutil.rmtree(root)
    snap = c.refresh(time.time())
    assert (snap.runs, snap.selected, snap.root_exists) == ((), None, False)
    assert snap.problem.startswith(f"{root} does not exist yet")
    make_run(root, "exp2", status=status_doc(), epochs=3)
    assert [r.name for r in c.refresh(time.time()).runs] == ["exp2"]


# -- permissions ----------------------------------------------------------------------


def deny(monkeypatch, path: Path) -> None:
    """Opening `path` raises PermissionError, as for a 0600 file of another user (the tests
    run as root, which chmod cannot stop)."""
    import builtins

    target = str(path)
    real_open, real_os_open = builtins.open, os.open

    def refuse(file):
        if isinstance(file, (str, bytes, os.PathLike)) and os.fsdecode(file) == target:
            raise PermissionError(errno.EACCES, "Permission denied", target)

    def fake_open(file, *args, **kwargs):
        refuse(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(file, *args, **kwargs):
        refuse(file)
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)


def test_permission_denied_on_status_json(tmp_path, collector, monkeypatch, capsys, spawn) -> None:
    """Fault: status.json cannot be opened (permission denied): the run keeps its last good
    values and says why; a run never read says '?' and why; both recover."""
    root = tmp_path / "runs"
    seen = make_run(root, "seen", status=None, epochs=2)
    trainer = alive(spawn(cwd=seen))
    write_status(seen, status_doc(epoch=2, **trainer), mtime=time.time() - 30)
    c = collector(root)
    assert only_run(c.refresh(time.time())).current_epoch == 2

    write_status(seen, status_doc(epoch=3, **trainer))  # rewritten: now unreadable to us
    with monkeypatch.context() as m:
        deny(m, seen / "status.json")
        r = only_run(c.refresh(time.time()))
        assert (r.state, r.current_epoch, r.problem) == (
            "running", 2, "status.json unreadable: permission denied",
        )  # fmt: skip

        # a run whose status.json was never readable: state unknown, its metrics still shown
        fresh_trainer = alive(spawn(cwd=root / "fresh"))
        fresh = make_run(root, "fresh", status=status_doc(epoch=2, **fresh_trainer), epochs=2)
        deny(m, fresh / "status.json")
        assert cli.main(["snapshot", "--fake-gpus", "1", str(fresh)]) == 0
        out = capsys.readouterr().out
        assert "(status.json unreadable: permission denied)" in out
        [line] = [ln for ln in out.splitlines() if ln.split()[1:2] == ["fresh"]]
        assert line.startswith("unknown ")
        assert "train/loss" in out

    # readable again: both recover
    snap = c.refresh(time.time())
    assert (snap.run(str(seen)).current_epoch, snap.run(str(seen)).problem) == (3, None)
    assert (snap.run(str(fresh)).state, snap.run(str(fresh)).problem) == ("running", None)
