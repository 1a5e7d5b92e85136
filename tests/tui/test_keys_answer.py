"""Every key answers: in a host's full view `c`, `n`, `g` and `a` say
where that is done; `a` with no autostop anywhere says there is nothing to cancel; `r` on a
launch that never started says so in the user's terms (not its .rgpu/launch/ID stand-in);
the command palette (ctrl+p) lists every action bound on the app and the screen, with its
key, and runs it. In tmux: tests/e2e/test_terminal.py."""

# ruff: noqa: F811 (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from textual.binding import Binding
from textual.command import CommandPalette

from rgpu_tui.core.records.autostop_files import AutostopFiles, someone_holds
from rgpu_tui.tui.commands import KeysProvider
from rgpu_tui.tui.screens.dialogs import ConfirmScreen
from rgpu_tui.tui.screens.help import HelpScreen
from rgpu_tui.tui.screens.launch import LaunchScreen
from rgpu_tui.tui.screens.runs_view import RunsView

from .helpers import make_app, notices, rendered, wait_for
from .test_fleet import (
    bring_up,
    fleet_app,
    machines,  # noqa: F401 (a fixture: the tests below take it)
    table_text,
)


async def test_c_n_g_a_in_a_hosts_view_each_say_where_it_is_done(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(100, 30)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")  # h1
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        h1 = app.fleet["h1"]
        sent = list(h1.sent)
        said = {
            "c": "`rgpu-tui cost` there",
            "n": "on h1, `rgpu-tui launch` or `n` in its app",
            "g": "`rgpu-tui preflight` on h1",
            "a": "`a` in its app, or `rgpu-tui watch --no-autostop` there",
        }
        for key, text in said.items():
            want = len(notices(app)) + 1
            await pilot.press(key)
            await wait_for(pilot, lambda n=want: len(notices(app)) == n)
            assert text in notices(app)[-1], notices(app)
            assert isinstance(app.screen, RunsView)  # no dialog, nothing else
        assert h1.sent == sent  # nothing went to the agent


async def test_a_with_no_autostop_anywhere_says_there_is_nothing_to_cancel(runs_root):
    app = make_app(runs_root)  # no autostop_command, no watcher on the root
    hold = AutostopFiles.for_root(str(runs_root.root)).hold
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("a")
        await wait_for(pilot, lambda: bool(notices(app)))
        [said] = notices(app)
        assert said.startswith("No autostop to cancel: no autostop_command, and no `rgpu-tui")
        assert "cancelled" not in said
        assert not someone_holds(hold)


def _failed_launch(runs_root) -> str:
    """A launch whose process died before status.json, as `launch` records it."""
    root = runs_root.root
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    console = root / ".rgpu" / "console" / "l-bad.log"
    console.parent.mkdir(parents=True)
    console.write_text("Error: data.yaml not found: /data/coco.yaml\n")
    record = {
        "kind": "launch", "id": "l-bad", "time": runs_root.now - 60, "pid": proc.pid,
        "create_time": runs_root.now - 60, "argv": ["libreyolo", "train", "name=bad"],
        "command": "libreyolo train name=bad", "cwd": str(root), "project": str(root),
        "name": "bad", "console_log": str(console),
    }  # fmt: skip
    (root / ".rgpu" / "launches.jsonl").write_text(json.dumps(record) + "\n")
    return "bad (launch)"


async def test_r_on_a_launch_that_never_started_says_so_without_its_internal_path(runs_root):
    name = _failed_launch(runs_root)
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        run = next(r for r in app.snapshot.runs if r.name == name)
        assert run.state == "failed"
        app.view.selected = run.run_dir
        app.request_refresh()
        await wait_for(pilot, lambda: app.snapshot.selected_run.name == name)
        await pilot.press("r")
        await wait_for(pilot, lambda: bool(notices(app)))
        [said] = notices(app)
        assert said.startswith(f"{name} never started training (exited ")
        assert "data.yaml not found" in said and "launch it again" in said
        assert ".rgpu" not in said


def _own_bindings(node) -> list[Binding]:
    """The keys rgpu-tui binds on `node`'s class (and its bases), and a run view's own (its
    source's: RunsView.keys)."""
    own = [
        b
        for cls in type(node).__mro__
        if cls.__module__.startswith("rgpu_tui.") and "BINDINGS" in vars(cls)
        for b in Binding.make_bindings(vars(cls)["BINDINGS"])
    ]
    return own + list(Binding.make_bindings(getattr(node, "keys", [])))


async def test_the_palette_lists_every_bound_action_with_its_key_and_runs_it(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        provider = KeysProvider(app.screen)
        titles = [title for title, *_ in provider.commands()]
        for binding in _own_bindings(app.view):  # generic: a key added later is listed
            if _available(app.view, binding):
                assert _listed(app, binding, titles), (binding, titles)
            else:  # a key that acts only in a view (the charts' `e`) is not offered outside it
                assert not _listed(app, binding, titles), (binding, titles)
        assert not _listed(app, Binding("e", "chart_smooth", "Smooth"), titles)
        await pilot.press("v")  # in the chart view its keys are offered
        await wait_for(pilot, lambda: app.view.charts_open)
        titles = [title for title, *_ in KeysProvider(app.screen).commands()]
        assert _listed(app, Binding("e", "chart_smooth", "Smooth"), titles), titles
        await pilot.press("v")
        await wait_for(pilot, lambda: not app.view.charts_open)
        titles = [title for title, *_ in KeysProvider(app.screen).commands()]
        assert "Quit (q, ^q)" in titles  # the footer's key first, Textual's own after
        assert "Push… (P)" in titles and "Resume (r)" in titles  # hidden from the footer
        helps = {title: help_text for title, help_text, *_ in provider.commands()}
        assert helps["New run (n)"] == "Open the launch form for a new run; ctrl+l launches it."
        # ctrl+p, type, enter: the action runs as its key would
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"stop (s)")
        await wait_for(pilot, lambda: _palette_shows(app, "Stop (s)"))
        await pilot.press("enter")
        # the newest run is live_exp (running): `s` asks to stop it
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))


