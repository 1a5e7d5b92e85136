"""`c`: everything about money, and whether to stop or destroy the machine.

The text is core's `cost_to_text`, the same as `rgpu-tui cost` prints, plus the
idle time this app has seen."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from ...core.base.formatting import fmt_duration, fmt_money
from ...core.model.snapshot import Snapshot
from ...core.picture.cost import cost_to_text
from .dialogs import ReportScreen


def cost_details(snap: Snapshot | None, settings) -> Text:
    if snap is None or snap.cost is None:
        return Text("No cost figures yet.")
    c = snap.cost
    try:
        text = cost_to_text(c, settings, snap.generated_at, c.disk_gb, snap.selected_run, snap.gpus)
    except Exception as exc:  # a figure out of every range must not take the app down
        return Text(f"cost unavailable: {' '.join(f'{type(exc).__name__}: {exc}'.split())}")
    out = Text(text)
    if c.configured and c.idle_seconds is not None:
        out.append(
            f"\nidle seen     {fmt_duration(c.idle_seconds)} = {fmt_money(c.idle_spent)}"
            " (no running run, every GPU under 5%)"
        )
    return out


class CostScreen(ReportScreen):
    """`c`: the cost details, updated live while open."""

    BINDINGS = [Binding("c", "dismiss", "Close")]

    def __init__(self, snap: Snapshot | None, settings) -> None:
        self._settings = settings
        self._key = self._key_of(snap)
        super().__init__("cost", cost_details(snap, settings))

    @staticmethod
    def _key_of(snap: Snapshot | None) -> tuple:
        if snap is None:
            return (None,)
        return (snap.cost, snap.selected_run, int(snap.generated_at))

    def update_cost(self, snap: Snapshot) -> None:
        key = self._key_of(snap)
        if key == self._key:
            return
        self._key = key
        self.show(cost_details(snap, self._settings))
