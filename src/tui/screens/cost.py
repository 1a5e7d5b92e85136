"""`c`: everything about money, and whether to stop or destroy the machine."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from ...core.snapshot import CostView, fmt_duration, fmt_money, fmt_rate, iso
from ..widgets.cost import NO_PRICE
from .dialogs import ReportScreen


def _hours(h: float | None) -> str:
    return "?" if h is None else f"{h:.1f} h"


def cost_details(c: CostView | None, now: float) -> Text:
    out = Text()
    if c is None:
        out.append("No cost figures yet.")
        return out
    if not c.configured:
        out.append(NO_PRICE + "\n\n", style="bold")
    rows = [
        ("Rate (running)", fmt_rate(c.price_per_hour) if c.configured else "?"),
        (
            "Billing since",
            (
                f"{iso(c.billing_started_at)} ({c.billing_started_source or 'settings'})"
                if c.billing_started_at is not None
                else "?"
            ),
        ),
        ("Billed", _hours(c.billed_hours)),
        ("Spent", fmt_money(c.spent)),
        ("This run so far", fmt_money(c.run_spent)),
        ("Per epoch", fmt_money(c.per_epoch)),
        ("To finish", fmt_money(c.to_finish)),
        ("Run projected total", fmt_money(c.projected_total)),
        (
            "Idle (seen)",
            f"{fmt_duration(c.idle_seconds)} = {fmt_money(c.idle_spent)}"
            if c.idle_seconds is not None
            else "?",
        ),
    ]
    if c.balance_left is not None:
        runs_out = (
            f"{iso(c.balance_runs_out_at)} (in {fmt_duration(c.balance_runs_out_at - now)})"
            if c.balance_runs_out_at is not None
            else "?"
        )
        rows += [("Balance left", fmt_money(c.balance_left)), ("Balance runs out", runs_out)]
    for label, value in rows:
        out.append(f"{label:<20}", style="bold")
        out.append(f"{value}\n")
    out.append("\nStop or destroy?\n", style="bold underline")
    if c.stopped_per_hour is None:
        out.append("Set disk_gb (default: the runs disk) and storage_price_gb_month to compare.\n")
    else:
        saving = (
            f" ({c.stop_saving_percent:.1f}% less than running)"
            if c.stop_saving_percent is not None
            else ""
        )
        out.append(f"Stopped, the disk alone costs {fmt_rate(c.stopped_per_hour)}{saving}.\n")
        if c.break_even_hours is not None:
            out.append(
                f"Coming back within {c.break_even_hours:.1f} h: stop. "
                f"A longer break: destroy and rebuild.\n"
            )
        else:
            out.append("Set rebuild_cost to know when destroying pays.\n")
    for w in c.warnings:
        out.append(f"\n! {w}", style="bold red")
    return out


class CostScreen(ReportScreen):
    """`c`: the cost details, updated live while open."""

    BINDINGS = [Binding("c", "dismiss", "Close")]

    def __init__(self, cost: CostView | None, now: float) -> None:
        super().__init__("cost", cost_details(cost, now))
        self._cost, self._now = cost, now

    def update_cost(self, cost: CostView | None, now: float) -> None:
        if (cost, int(now)) == (self._cost, int(self._now)):
            return
        self._cost, self._now = cost, now
        self.show(cost_details(cost, now))
