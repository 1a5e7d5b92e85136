"""Every use of a private Textual name, switched on at run time, or not at all.

The app's fast paths lean on Textual internals of the version they were written for
(Textual 8.2.8, the pinned one):

- **partial updates** (`partial.py`, `band.py`, `sgr.py`, `chops.py`): an update sent to the
  terminal starts where the change starts, renders only the rows it sends, sends a style's
  codes only when they change, and the log's rows scroll in the terminal (replaces
  `textual._compositor.ChopsUpdate.render_segments`, `LayoutUpdate.render_segments` and
  `Compositor._render_chops`, wraps `Compositor.render_partial_update`);
- **input thread** (`input_wait.py`): the input thread sleeps until there is input (a
  `LinuxDriver` subclass passed to `App(driver_class=...)`);
- **log pane** (`log.py`, and `widgets/log_pane.py`'s row cache): the log measures new
  lines in place and renders plain lines without Rich Text.

Nothing of Textual is imported when this package is imported (`--version` works without
a usable Textual): `probe()` imports and checks the names each fast path needs, and
`install()` switches on those that passed. One that is off (another Textual version, a
name that moved, an exception while installing, or `RGPU_FAST_PATHS=0`) leaves plain
Textual in its place: the app works, only slower. `rgpu-tui --version` shows `probe()`'s
answer; `RGPU_FAST_PATHS_REPORT=FILE` makes a running app write which ones it really uses
(`report()`: what the tests of a real terminal read). `own_keys()` gives one screen
instance key bindings of its own (the run view's, from its source): not a fast path, always
used.

Imports: nothing of rgpu_tui (the bottom floor of the tui, beside inert); Textual's names
only inside the functions that use them.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

ENV = "RGPU_FAST_PATHS"  # "0" (or off, no, false): every fast path off
REPORT_ENV = "RGPU_FAST_PATHS_REPORT"  # FILE: the running app writes report() there
WRITTEN_FOR = "8.2.8"  # the Textual whose internals the fast paths use

PARTIAL = "partial updates"
INPUT = "input thread"
LOG = "log pane"

# name -> its module here; each has probe() -> None, or why the fast path cannot be used
_MODULES = {PARTIAL: "partial", INPUT: "input_wait", LOG: "log"}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{_MODULES[name]}")


@dataclass(frozen=True)
class FastPath:
    name: str
    on: bool
    reason: str = ""  # why it is off


@dataclass(frozen=True)
class FastPaths:
    """Which fast paths are on, and why each one that is off is off."""

    paths: tuple[FastPath, ...]

    def __getitem__(self, name: str) -> FastPath:
        for path in self.paths:
            if path.name == name:
                return path
        raise KeyError(name)

    def on(self, name: str) -> bool:
        return self[name].on

    @property
    def all_on(self) -> bool:
        return all(p.on for p in self.paths)

    def text(self) -> str:
        """`fast paths on`, or `fast paths off: NAME, NAME (reason); NAME (reason)`: the
        ones off, grouped by reason (the rest are on)."""
        if self.all_on:
            return "fast paths on"
        reasons: dict[str, list[str]] = {}
        for p in self.paths:
            if not p.on:
                reasons.setdefault(p.reason, []).append(p.name)
        groups = [f"{', '.join(names)} ({reason})" for reason, names in reasons.items()]
        return "fast paths off: " + "; ".join(groups)


def switched_off() -> bool:
    """RGPU_FAST_PATHS says off (0, off, no, false; any case)."""
    return os.environ.get(ENV, "").strip().lower() in ("0", "off", "no", "false")


def _why_not(check: Callable[[], str | None]) -> str | None:
    try:
        return check()
    except Exception as exc:  # a module or name that moved: ImportError, AttributeError...
        return f"{type(exc).__name__}: {exc}"


def probe() -> FastPaths:
    """Which fast paths this process may use: the switch, Textual's version, and the
    names each one needs. Imports, never patches."""
    reason = None
    if switched_off():
        reason = f"{ENV}={os.environ[ENV]}"
    else:
        try:
            import textual

            version = textual.__version__
        except Exception as exc:
            reason = f"textual not importable: {type(exc).__name__}: {exc}"
        else:
            if version != WRITTEN_FOR:
                reason = f"textual {version} is not {WRITTEN_FOR}"
    paths = []
    for name in _MODULES:
        why = reason or _why_not(lambda name=name: _module(name).probe())
        paths.append(FastPath(name, why is None, why or ""))
    return FastPaths(tuple(paths))


# name -> what switches it on, for those that need more than the probe
_INSTALLS: dict[str, Callable[[], object]] = {
    PARTIAL: lambda: _module(PARTIAL).install(),
    INPUT: lambda: _module(INPUT).driver_class(),  # built now: a failure turns it off here
}


def install() -> FastPaths:
    """Switch on the fast paths `probe()` allows; an exception while installing one turns
    that one off, with the exception as its reason. Those off are Textual's own (the
    partial-update method an earlier install replaced is put back). Returns what is on."""
    paths = []
    for path in probe().paths:
        if path.on:
            try:
                if path.name in _INSTALLS:
                    _INSTALLS[path.name]()
            except Exception as exc:
                path = FastPath(path.name, False, f"install failed: {type(exc).__name__}: {exc}")
        paths.append(path)
    status = FastPaths(tuple(paths))
    installed = sys.modules.get(f"{__name__}.partial")
    if not status.on(PARTIAL) and installed is not None:
        installed.uninstall()
    return status


def driver_class(status: FastPaths) -> type | None:
    """What the app passes to `App(driver_class=...)`: the sleeping-input driver when that
    fast path is on, else None (Textual chooses its own driver)."""
    return _module(INPUT).driver_class() if status.on(INPUT) else None


def speed_up_log(pane) -> None:
    """One log pane (a `textual.widgets.Log`) measures its new lines in place; call it
    only when `status.on(LOG)`."""
    _module(LOG).speed_up(pane)


def scroll_in_terminal(pane) -> None:
    """`pane`'s rows may be scrolled by the terminal (used while the partial-updates fast
    path is installed; nothing happens otherwise)."""
    from . import band  # no private name is read when it is imported

    band.add(pane)


def in_use(app, log_pane) -> dict[str, bool]:
    """What the running `app` really uses, read from the objects themselves: ours or
    Textual's partial-update method, the driver's input thread, `log_pane`'s measuring."""
    partial = sys.modules.get(f"{__name__}.partial")
    return {
        PARTIAL: partial is not None and partial.installed(),
        INPUT: _module(INPUT).sleeps(getattr(app, "_driver", None)),
        LOG: _module(LOG).sped_up(log_pane),
    }


def report(app, status: FastPaths, log_pane) -> None:
    """With RGPU_FAST_PATHS_REPORT=FILE: write {"status": status.text(), "in_use": in_use()}
    to FILE (a temp name, then os.replace). A file that cannot be written is skipped."""
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    doc = {"status": status.text(), "in_use": in_use(app, log_pane)}
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
    except OSError:
        pass


def own_keys(node, bindings: list) -> None:
    """Give one screen (or widget) instance key bindings of its own, in this order, after
    its class's (Textual reads BINDINGS per class only: a Screen's are tab and shift+tab;
    the run view's keys come from its source: tui.screens.runs_view). Call it in
    `__init__`."""
    from textual.binding import BindingsMap

    for key, found in BindingsMap(bindings).key_to_bindings.items():
        node._bindings.key_to_bindings[key] = found
