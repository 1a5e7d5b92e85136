"""What every rgpu-tui app (the local one and the fleet's) does the same way: notices made
printable and never read as markup, and the layout classes app.tcss keys on."""

from __future__ import annotations

from ..core.base.text import printable

WIDE_COLUMNS = 140  # from here the panes sit side by side ("-wide")
SHORT_ROWS = 32  # below this the metrics pane drops its border ("-short")
TALL_ROWS = 40  # from here the metrics pane grows to its TALL_ROWS metrics ("-tall")


class AppRules:
    """A mixin before textual's App in the bases. Call `_set_layout(self.size)` in
    on_mount; resizes follow by themselves."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice (screens and widgets call the app's) names runs, hosts, files and
        errors from the runs: made printable, and never read as markup (a run named "[/]"
        would raise, one named "[bold]" would restyle it). No notice of ours uses markup."""
        super().notify(
            printable(message, newlines=True),
            title=printable(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def on_resize(self, event) -> None:
        self._set_layout(event.size)

    def _set_layout(self, size) -> None:
        self.set_class(size.width >= WIDE_COLUMNS, "-wide")
        self.set_class(size.height < SHORT_ROWS, "-short")
        self.set_class(size.height >= TALL_ROWS, "-tall")
