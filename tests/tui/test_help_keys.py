"""Every key the app binds is on the `?` help screen and in README's Keys line, and every
key the help names is bound: a new key cannot be left out, a removed one cannot linger."""

from __future__ import annotations

import re

from support.docs import readme
from textual.binding import Binding
from textual.keys import format_key
from textual.screen import Screen

from rgpu_tui.tui.actions.local import LOCAL_KEYS
from rgpu_tui.tui.app import RgpuApp
from rgpu_tui.tui.screens.help import HelpScreen
from rgpu_tui.tui.widgets.log_pane import LogPane
from rgpu_tui.tui.widgets.runs_list import RunsList

from .helpers import make_app, rendered, wait_for


def _shown(binding: Binding) -> set[str]:
    """The ways a key may be written: its name, Textual's display of it, the app's own."""
    names = {binding.key, format_key(binding.key)}
    if binding.key_display:
        names.add(binding.key_display)
    return names


def _own_bindings(widget_class) -> dict[str, set[str]]:
    """The bindings rgpu-tui's own classes declare (the app, its mixins, the runs list),
    by action; Textual's built-in ones (ctrl+q, the list's page keys) are not ours to list."""
    found: dict[str, set[str]] = {}
    for cls in widget_class.__mro__:
        if not cls.__module__.startswith("rgpu_tui.") or "BINDINGS" not in vars(cls):
            continue
        for binding in Binding.make_bindings(vars(cls)["BINDINGS"]):
            found.setdefault(f"{binding.key} ({binding.action})", set()).update(_shown(binding))
    return found


def _view_keys() -> dict[str, set[str]]:
    """The local run view's keys (its source's: actions.local.LOCAL_KEYS), by action."""
    found: dict[str, set[str]] = {}
    for binding in Binding.make_bindings(LOCAL_KEYS):
        found.setdefault(f"{binding.key} ({binding.action})", set()).update(_shown(binding))
    return found


def _all_bound() -> set[str]:
    """Every key that does something on the main screen (the log's are Textual's scroll
    keys) or closes the help."""
    names: set[str] = set()
    if RgpuApp.ENABLE_COMMAND_PALETTE:  # Textual binds it from this, not from BINDINGS
        names.add(RgpuApp.COMMAND_PALETTE_BINDING)
    for cls in (RgpuApp, RunsList, LogPane, Screen, HelpScreen):
        for bindings in cls._merge_bindings().key_to_bindings.values():
            for binding in bindings:
                names |= _shown(binding)
    for shown in _view_keys().values():
        names |= shown
    return names


def _key_column_words(keys_section: str) -> set[str]:
    """`  p / P      push ...` -> {p, P}: the key column ends at the first run of 3 spaces;
    a column that is `/` alone is the key `/`; a row indented further continues the
    description above it."""
    words: set[str] = set()
    for line in keys_section.splitlines():
        if line.startswith("    "):  # a description's second row: no key column
            continue
        column = re.split(r"\s{3,}", line.strip(), maxsplit=1)[0]
        if column == "/":
            words.add("/")
            continue
        words |= {w for w in re.split(r"[\s/]+", column) if w}
    return words


async def _help_keys(runs_root) -> set[str]:
    app = make_app(runs_root)
    async with app.run_test(size=(80, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = rendered(app.screen.query_one("#body"))
    section = text.split("Keys\n", 1)[1].split("\n\n", 1)[0]
    return _key_column_words(section)


async def test_every_key_of_the_app_is_on_the_help_screen(runs_root):
    on_help = await _help_keys(runs_root)
    bound = {**_own_bindings(RgpuApp), **_view_keys(), **_own_bindings(RunsList)}
    missing = sorted(key for key, names in bound.items() if not names & on_help)
    assert not missing, f"keys missing from the help screen: {missing}"
    stale = sorted(on_help - _all_bound())
    assert not stale, f"the help screen names keys nothing binds: {stale}"


def test_every_key_of_the_app_is_in_the_readme_keys_line():
    text = readme()
    paragraph = text.split("\nKeys: ", 1)[1].split("\n\n", 1)[0]
    in_readme = {
        w
        for quoted in re.findall(r"`([^`]+)`", paragraph)
        for w in (["/"] if quoted == "/" else quoted.split("/"))
    }
    bound = {**_own_bindings(RgpuApp), **_view_keys(), **_own_bindings(RunsList)}
    missing = sorted(key for key, names in bound.items() if not names & in_readme)
    assert not missing, f"keys missing from README's Keys line: {missing}"