def _available(node, binding: Binding) -> bool:
    """What the node's check_action says of the binding's action now (False: not offered)."""
    name, params = binding.action.split("(", 1)[0], ()
    return node.check_action(name, params) is not False


def _listed(app, binding: Binding, titles: list[str]) -> bool:
    """Its description, with its key among those in the parentheses."""
    key = app.get_key_display(binding)
    return any(
        t.startswith(f"{binding.description} (") and key in t.rsplit("(", 1)[1][:-1].split(", ")
        for t in titles
    )


def _palette_shows(app, title: str) -> bool:
    from textual.command import CommandList

    if not isinstance(app.screen, CommandPalette):
        return False
    options = app.screen.query_one(CommandList)
    return any(
        title in str(options.get_option_at_index(i).prompt) for i in range(options.option_count)
    )


async def test_the_palette_in_a_hosts_view_lists_that_screens_keys(runs_root, machines):
    app = fleet_app(runs_root, machines)
    async with app.run_test(size=(100, 30)) as pilot:
        bring_up(app, runs_root, machines)
        await wait_for(pilot, lambda: "Connection refused" in table_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsView))
        titles = [title for title, *_ in KeysProvider(app.screen).commands()]
        for binding in _own_bindings(app.screen):
            if _available(app.screen, binding):
                assert _listed(app, binding, titles), (binding, titles)
        assert "Quit (q, ^q)" in titles  # the app's own
        helps = {t: h for t, h, *_ in KeysProvider(app.screen).commands()}
        assert _sentence_problems(helps) == []  # the host view's keys say it the same way
        assert helps["Hosts (esc)"] == "Go back to the hosts table."


async def test_ctrl_c_says_which_keys_quit_without_markup(runs_root):
    app = make_app(runs_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: bool(notices(app)))
        assert notices(app) == ["Press q or ^q to quit the app."]


def _sentence_problems(helps: dict[str, str]) -> list[str]:
    """Each palette entry's text is one short sentence for the palette: not empty, whole
    (ends with a full stop), no markup, no backticks, no docs link."""
    bad = []
    for title, text in helps.items():
        whole = bool(text) and text.endswith(".") and text.count(". ") == 0
        if not whole or len(text) > 80 or any(c in text for c in "`[]") or "/guide/" in text:
            bad.append(f"{title}: {text!r}")
    return bad


async def test_the_palette_says_one_short_sentence_per_action_the_same_as_help(runs_root):
    """Quit said "An [action](/guide/actions) to quit the app…" (Textual's docstring), New
    run stopped mid-sentence, Push showed backticks, and `r` resumed "from its newest
    complete checkpoint" in the palette but "from its last.pt" in the help."""
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        seen: dict[str, str] = {}

        def look() -> None:
            helps = {t: h for t, h, *_ in KeysProvider(app.screen).commands()}
            seen.update(helps)
            assert _sentence_problems(helps) == []

        look()  # the main screen
        await pilot.press("v")
        await wait_for(pilot, lambda: app.view.charts_open)
        look()  # the chart view's keys
        await pilot.press("v")
        await wait_for(pilot, lambda: not app.view.charts_open)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        look()  # the launch form's
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, LaunchScreen))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        look()
        shown = " ".join(rendered(app.screen.query_one("#body")).split())
        assert seen["Quit (q, ^q)"] == "Quit rgpu-tui; the runs keep training."
        for title in ("Resume (r)", "Push (p)", "Stop (s)", "Quit (q, ^q)", "Charts (v)"):
            assert seen[title] in shown, title  # the help says the same, word for word
        assert "last.pt" not in seen["Resume (r)"] and "newest complete" in shown


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_a_notice_shortens_a_long_path_in_its_middle_never_cuts_it(runs_root, size):
    """A notice wraps between words; a path wider than the notice lost its middle to `…`
    and keeps its file name (before: `…/weights/be` on one row, `st.pt` on the next)."""
    app = make_app(runs_root)
    deep = "/home/someone/projects/detector/runs/exp_with_a_long_name/weights/best.pt"
    async with app.run_test(size=size, notifications=True) as pilot:  # real toasts
        await wait_for(pilot, lambda: app.snapshot is not None)
        app.notify(f"Pushed {deep} to alice/ckpts: exp/best.pt")
        await wait_for(pilot, lambda: bool(app.screen.query("Toast")))  # Textual's widget
        await pilot.pause()
        [said] = notices(app)
        toast = app.screen.query_one("Toast")
        words = said.split()
        assert max(len(w) for w in words) <= toast.content_size.width  # none folded
        [shown] = [w for w in words if w.endswith("/best.pt") and w.startswith("/home")]
        head, tail = shown.split("…")
        assert deep.startswith(head) and deep.endswith(tail)
        assert words[0] == "Pushed" and words[-3:] == ["to", "alice/ckpts:", "exp/best.pt"]
        url = "http://127.0.0.1:44345/alice/ckpts/commit/5a02d1a517e364064b2c7ecd98b2355326bf2a24"
        app.notify(f"Pushed best.pt\n{url}")
        await wait_for(pilot, lambda: len(notices(app)) == 2)
        assert notices(app)[1].endswith(f"\n{url}")  # a URL stays whole: it is to be copied
