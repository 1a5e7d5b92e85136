"""The chart view's dialogs: `/` picks a metric (type to filter), `t` the compare table."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from ...core.base.text import printable
from ...core.render.compare import compare_lines, compare_rows
from ..widgets.form_keys import FormInput
from .dialogs import DIALOG_CSS, ReportScreen

MAX_SHOWN = 300  # options listed at once (a run may have thousands of columns)


class MetricPickScreen(ModalScreen[str | None]):
    """Every metric of the shown runs; typing filters (a substring, any case); enter picks
    the highlighted one, escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = (
        DIALOG_CSS.format(name="MetricPickScreen")
        + """
    MetricPickScreen OptionList { height: auto; max-height: 14; border: none; }
    MetricPickScreen Input { border: none; height: 1; padding: 0; }
    """
    )

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = list(dict.fromkeys(names))

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "pick a metric"
            box.border_subtitle = "type to filter   ↑/↓ enter: pick   esc: cancel"
            yield FormInput(placeholder="filter", id="filter")  # a burst edits it in order
            yield OptionList(id="metrics")
        self.call_after_refresh(self._fill, "")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def _fill(self, needle: str) -> None:
        low = needle.lower()
        found = [n for n in self.names if low in n.lower()][:MAX_SHOWN]
        options = self.query_one(OptionList)
        # a name comes from a run's files: shown as text, never as markup
        options.set_options([Option(Text(printable(n)), id=n) for n in found])
        if found:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.option_count:
            self.dismiss(options.get_option_at_index(options.highlighted).id)

    def on_key(self, event) -> None:
        """↑/↓ move in the list while the filter keeps the focus."""
        if event.key in ("up", "down"):
            options = self.query_one(OptionList)
            if event.key == "up":
                options.action_cursor_up()
            else:
                options.action_cursor_down()
            event.stop()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def compare_body(runs, width: int = 100) -> Text:
    rows, differs = compare_rows(runs)
    out = Text()
    for i, (line, style) in enumerate(compare_lines(rows, differs, width)):
        if i:
            out.append("\n")
        out.append(line, style=style or None)
    return out


class CompareScreen(ReportScreen):
    """`t`: the marked runs side by side (the selected run alone when none is marked),
    updated while open."""

    BINDINGS = [Binding("t", "dismiss", "Close")]

    def __init__(self, runs, width: int = 100) -> None:
        self._width = width
        self._key = self._key_of(runs)
        super().__init__("compare", compare_body(runs, width))

    def on_mount(self) -> None:
        box = self.query_one(VerticalScroll)
        box.styles.width = min(self._width + 4, 124)  # wider than a report: one column a run

    @staticmethod
    def _key_of(runs) -> tuple:
        return tuple(
            (
                r.key,
                r.chart,
                r.price_per_hour,
                (r.info.state, r.info.current_epoch, r.info.total_epochs) if r.info else None,
            )
            for r in runs
        )

    def update_runs(self, runs) -> None:
        key = self._key_of(runs)
        if key == self._key:
            return
        self._key = key
        self.show(compare_body(runs, self._width))
