"""Small modal screens: confirm (enter/esc), pick one of a list, show a report.

Titles, bodies and choices hold run names, paths, errors and file names: they pass
`inert_body` (made printable, a string never read as markup); only the help screen's own
text is markup."""

from __future__ import annotations

from collections.abc import Callable, Collection

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..inert import inert_body

SCROLL_KEYS = "↑/↓ pgup/pgdn: scroll"

DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > VerticalScroll {{
    width: 76; max-width: 100%; height: auto; max-height: 100%;
    border: round $accent; padding: 0 1; background: $surface;
    scrollbar-size-vertical: 1;
}}
"""


class DialogBox(VerticalScroll):
    """A dialog's bordered box. Its subtitle gives the dialog's keys, and the keys that
    scroll it whenever its text is taller than the box (help at 80x24: every line can
    be read by scrolling, and the dialog says how)."""

    def __init__(self, keys: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.keys = keys
        self.border_subtitle = keys

    def on_resize(self) -> None:
        # a Resize comes with a new size or a new virtual size (the body changed)
        subtitle = f"{SCROLL_KEYS}   {self.keys}" if self.max_scroll_y > 0 else self.keys
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle


class ConfirmScreen(ModalScreen[bool]):
    """`body` and a key line; enter answers True, escape False."""

    BINDINGS = [
        Binding("enter", "answer(True)", "Yes"),
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("escape", "answer(False)", "Cancel"),
        Binding("n", "answer(False)", "Cancel", show=False),
    ]
    DEFAULT_CSS = DIALOG_CSS.format(name="ConfirmScreen")

    def __init__(self, title: str, body: RenderableType, yes: str = "enter: yes") -> None:
        super().__init__()
        self._title, self._body, self._yes = inert_body(title), inert_body(body), yes

    def compose(self) -> ComposeResult:
        with DialogBox(f"{self._yes}   esc: cancel") as box:
            box.border_title = self._title
            yield Static(self._body, id="body")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class PickScreen(ModalScreen[str | None]):
    """Pick one of (id, label) choices; enter picks, escape cancels (None). With `body`, a
    text above the list, which `describe(id)` rewrites as the highlight moves (the resume
    dialog: the command for the highlighted checkpoint); `disabled` ids cannot be picked."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = (
        DIALOG_CSS.format(name="PickScreen")
        + """
    PickScreen OptionList { height: auto; max-height: 16; border: none; }
    """
    )

    def __init__(
        self,
        title: str,
        choices: list[tuple[str, str]],
        default: str | None = None,
        *,
        body: RenderableType | None = None,
        describe: Callable[[str], RenderableType] | None = None,
        disabled: Collection[str] = (),
        keys: str = "enter: pick",
    ) -> None:
        """`default`: the id of the choice highlighted at first (else the first)."""
        super().__init__()
        self._title, self._choices = inert_body(title), choices
        ids = [cid for cid, _ in choices]
        self._default = ids.index(default) if default in ids else 0
        self._body = inert_body(body) if body is not None else None
        self._describe, self._disabled, self._keys = describe, set(disabled), keys

    def compose(self) -> ComposeResult:
        with DialogBox(f"{self._keys}   esc: cancel") as box:
            box.border_title = self._title
            if self._body is not None:
                yield Static(self._body, id="body")
            # a label is a file name from the run: shown as text, never as markup
            yield OptionList(
                *(
                    Option(inert_body(label), id=cid, disabled=cid in self._disabled)
                    for cid, label in self._choices
                )
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self._default
        options.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self._describe is None or self._body is None or event.option.id is None:
            return
        self._body = inert_body(self._describe(event.option.id))
        self.query_one("#body", Static).update(self._body)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ReportScreen(ModalScreen[None]):
    """A read-only report that can be updated while it is open."""

    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("q", "dismiss", "Close")]
    DEFAULT_CSS = DIALOG_CSS.format(name="ReportScreen")

    def __init__(self, title: str, body: RenderableType, *, markup: bool = False) -> None:
        """`markup`: `body` is the app's own markup (the help), not run-derived text."""
        super().__init__()
        self._title = inert_body(title)
        self._body = body if markup else inert_body(body)

    def compose(self) -> ComposeResult:
        with DialogBox("esc: close") as box:
            box.border_title = self._title
            yield Static(self._body, id="body")

    def show(self, body: RenderableType) -> None:
        """Before compose, the body it will show; after, the shown body, also while the
        screen is composed but not yet mounted (a quick GPU check answers then)."""
        self._body = inert_body(body)
        try:
            shown = self.query_one("#body", Static)
        except NoMatches:  # not composed yet: compose() takes self._body
            return
        shown.update(self._body)
