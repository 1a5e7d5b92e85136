"""The hosts table: one row per host, a totals row, a cursor; `enter` opens the host.

Rows come from core.fleet.fleet_summary. Columns that do not fit the width are left out,
the least needed first (spent, best, ETA, idle money, $/h), so 80 columns keep host,
reachable, GPUs and runs. Simulated or replayed GPUs say so ("2 sim", "2 replay"), in
the row and the totals. An unreachable host's row says since when and why, in one
line. A LinePane: a delta that moves one number repaints those cells only.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable

from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from ...core.base.formatting import fmt_duration, fmt_eta, fmt_money, fmt_number
from ...core.base.text import printable
from ...core.fleet.fleet_summary import FleetTotals, HostSummary, totals
from ..widgets.lines import LinePane
from ..widgets.style import STATE_STYLE, state_badge

GAP = "  "
NAME_MAX = 16
RUNS_MAX = 26
ERROR_ROWS = 3  # an unreachable host's one-line error wraps onto at most this many rows
# (column, header, right-aligned, its least width: a value that moves seldom moves the
# columns after it, which would repaint every row); dropped in DROP_ORDER when narrow
COLUMNS = (
    ("host", "host", False, 4),
    ("up", "reachable", False, 9),
    ("gpus", "GPUs", True, 6),
    ("runs", "runs", False, 8),
    ("best", "best", True, 6),
    ("eta", "ETA", True, 6),
    ("price", "$/h", True, 5),
    ("spent", "spent", True, 8),
    ("idle", "idle", True, 6),
    ("autostop", "autostop", False, 8),  # only when a host's snapshot carries a plan
)
DROP_ORDER = ("spent", "best", "eta", "idle", "price", "autostop")
AUTOSTOP_STYLE = {"counting": "bold yellow", "failed": "bold red", "ran": "bold"}
# the runs column's colours: DEAD and FAIL stand out, the rest as the runs list
RUN_STYLE = {**STATE_STYLE, "running": "green", "completed": "cyan", "unknown": "dim"}


def _up(h: HostSummary, now: float) -> tuple[str, str]:
    if h.reachable:
        return "yes", "green"
    if h.connecting:
        return "connecting", "dim"
    since = f" {fmt_duration(now - h.down_since)}" if h.down_since is not None else ""
    return f"no{since}", "bold red"


def _runs(h: HostSummary) -> Text:
    cell = Text()
    if not h.runs:
        cell.append("no runs", style="dim")
    for i, (state, count) in enumerate(h.runs):
        if i:
            cell.append(" ")
        cell.append(f"{count} ")
        cell.append(state_badge(state).strip() or "?", style=RUN_STYLE.get(state, ""))
    return cell


def cells(h: HostSummary, now: float) -> dict[str, Text]:
    """The cells of one host's row (an unreachable host: host and reachable only)."""
    up, up_style = _up(h, now)
    out = {"host": Text(printable(h.name)[:NAME_MAX], style="bold"), "up": Text(up, up_style)}
    if not h.reachable:
        return out
    gpus = Text("none" if h.gpus is None else str(h.gpus))
    if h.gpus and h.gpu_label:  # simulated or replayed: not the machine's own numbers
        gpus.append(f" {h.gpu_label}", style="bold magenta")
    if h.gpus and h.gpu_util is not None:
        gpus.append(f" {h.gpu_util:3.0f}%")
    out["gpus"] = gpus
    out["runs"] = _runs(h)
    out["best"] = Text(fmt_number(h.best))
    out["eta"] = Text(fmt_eta(h.eta_seconds, h.eta_overdue_seconds, "-"))
    out["price"] = Text(f"{h.price_per_hour:.2f}" if h.price_per_hour is not None else "?")
    out["spent"] = Text(fmt_money(h.spent) if h.spent is not None else "-")
    if h.idle and h.idle_spent is not None:
        out["idle"] = Text(fmt_money(h.idle_spent), style="bold yellow")
    else:
        out["idle"] = Text("IDLE" if h.idle else "-", style="bold yellow" if h.idle else "")
    if h.autostop is not None:
        out["autostop"] = autostop_cell(h.autostop, now)
    return out


def _counting(plan) -> bool:
    return plan is not None and plan.phase == "counting"


def autostop_cell(plan, now: float) -> Text:
    """The host's autostop plan in a few cells: "in 4m30s" while its watcher counts down,
    else the phase (held, checking, pushing, running, ran, failed)."""
    phase = printable(plan.phase)
    if plan.phase == "counting" and plan.fires_at is not None:
        text = f"in {fmt_duration(plan.fires_at - now)}"
    elif plan.phase == "held_by_app":
        text = "held (app)"
    else:
        text = phase
    return Text(text, style=AUTOSTOP_STYLE.get(plan.phase, ""))


