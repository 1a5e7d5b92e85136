"""The fast paths on Textual's internals (src/tui/compat/) can be off: switched off with
RGPU_FAST_PATHS=0, on another Textual version, with a private name that moved, or after an
exception while installing. Then the app runs on plain Textual, its main flows work, the
screen is the same, and the status says which are off and why."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import sys
from pathlib import Path

import pytest
import textual
from support.cli_env import RGPU_TUI
from support.cli_env import clean_env as _env
from support.pty_app import PtyApp
from support.waiting import wait_until
from textual._compositor import ChopsUpdate
from textual.widgets import Log

import rgpu_tui
from rgpu_tui.cli.app import version_text
from rgpu_tui.core.base.config import Settings
from rgpu_tui.tui import compat
from rgpu_tui.tui.compat import input_wait, partial
from rgpu_tui.tui.screens.dialogs import ConfirmScreen, PickScreen

from .helpers import make_app, rendered, wait_for

ALL = (compat.PARTIAL, compat.INPUT, compat.LOG)


@pytest.fixture(autouse=True)
def no_switch(monkeypatch) -> None:
    """The runner's RGPU_FAST_PATHS is not these tests' (each sets its own)."""
    monkeypatch.delenv(compat.ENV, raising=False)


def assert_plain(app, off: tuple[str, ...]) -> None:
    """What the app really uses matches its status: Textual's own for each one off."""
    assert {p.name for p in app.fast_paths.paths if not p.on} == set(off)
    ours = vars(ChopsUpdate)["render_segments"] is partial.render_segments
    assert ours == (compat.PARTIAL not in off)
    sleeping = app.driver_class.__module__ == input_wait.__name__  # ours, not Textual's
    assert sleeping == (compat.INPUT not in off)
    fast_log = "_update_size" in vars(app.view.log_pane)  # measured in place, on this pane
    assert fast_log == app.view.log_pane.fast == (compat.LOG not in off)


def screen_rows(pane) -> list[str]:
    """The rows the pane renders now (through its render_line, fast or plain)."""
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


async def main_flows(app, pilot) -> None:
    """Start, list the runs, select one, its log lines and metrics, the push confirm
    dialog, quit."""
    await wait_for(pilot, lambda: app.snapshot is not None)
    await pilot.pause()
    assert app.view.runs_list.border_title == "runs (3)"
    assert rendered(app.view.gpu_pane).startswith("GPUs 2 simulated")
    assert app.view.log_pane.lines[-1] == "11:30:00 Epoch 30 - Average loss: 0.6667"

    await pilot.press("j", "enter")  # the failed run
    await wait_for(pilot, lambda: app.view.selected.endswith("failed_oom"))
    await wait_for(pilot, lambda: app.snapshot.selected.run_dir == app.view.selected)
    await wait_for(pilot, lambda: app.view.log_pane.is_vertical_scroll_end)
    await pilot.pause()
    error = "10:00:05 ERROR CUDA out of memory while allocating 2.00 GiB"
    assert app.view.log_pane.lines[-1] == error
    assert error in screen_rows(app.view.log_pane)  # rendered, not only held
    assert "failed_oom" in rendered(app.view.run_header)
    metrics = rendered(app.view.metrics_pane)
    assert metrics.splitlines()[0].startswith("train/loss") and "5" in metrics

    await pilot.press("P")  # pick what to push: the small artifacts
    await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
    await pilot.press("end", "enter")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    assert "alice/ckpts: failed_oom/" in str(app.screen.query_one("#body").render())
    await pilot.press("escape")  # not pushed
    await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
    assert app.push_queue.pending() == [] and app.push_queue.current() is None

    await pilot.press("q")
    await wait_for(pilot, lambda: not app.is_running)


@pytest.mark.parametrize("switch", ["1", "0"], ids=["on", "off"])
async def test_the_main_flows_with_the_fast_paths_on_and_off(runs_root, monkeypatch, switch):
    monkeypatch.setenv(compat.ENV, switch)
    app = make_app(runs_root, settings=Settings(hub_repo="alice/ckpts"))
    if switch == "1":
        assert app.fast_paths.text() == "fast paths on"
    else:
        assert app.fast_paths.text() == (
            "fast paths off: partial updates, input thread, log pane (RGPU_FAST_PATHS=0)"
        )
    async with app.run_test(size=(100, 30)) as pilot:
        assert_plain(app, () if switch == "1" else ALL)
        await main_flows(app, pilot)
    assert app.return_code in (0, None)


async def screen_svg(runs_root) -> str:
    app = make_app(runs_root)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await wait_for(pilot, lambda: app.view.log_pane.is_vertical_scroll_end)
        await pilot.pause()
        return app.export_screenshot(simplify=True)


async def test_plain_textual_draws_the_same_screen(runs_root, monkeypatch):
    monkeypatch.setenv(compat.ENV, "1")
    fast = await screen_svg(runs_root)
    monkeypatch.setenv(compat.ENV, "off")
    assert await screen_svg(runs_root) == fast


