"""The launch form (`n`) checks what is typed on each keystroke without touching the
filesystem on the UI thread: whether data.yaml exists and the project is a folder is a
worker's question (a slow NFS path would freeze typing), one at a time, and a launch asks
it again."""

from __future__ import annotations

import builtins
import os
import threading

from textual.widgets import Input

from rgpu_tui.core.launch import launch_spec
from rgpu_tui.tui.screens.launch import LaunchScreen

from .helpers import make_app, wait_for

DATA = "path: .\ntrain: images/train\nval: images/val\nnames: [a]\n"


def _status(form) -> str:
    return str(form.query_one("#status").render())


def _command(form) -> str:
    return str(form.query_one("#command").render())


async def _type(pilot, form, key: str, text: str) -> None:
    """Put `text` in the field, its last keys typed as a user does (a pasted start: every
    change of the value takes the same path, and a key at a time is slow under Pilot)."""
    field = form.query_one(f"#f-{key}", Input)
    field.focus()
    await pilot.pause()  # focus selects the field's text: set it after
    field.value = text[:-4]
    field.cursor_position = len(field.value)
    await pilot.pause()
    await pilot.press(*text[-4:])
    assert field.value == text


# the form clones the selected run, live_exp: a run already, so it offers live_exp2 and
# says so where nothing else is wrong
NAME_NOTE = "name: live_exp exists in the project; live_exp2 is the next free name"


async def _open_form(pilot, app) -> LaunchScreen:
    await wait_for(pilot, lambda: app.snapshot is not None)
    await pilot.press("n")
    await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
    form = app.screen
    await wait_for(pilot, lambda: form.query_one("#f-name", Input).value == "live_exp2")
    return form


async def test_typing_touches_no_file_on_the_ui_thread(runs_root, tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    data = here / "data.yaml"
    data.write_text(DATA)
    a_file = here / "notes.txt"
    a_file.write_text("not a folder")
    ui = threading.main_thread()
    calls: dict[str, list[tuple[str, str]]] = {"ui": [], "worker": []}

    def watched(name: str, real):
        def call(path, *args, **kwargs):
            if str(path).startswith(str(tmp_path)):
                where = "ui" if threading.current_thread() is ui else "worker"
                calls[where].append((name, str(path)))
            return real(path, *args, **kwargs)

        return call

    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        form = await _open_form(pilot, app)
        for name in ("stat", "lstat", "listdir", "scandir", "open", "access"):
            monkeypatch.setattr(os, name, watched(name, getattr(os, name)))
        monkeypatch.setattr(builtins, "open", watched("builtins.open", builtins.open))

        await _type(pilot, form, "data", str(here / "nothing.yaml"))
        missing = f"data: {here / 'nothing.yaml'} does not exist"
        await wait_for(pilot, lambda: _status(form) == missing)
        await _type(pilot, form, "data", str(here))
        await wait_for(pilot, lambda: "is a directory, not a data.yaml" in _status(form))
        await _type(pilot, form, "data", str(data))
        await wait_for(pilot, lambda: _status(form) == NAME_NOTE)
        assert f"data={data}" in _command(form)
        await _type(pilot, form, "project", str(a_file))
        await wait_for(pilot, lambda: _status(form) == f"project: {a_file} is not a directory")
        await _type(pilot, form, "project", str(here / "runs"))
        await wait_for(pilot, lambda: _status(form) == NAME_NOTE)
        assert f"project={here / 'runs'}" in _command(form)
    assert calls["ui"] == []
    assert ("stat", str(data)) in calls["worker"]  # it was looked at, off the UI thread


async def test_a_stalled_filesystem_holds_one_check_and_typing_goes_on(
    runs_root, tmp_path, monkeypatch
):
    """data.yaml on a path whose stat hangs (a dead NFS server): the form keeps taking
    keys, says "checking…", runs one check at a time, and answers for what was typed last."""
    slow = tmp_path / "nfs"
    slow.mkdir()
    (slow / "data.yaml").write_text(DATA)
    release = threading.Event()
    stalled: list[str] = []
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path).startswith(str(slow)):
            stalled.append(str(path))
            release.wait(10)  # the test sets it; a bound if it fails first
        return real_stat(path, *args, **kwargs)

    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        form = await _open_form(pilot, app)
        monkeypatch.setattr(os, "stat", stat)
        await _type(pilot, form, "data", str(slow / "data.ya"))
        await wait_for(pilot, lambda: len(stalled) == 1)  # the first check hangs
        await pilot.press("m", "l")  # typing goes on meanwhile
        field = form.query_one("#f-data", Input)
        assert field.value == str(slow / "data.yaml")
        assert _status(form) == "checking…"
        assert f"data={slow / 'data.yaml'}" in _command(form)
        assert len(stalled) == 1  # no second thread stuck behind the first
        release.set()
        # the answer for "data.ya" is stale: the next check is of what is typed now
        await wait_for(pilot, lambda: _status(form) == NAME_NOTE)
        assert stalled[-1] == str(slow / "data.yaml")


async def test_ctrl_l_checks_the_files_again(runs_root, tmp_path):
    """A data.yaml found while typing and deleted before ctrl+l: the launch says so and
    starts nothing."""
    data = tmp_path / "data.yaml"
    data.write_text(DATA)
    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        form = await _open_form(pilot, app)
        form.query_one("#doctor").value = False
        await _type(pilot, form, "data", str(data))
        await wait_for(pilot, lambda: _status(form) == NAME_NOTE)
        data.unlink()
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: _status(form) == f"data: {data} does not exist")
        assert isinstance(app.screen, LaunchScreen)
        assert not (runs_root.root / ".rgpu" / "launches.jsonl").exists()


async def test_without_libreyolo_the_form_says_where_it_looked(runs_root, tmp_path, monkeypatch):
    """Not "dataset errors: libreyolo is not installed for <rgpu-tui's Python>"."""
    monkeypatch.setattr(launch_spec, "libreyolo_executable", lambda: None)
    data = tmp_path / "data.yaml"
    data.write_text(DATA)
    app = make_app(runs_root)
    async with app.run_test(size=(100, 40)) as pilot:
        form = await _open_form(pilot, app)
        await _type(pilot, form, "data", str(data))
        await wait_for(pilot, lambda: _status(form) == NAME_NOTE)
        await pilot.press("ctrl+l")  # the doctor is on: the form asks for libreyolo first
        await wait_for(pilot, lambda: _status(form) == launch_spec.libreyolo_missing())
        assert "on PATH" in _status(form)
        assert isinstance(app.screen, LaunchScreen)