def _money_per_hour(amount: float, hosts: int, unpriced: int) -> str:
    if unpriced == hosts:
        return "no price set"
    return f"${amount:,.2f}/h" + (f" +{unpriced} unpriced" if unpriced else "")


def totals_text(t: FleetTotals) -> Text:
    row = Text()
    row.append(f"{t.machines} machine{'s' if t.machines != 1 else ''}", style="bold")
    row.append(f" ({t.reachable} reachable)  {t.gpus} GPU{'s' if t.gpus != 1 else ''}")
    fake = ((t.simulated, "simulated"), (t.replayed, "replayed"))
    said = ", ".join(f"{n} {what}" for n, what in fake if n)
    if said:  # GPUs whose numbers are not a machine's own
        row.append(f" ({said})", style="magenta")
    if t.reachable:
        row.append("  " + _money_per_hour(t.per_hour, t.reachable, t.unpriced))
    if t.idle:
        row.append(f"  idle {t.idle}: ", style="bold yellow")
        row.append(_money_per_hour(t.idle_per_hour, t.idle, t.idle_unpriced), style="bold yellow")
    return row


def layout(rows: list[dict[str, Text]], width: int) -> list[tuple]:
    """The columns that fit `width` (with the cursor's 2 cells), and their widths."""
    shown = [c for c in COLUMNS if c[0] != "autostop" or any("autostop" in r for r in rows)]
    while True:
        widths = []
        for key, head, _right, least in shown:
            w = max([len(head), least] + [r[key].cell_len for r in rows if key in r])
            widths.append(min(w, RUNS_MAX if key == "runs" else w))
        total = 2 + sum(widths) + len(GAP) * (len(widths) - 1)
        droppable = [k for k in DROP_ORDER if any(c[0] == k for c in shown)]
        if total <= width or not droppable:
            return [(*col[:3], w) for col, w in zip(shown, widths, strict=True)]
        shown = [c for c in shown if c[0] != droppable[0]]


def _fit(cell: Text, width: int, right: bool) -> Text:
    cell = cell.copy()
    cell.truncate(width, overflow="ellipsis")
    pad = width - cell.cell_len
    if pad > 0:
        if right:
            cell = Text(" " * pad) + cell
        else:
            cell.append(" " * pad)
    return cell


class HostsTable(LinePane):
    """The hosts table; up/down (j/k) move the cursor, enter opens the host."""

    can_focus = True
    AUTO_HEIGHT = True
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("enter", "open", "Open host"),
    ]
    DEFAULT_CSS = """
    HostsTable { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    class Opened(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, clock: Callable[[], float] = time.time, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self.hosts: list[HostSummary] = []
        self.cursor = 0

    def show(self, hosts: list[HostSummary]) -> None:
        self.hosts = hosts
        self.cursor = min(self.cursor, max(len(hosts) - 1, 0))
        self.repaint_rows()

    def tick(self) -> None:
        """The clock moved: "no 2m05s" and "in 4m30s" age (only changed cells are sent)."""
        if any(not h.reachable or _counting(h.autostop) for h in self.hosts):
            self.repaint_rows()

    @property
    def current(self) -> str | None:
        return self.hosts[self.cursor].name if self.hosts else None

    def action_move(self, step: int) -> None:
        if self.hosts:
            self.cursor = (self.cursor + step) % len(self.hosts)
            self.repaint_rows()

    def action_open(self) -> None:
        if self.current is not None:
            self.post_message(self.Opened(self.current))

    def build_rows(self, width: int) -> list[Text]:
        now = self.clock()
        rows = [cells(h, now) for h in self.hosts]
        cols = layout(rows, max(width, 20))
        head = Text("  ", style="bold")
        for i, (_key, title, right, w) in enumerate(cols):
            head.append((GAP if i else "") + (title.rjust(w) if right else title.ljust(w)))
        out = [head]
        for n, (h, row) in enumerate(zip(self.hosts, rows, strict=True)):
            line = Text("> " if n == self.cursor else "  ", style="bold", no_wrap=True)
            if not h.reachable or h.error:  # host, reachable, then why: the rest of the row
                for i, (key, _t, right, w) in enumerate(cols[:2]):
                    line.append(GAP if i else "")
                    line.append(_fit(row[key], w, right))
                line.append(GAP)
                why = printable(h.error or "not reachable yet")
                room = max(width - line.cell_len, 20)
                parts = textwrap.wrap(why, room, max_lines=ERROR_ROWS, placeholder=" …") or [""]
                line.append(parts[0], style="red")
                out.append(line)
                for part in parts[1:]:  # the whole line, under its start
                    out.append(Text(" " * (width - room) + part, style="red", no_wrap=True))
                continue
            else:
                for i, (key, _t, right, w) in enumerate(cols):
                    line.append(GAP if i else "")
                    line.append(_fit(row.get(key) or Text("-"), w, right))
            out.append(line)
        out.append(Text("─" * max(width, 1), style="dim"))
        out.append(totals_text(totals(self.hosts)))
        return out