async def test_another_textual_version_gets_plain_textual(runs_root, monkeypatch):
    monkeypatch.setattr(textual, "__version__", "9.0.0")
    why = "textual 9.0.0 is not 8.2.8"
    assert (
        compat.probe().text() == f"fast paths off: partial updates, input thread, log pane ({why})"
    )
    assert version_text().endswith(f"fast paths off: {', '.join(ALL)} ({why}))")
    app = make_app(runs_root, settings=Settings(hub_repo="alice/ckpts"))
    assert {p.reason for p in app.fast_paths.paths} == {why}
    async with app.run_test(size=(100, 30)) as pilot:
        assert_plain(app, ALL)
        await main_flows(app, pilot)


async def test_a_private_module_that_moved_turns_its_fast_path_off(runs_root, monkeypatch):
    """As if a Textual release moved `textual._xterm_parser`: importing it by that name
    fails, while Textual's own driver (imported first, from wherever that release keeps
    its parser) still works. Under Pilot; the real terminal is the next test."""
    import textual.drivers.linux_driver  # noqa: F401  (Textual's own, already loaded)

    monkeypatch.setitem(sys.modules, "textual._xterm_parser", None)
    app = make_app(runs_root)
    status = app.fast_paths
    assert status.on(compat.PARTIAL) and status.on(compat.LOG)
    assert not status.on(compat.INPUT)
    assert status[compat.INPUT].reason.startswith(
        "ModuleNotFoundError: import of textual._xterm_parser"
    )
    assert status.text().startswith("fast paths off: input thread (ModuleNotFoundError: ")
    async with app.run_test(size=(100, 30)) as pilot:
        assert_plain(app, (compat.INPUT,))
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert app.view.log_pane.lines[-1] == "11:30:00 Epoch 30 - Average loss: 0.6667"


