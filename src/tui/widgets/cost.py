"""Money on screen: the cost strip (always visible) and the idle banner."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ...core.base.formatting import fmt_money, fmt_price, fmt_rate
from ...core.model.snapshot import CostView, GpuView
from ...core.picture.cost import no_price_text
from ...core.picture.price import age_text
from .lines import LinePane, cut_words


def no_price_forms(config_file: str) -> list[str]:
    """The no-price hint, longest first: a narrow strip shows the longest that fits (`c`
    always shows the first, whole)."""
    return [
        no_price_text(config_file),
        f"No price set: pass --price-per-hour 3.48, or put price_per_hour = 3.48 in {config_file}.",
        "No price set: pass --price-per-hour 3.48 (c: every way to set it)",
        "No price set (c: how to set one)",
    ]


def strip_text(
    c: CostView | None, config_file: str = "the config file", width: int | None = None
) -> Text:
    """The strip's row; with `width`, one that fits it without cutting a word: the
    no-price hint in a shorter form, the money cut between two of its parts."""
    line = Text(no_wrap=True, overflow="ellipsis")
    if c is None:
        return line
    if not c.configured and c.price_problem:  # price_command is set: say what it did
        line.append("No price: " + c.price_problem, style="italic")
        return line if width is None else cut_words(line, width)
    if not c.configured:
        forms = no_price_forms(config_file)
        fits = [f for f in forms if width is None or len(f) <= width]
        line.append(fits[0] if fits else forms[-1], style="italic")
        return line if width is None else cut_words(line, width)
    line.append(fmt_rate(c.price_per_hour), style="bold")
    if c.price_read_at is not None and c.price_age_seconds is not None:  # from the provider
        line.append(f" (price_command, {age_text(c.price_age_seconds)})", style="dim")
    line.append(f"  spent {fmt_money(c.spent)}")
    if c.run_spent is not None:
        line.append(f"  run {fmt_money(c.run_spent)}")
    if c.per_epoch is not None:
        line.append(f"  {fmt_price(c.per_epoch, 'epoch')}")
    if c.to_finish is not None:
        line.append(f"  to finish {fmt_money(c.to_finish)}")
    if c.idle_spent:
        line.append(f"  idle {fmt_money(c.idle_spent)}", style="yellow")
    if c.warnings:
        line.append("  ! ", style="bold red")
        line.append(c.warnings[0], style="bold red")
    line.append("  (c: cost)", style="dim")
    return line if width is None else cut_words(line, width, sep="  ")


def idle_banner_text(c: CostView, gpus: GpuView | None = None) -> str:
    minutes = int((c.idle_now_seconds or 0) // 60)
    if c.configured and c.idle_now_spent is not None:
        money = f"{fmt_money(c.idle_now_spent)} spent idle at {fmt_rate(c.price_per_hour)}"
    else:
        money = "no price set, so the money is unknown"
    by = " (simulated GPUs)" if gpus is not None and gpus.simulated else ""
    return f"Idle {minutes} min{by} — {money}. Push checkpoints, then stop or destroy."


class CostStrip(LinePane):
    """One row; money moves a cent at a time, so usually only a few cells repaint."""

    DEFAULT_CSS = """
    CostStrip { height: 1; padding: 0 1; }
    """

    def __init__(self, config_file: str = "the config file", **kwargs) -> None:
        """config_file: where the no-price hint says to put the price
        (core.base.config.config_file_for)."""
        super().__init__(**kwargs)
        self._cost: CostView | None = None
        self.config_file = config_file

    def show(self, cost: CostView | None) -> None:
        if cost == self._cost:
            return
        self._cost = cost
        self.repaint_rows()

    def build_rows(self, width: int) -> list[Text]:
        return [strip_text(self._cost, self.config_file, width)]


class IdleBanner(Widget):
    """Shown after idle_minutes of idling; the app rings the bell once when it appears."""

    DEFAULT_CSS = """
    IdleBanner {
        height: 1; padding: 0 1; display: none;
        background: $warning; color: $text; text-style: bold;
    }
    IdleBanner.-on { display: block; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._text = ""

    def show(self, cost: CostView | None, gpus: GpuView | None = None) -> bool:
        """Update; returns True when the banner has just appeared."""
        on = cost is not None and cost.idle_alert
        appeared = on and not self.has_class("-on")
        self.set_class(on, "-on")
        text = idle_banner_text(cost, gpus) if on else ""
        if text != self._text:
            self._text = text
            self.refresh()
        return appeared

    def render(self) -> Text:
        row = Text(self._text, no_wrap=True, overflow="ellipsis")
        return cut_words(row, self.size.width) if self.size.width else row
