"""Form fields whose keys land where they were typed, even when they arrive in one burst
(a paste, `tmux send-keys`, a laggy SSH link that delivers a second of typing at once).

Textual's app takes keys from its queue and hands each to the widget focused *then*, by
posting it to that widget's own queue; the widget handles it later. A key the widget does
not handle itself (backspace, end, the arrows: an Input's *bindings*) bubbles back up to
the app, which looks its binding up along the focus chain of *that* moment. And `tab`
(the screen's binding) moves focus only when it has bubbled up. So with `Tab End BSpace×4
7 0` sent at once, the app had handed all eight keys to the first field before its `tab`
moved focus: "70" went into data.yaml and the backspaces emptied whichever field had
focus when they came back up. Two changes make every key land in order in the field that
had focus when it arrived:

- `FOCUS_KEYS`: tab and shift+tab are priority bindings of the form's screen, run by the
  app as it takes them from its queue, before it hands on the next key;
- `OwnKeys`: a field runs its own bindings on the key it was handed (the widget's BINDINGS,
  public class attributes), instead of letting it bubble to the app's later lookup.

Only public Textual names: nothing here depends on the fast paths (tui.compat).
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding, BindingsMap
from textual.widgets import Checkbox, Input

FOCUS_KEYS = [
    Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
    Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
]


def own_bindings(cls: type) -> BindingsMap:
    """The bindings `cls` and its bases declare (the nearest class's first), as Textual
    merges them for the widget's own namespace."""
    declared = []
    for base in cls.__mro__:
        declared.extend(base.__dict__.get("BINDINGS", ()))
        if not base.__dict__.get("inherit_bindings", True):
            break
    return BindingsMap(declared)


class OwnKeys:
    """A mixin before a Textual widget in the bases: the key handed to this widget runs this
    widget's binding for it here, in the order the keys were handed on."""

    async def on_key(self, event: events.Key) -> None:
        if event.is_printable and isinstance(self, Input):
            return  # Input's own handler inserts it, in order
        app = self.app  # type: ignore[attr-defined]
        for binding in _bindings_of(type(self)).key_to_bindings.get(event.key, ()):
            if binding.priority:
                continue  # the app ran it already, as it took the key
            if await app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return


_OWN: dict[type, BindingsMap] = {}


def _bindings_of(cls: type) -> BindingsMap:
    found = _OWN.get(cls)
    if found is None:
        found = _OWN[cls] = own_bindings(cls)
    return found


class FormInput(OwnKeys, Input):
    """An Input of a form: its cursor and editing keys act on it, whatever has focus by
    the time they would have bubbled up."""


class FormCheckbox(OwnKeys, Checkbox):
    """A Checkbox of a form: space and enter toggle this one."""