MOVED = """
import sys
import textual.drivers.linux_driver  # Textual's own driver: its release imports its parser
sys.modules["textual._xterm_parser"] = None  # ... and the old private name is gone
from rgpu_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_real_app_starts_on_plain_textual_when_a_private_module_moved(runs_root, tmp_path):
    """A process of its own (nothing of this test run's imports), in a real terminal:
    Textual's own driver reads the keys, the other fast paths stay on."""
    report = tmp_path / "fast-paths.json"
    argv = [sys.executable, "-c", MOVED, str(runs_root.root), "--fake-gpus", "1"]
    env = _env(tmp_path, TERM="xterm-256color", **{compat.REPORT_ENV: str(report)})
    app = PtyApp(argv, env, 100, 30)
    try:
        wait_until(lambda: b"runs (3)" in app.output(), "the first frame", 30)
        got = wait_until(lambda: read_report(report), "the app's fast-path report", 30)
        assert got["status"].startswith(
            "fast paths off: input thread (ModuleNotFoundError: import of textual._xterm_parser"
        )
        assert got["in_use"] == {compat.PARTIAL: True, compat.INPUT: False, compat.LOG: True}
        os.write(app.fd, b"j")
        os.write(app.fd, b"\r")
        wait_until(lambda: b"CUDA out of memory" in app.output(), "the failed run's log", 30)
        assert app.quit() == 0
    finally:
        app.close()


async def test_an_exception_while_installing_turns_only_that_one_off(runs_root, monkeypatch):
    def broken() -> None:
        raise RuntimeError("the compositor changed")

    compat.install()  # an earlier app installed it: it must be put back
    monkeypatch.setattr(partial, "install", broken)
    app = make_app(runs_root)
    assert app.fast_paths.text() == (
        "fast paths off: partial updates (install failed: RuntimeError: the compositor changed)"
    )
    async with app.run_test(size=(100, 30)) as pilot:
        assert_plain(app, (compat.PARTIAL,))
        await wait_for(pilot, lambda: app.snapshot is not None)
        assert len(app.view.runs_list.border_title) > 0


def test_probes_find_a_missing_or_changed_private_name(monkeypatch):
    class Moved(ChopsUpdate):  # render_segments no longer its own
        pass

    monkeypatch.setattr(textual._compositor, "ChopsUpdate", Moved)
    assert partial.probe() == "textual._compositor.ChopsUpdate.render_segments is missing"
    monkeypatch.setattr(Log, "_update_size", lambda self, updates, lines, width: None)
    assert compat.probe()[compat.LOG].reason == (
        "Log._update_size takes (updates, lines, width), not (updates, lines)"
    )
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.linux_driver:LinuxDriver")
    assert compat.probe()[compat.INPUT].reason == "TEXTUAL_DRIVER chooses the driver"


def test_probing_patches_nothing(monkeypatch):
    monkeypatch.setenv(compat.ENV, "0")
    compat.install()  # Textual's own method
    before = vars(ChopsUpdate)["render_segments"]
    monkeypatch.setenv(compat.ENV, "1")
    assert compat.probe().all_on
    assert vars(ChopsUpdate)["render_segments"] is before


def read_report(path: Path) -> dict | None:
    """What the app wrote to RGPU_FAST_PATHS_REPORT (compat.report), once it is there."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


@pytest.mark.parametrize("switch", ["1", "0"], ids=["on", "off"])
def test_the_real_app_in_a_terminal_with_the_fast_paths_on_and_off(runs_root, tmp_path, switch):
    """The console script in a pseudo-terminal (Textual's Linux driver, or ours): it draws,
    takes keys and quits; and it says which fast paths it really used."""
    report = tmp_path / "fast-paths.json"
    argv = [str(RGPU_TUI), str(runs_root.root), "--fake-gpus", "1"]
    env = _env(
        tmp_path, TERM="xterm-256color", RGPU_FAST_PATHS=switch, **{compat.REPORT_ENV: str(report)}
    )
    app = PtyApp(argv, env, 100, 30)
    try:
        wait_until(lambda: b"runs (3)" in app.output(), "the first frame", 30)
        got = wait_until(lambda: read_report(report), "the app's fast-path report", 30)
        on = switch == "1"
        assert got["status"] == (
            "fast paths on" if on else f"fast paths off: {', '.join(ALL)} (RGPU_FAST_PATHS=0)"
        )
        assert got["in_use"] == dict.fromkeys(ALL, on)
        os.write(app.fd, b"j")
        os.write(app.fd, b"\r")
        wait_until(lambda: b"CUDA out of memory" in app.output(), "the failed run's log", 30)
        assert app.quit() == 0
    finally:
        app.close()


# -- every private Textual name is used in src/tui/compat/ only ------------------------------

SRC = Path(rgpu_tui.__file__).parent
COMPAT = SRC / "tui" / "compat"


def outside_compat() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if COMPAT not in p.parents]


def test_no_private_textual_module_is_imported_outside_compat():
    found = []
    for path in outside_compat():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual"):
                names = [node.module, *(a.name for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("textual")]
            else:
                continue
            if any(part.startswith("_") for n in names for part in n.split(".")):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []


def textual_private_names(cls: type) -> set[str]:
    """The private names of `cls`'s Textual bases: their attributes and methods, and what
    their methods assign to `self._...` (read from their source)."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] != "textual":
            continue
        names |= {n for n in vars(base) if n.startswith("_") and not n.startswith("__")}
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        names |= set(re.findall(r"self\.(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=", source))
    return names


def test_no_class_outside_compat_uses_a_private_name_of_its_textual_bases():
    """A subclass that overrides, reads or calls its Textual base's private name (Log's
    `_update_size`, `_lines`, ...) breaks when Textual changes it: that goes in compat."""
    used: dict[str, set[str]] = {}
    checked = 0
    for path in outside_compat():
        if "tui" not in path.relative_to(SRC).parts:
            continue
        name = "rgpu_tui." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        module = importlib.import_module(name.removesuffix(".__init__"))
        for cls in vars(module).values():
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            private = textual_private_names(cls)
            if not private:
                continue
            checked += 1
            tokens = set(re.findall(r"\b_[A-Za-z]\w*", inspect.getsource(cls)))
            if tokens & private:
                used[f"{name}.{cls.__name__}"] = tokens & private
    assert used == {}
    assert checked >= 15  # the app, its panes, screens, messages


# the private names reached outside compat on an object other than the class's own `self`,
# each reviewed: (file under src/, name) -> why it is not Textual's
REVIEWED_PRIVATE = {
    ("cli/app.py", "_fill_text"): "argparse.HelpFormatter's hook, through super()",
}
ACCESSORS = ("getattr", "setattr", "hasattr", "delattr")


def private_reaches(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, name, code) of each `X._name` whose X is not plain `self` or `cls`, and of
    each getattr/setattr/hasattr/delattr with a literal `"_name"` (dunders aside)."""
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            name = None if own else node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ACCESSORS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            name = node.args[1].value
        if name and name.startswith("_") and not name.startswith("__"):
            found.append((node.lineno, name, ast.unparse(node)))
    return found


def test_no_private_name_is_reached_on_another_object_outside_compat():
    """`self.app._driver`, `self.screen._compositor`, `event._sender`, `getattr(pane,
    "_lines")`: a private name reached on any object but the class's own `self` belongs to
    that object's class (Textual's, in the app and the commands that run it), and goes in
    compat. A class's own private names through `self` are checked against its Textual
    bases by the test above; the rest of src (core) never imports Textual."""
    found = []
    reviewed_seen = set()
    for path in outside_compat():
        where = path.relative_to(SRC)
        if where.parts[0] not in ("tui", "cli"):
            continue
        for line, name, code in private_reaches(ast.parse(path.read_text())):
            if (str(where), name) in REVIEWED_PRIVATE:
                reviewed_seen.add((str(where), name))
            else:
                found.append(f"{where}:{line}: {code}")
    assert found == []
    assert reviewed_seen == set(REVIEWED_PRIVATE)  # the list holds nothing stale
