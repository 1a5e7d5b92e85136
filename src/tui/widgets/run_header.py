"""The run header: state, epoch x/N, a progress bar, ETA, elapsed, best, error."""

from __future__ import annotations

from rich.text import Text

from ...core.base.formatting import fmt_duration, fmt_eta, fmt_gpu_indices
from ...core.base.text import printable, wrap_words
from ...core.model.snapshot import PushInfo, RunInfo
from ...core.render.snapshot_text import best_text, epoch_text
from .lines import LinePane
from .style import STATE_STYLE, state_badge


def text_bar(fraction: float, width: int) -> str:
    """A one-style bar: full blocks, one partial block, spaces as track."""
    width = max(width, 1)
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = int(round(fraction * width * 8))
    full, part = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[part] if part and full < width else ""
    return ("█" * full + partial).ljust(width, "·")


def push_text(p: PushInfo | None, now: float) -> Text:
    """'pushed best.pt ep37 4m ago', and a warning when best.pt changed since."""
    parts: list[tuple[str, str]] = []
    if p is not None and p.last_ok_file is not None and p.last_ok_at is not None:
        ep = f" ep{p.last_ok_epoch}" if p.last_ok_epoch is not None else ""
        ago = fmt_duration(max(now - p.last_ok_at, 0))
        parts.append((f"pushed {p.last_ok_file}{ep} {ago} ago", "green"))
    if p is not None and p.last_outcome == "error":
        parts.append(("last push failed (see notices)", "bold red"))
    if p is not None and p.best_changed:
        parts.append(("best.pt changed since pushed (p)", "bold yellow"))
    out = Text(no_wrap=True, overflow="ellipsis")
    for i, (text, style) in enumerate(parts):
        out.append(("   " if i else "") + text, style=style)
    return out


def top_row(r: RunInfo, simulated: bool, width: int) -> Text:
    """'RUN  name  model  epoch x/N  sim GPUs 0-1', fitted to `width`: the model goes
    first, then the name is shortened ("…"); the state, the epoch and the GPUs (and that
    they are simulated) stay whole."""
    name = printable(r.name)
    tail = f"  epoch {epoch_text(r)}"
    gpus = sim = ""
    if r.gpu_indices:
        plural = "s" if len(r.gpu_indices) > 1 else ""
        sim = "sim " if simulated else ""
        gpus = f"GPU{plural} {fmt_gpu_indices(r.gpu_indices)}"
    badge = f" {state_badge(r.state).strip()} "
    model = f"  {printable(r.model)}" if r.model else ""
    fixed = len(badge) + 1 + len(tail) + (2 + len(sim) + len(gpus) if gpus else 0)
    if fixed + len(name) + len(model) > width:
        model = ""
    room = max(width - fixed, 4)
    if len(name) > room:
        name = name[: room - 1] + "…"
    top = Text(no_wrap=True, overflow="ellipsis")
    top.append(badge, style=STATE_STYLE.get(r.state, ""))
    top.append(f" {name}", style="bold")
    if model:
        top.append(model, style="dim")
    top.append(tail)
    if gpus:
        top.append("  ")
        if sim:
            top.append("sim", style="bold magenta")
            top.append(" ")
        top.append(gpus)
    return top


class RunHeader(LinePane):
    """Shows one RunInfo; repaints only the cells that changed ("updated 3s ago")."""

    DEFAULT_CSS = """
    RunHeader { height: auto; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._run: RunInfo | None = None
        self._now: float = 0.0
        self._message: str | None = None
        self._pushes: PushInfo | None = None
        self._simulated = False
        self._key: tuple | None = None

    def show(
        self,
        run: RunInfo | None,
        now: float,
        message: str | None = None,
        pushes: PushInfo | None = None,
        simulated: bool = False,
    ) -> None:
        """`simulated`: the run's GPUs are simulated ones (GpuView.simulated): said so."""
        updated = run.updated if run else None
        ago = int(now - updated) if updated is not None else None
        pushed_ago = (
            int((now - pushes.last_ok_at) // 60)
            if pushes is not None and pushes.last_ok_at is not None
            else None
        )
        key = (run, ago, message, pushes, pushed_ago, simulated)
        if key == self._key:
            return
        self._key = key
        self._run, self._now, self._message, self._pushes = run, now, message, pushes
        self._simulated = simulated
        self.repaint_rows()  # a layout pass only when the number of rows changes

    def _wrapped(self, text: str, style: str, width: int) -> list[Text]:
        """The rows that may wrap: an error must be read whole (made printable first, so
        that it wraps where it is shown; its own newlines start rows), broken between
        words, a word wider than the pane (a path) shortened in its middle."""
        return [Text(row, style=style) for row in wrap_words(printable(text, newlines=True), width)]

    def build_rows(self, width: int) -> list[Text]:
        r = self._run
        if r is None:
            return self._wrapped(self._message or "No run selected.", "italic", width)
        top = top_row(r, self._simulated, width)

        pct = "  ?%" if r.progress is None else f"{r.progress * 100:3.0f}%"
        eta = f"ETA {fmt_eta(r.eta_seconds, r.eta_overdue_seconds, '-')}"
        tail = f" {pct}  {eta}  elapsed {fmt_duration(r.elapsed_seconds)}"
        if len(r.attempts) > 1:  # the sum of them (core.records.attempts)
            tail += f" in {len(r.attempts)} attempts"
        if r.mean_epoch_seconds:
            tail += f"  {fmt_duration(r.mean_epoch_seconds)}/ep"
        bar_w = max(width - len(tail) - 1, 5)
        progress = Text(no_wrap=True, overflow="ellipsis")
        progress.append(
            text_bar(r.progress or 0.0, bar_w),
            style=STATE_STYLE.get(r.state, "").replace("bold ", "") or None,
        )
        progress.append(tail)

        best = Text(no_wrap=True, overflow="ellipsis")
        best.append(best_text(r))
        updated = r.updated
        if updated is not None:
            best.append(f"   updated {fmt_duration(self._now - updated)} ago", style="dim")
        rows = [top, progress, best]
        pushed = push_text(self._pushes, self._now)
        if pushed.plain:  # its own row: at 80 columns it would be cut off after "updated"
            rows.append(pushed)
        note, style = None, "yellow"
        if r.error:
            note, style = r.error, ("bold yellow" if r.state == "stalled" else "bold red")
        elif r.problem:
            note = r.problem
        elif self._message:
            note = self._message
        if note:
            rows.extend(self._wrapped(note, style, width))
        return rows
