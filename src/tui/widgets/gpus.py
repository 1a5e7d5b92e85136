"""The machine pane: one summary line (GPUs, CPU, RAM, disk), one row per GPU, alerts.

At 80 columns a GPU row is: index, short name, utilisation bar and %, memory
used/total, temperature, power, and the run it works for. From WIDE columns on,
each row adds the utilisation history sparkline and the process list; from a 120-column
screen (HEALTH_FROM) a health row goes under it (`health_rows`, two when one is too narrow:
what slows it, clocks against their maximum, the PCIe link and its throughput, P-state,
fan, ECC, retired pages and remapped rows, XID errors; for more than HEALTH_ALL_GPUS GPUs
only the rows of GPUs with something wrong). Unknown
values read "N/A" at the same width, so columns never shift or get cut mid-number.
"""

from __future__ import annotations

import math

from rich.text import Text

from ...core.base.formatting import fmt_bytes, fmt_bytes_of, fmt_duration
from ...core.base.text import printable
from ...core.machine.gpu_health import slowdown_reason
from ...core.model.snapshot import (
    GpuDevice,
    GpuProcess,
    GpuView,
    RunInfo,
    SetupProcess,
    SystemView,
)
from .lines import LinePane, cut_words
from .metrics import sparkline
from .run_header import text_bar

WIDE = 120
HEALTH_FROM = WIDE - 2  # a 120-column screen: the pane's padding leaves it 118
HEALTH_ALL_GPUS = 4  # up to this many GPUs, each has its health row; above, only the sick


def short_gpu_name(name: str | None) -> str:
    if not name:
        return "N/A"
    for prefix in ("NVIDIA ", "GeForce ", "Tesla ", "Quadro "):
        name = name.replace(prefix, "")
    return name


def _num(value: float | None, fmt: str, width: int, unit: str = "") -> str:
    if value is None or not math.isfinite(value):
        return "N/A".rjust(width) + " " * len(unit)
    return f"{value:{fmt}}".rjust(width) + unit


def system_parts(s: SystemView | None) -> list[str]:
    """CPU, RAM, disk, load, swap: most important first, so a narrow line drops the last."""
    if s is None:
        return []
    parts = []
    if s.cpu_percent is not None:
        busiest = f" (max {s.cpu_max_percent:.0f}%)" if s.cpu_max_percent is not None else ""
        parts.append(f"CPU {s.cpu_percent:.0f}%{busiest}")
    else:
        parts.append("CPU …")  # psutil needs two readings to measure
    if s.mem_total_bytes:
        parts.append(f"RAM {fmt_bytes_of(s.mem_used_bytes, s.mem_total_bytes)}")
    if s.disk is not None:
        parts.append(f"disk {fmt_bytes(s.disk.free_bytes)} free")
    if s.load_avg is not None:
        parts.append(f"load {s.load_avg[0]:.1f}")
    if s.swap_total_bytes:
        parts.append(f"swap {fmt_bytes(s.swap_used_bytes)}")
    return parts


def bucket_means(values, n: int) -> list[float | None]:
    """The whole history (10 minutes) in `n` columns: the mean of each slice."""
    values = values if isinstance(values, tuple) else tuple(values)
    size = len(values)
    if size <= n:
        return list(values)
    out: list[float | None] = []
    for i in range(n):
        part = values[i * size // n : (i + 1) * size // n]
        if None in part:  # a lost GPU's gaps
            part = [v for v in part if v is not None]
        out.append(sum(part) / len(part) if part else None)
    return out


def pid_text(p: GpuProcess) -> str:
    """'pid 1234'; inside a container 'host pid 81234 = pid 12' when paired, else 'host pid
    81234, container process 12' (the run's processes here holding this GPU)."""
    if not p.host_pid:
        return f"pid {p.pid}"
    text = f"host pid {p.pid}"
    if p.local_pid is not None:
        return f"{text} = pid {p.local_pid}"
    here = p.local_candidates
    if here:
        shown = ", ".join(str(pid) for pid in here[:3]) + (", …" if len(here) > 3 else "")
        text += f", container process{'es' if len(here) > 1 else ''} {shown}"
    return text


def gpu_row(
    d: GpuDevice, names: dict[str, str], width: int, name_w: int, simulated: bool = False
) -> Text:
    """One GPU's row; a simulated one says so after its name (its numbers are invented)."""
    row = Text(no_wrap=True, overflow="ellipsis")
    name = short_gpu_name(d.name)[:name_w]
    row.append(f"{d.index:>2} {name:<{name_w}} ")
    if simulated:
        row.append("sim ", style="bold magenta")
    if d.state == "lost":
        row.append("LOST: NVML lost this GPU; the others keep updating", style="bold red")
        return row
    util = d.util_percent
    style = "green" if util is not None and util >= 50 else ("yellow" if util else "dim")
    row.append(text_bar((util or 0.0) / 100.0, 10), style=style)
    row.append(_num(util, ".0f", 4, "%"))
    if d.mem_total_mib:
        used = "N/A" if d.mem_used_mib is None else f"{d.mem_used_mib / 1024:.1f}"
        row.append(f" {used:>5}/{d.mem_total_mib / 1024:.0f}G".ljust(11))
    else:
        row.append("    N/A mem")
    row.append(_num(d.temperature_c, ".0f", 4, "C"))
    row.append(_num(d.power_w, ".0f", 5, "W"))
    if width >= WIDE and d.util_history:
        row.append("  ")
        row.append(
            sparkline(bucket_means(d.util_history, 24), 24, lo=0.0, hi=100.0).ljust(24),
            style="cyan",
        )
    owners = []
    for p in d.processes:
        if p.kind == "run" and p.run_dir:
            label = printable(names.get(p.run_dir, p.run_dir))
        elif p.kind == "unknown":
            label = "unknown process"
        elif p.kind == "host":
            label = "host process"  # a host pid no run here holds this GPU for
        elif p.kind == "other-user":
            label = f"other user's {printable(p.name or 'process')}"
        else:
            label = printable(p.name or "process")
        if width >= WIDE:
            mem = f" {p.used_mib / 1024:.1f}G" if p.used_mib is not None else ""
            label = f"{label} ({pid_text(p)}{mem})"
        if label not in owners:
            owners.append(label)
    if owners:
        row.append("  ")
        row.append(owners[0] if width < WIDE else ", ".join(owners))
        if width < WIDE and len(owners) > 1:
            row.append(f" +{len(owners) - 1}")
    for flag in d.flags:
        if flag in ("straggler", "starved"):
            row.append(f" [{flag}]", style="bold yellow")
    return row


def _pair(now: float | None, most: float | None, fmt: str = ".0f") -> str:
    if now is None:
        return "N/A"
    return f"{now:{fmt}}/{most:{fmt}}" if most is not None else f"{now:{fmt}}/N/A"


def _count(value: int | None) -> str:
    return "N/A" if value is None else str(value)


def health_trouble(d: GpuDevice) -> bool:
    """Something on this GPU needs a look: a slowdown, memory errors, XID errors."""
    return bool(slowdown_reason(d) or d.ecc_uncorrected or d.remap_pending or d.xid_count)


def health_rows(d: GpuDevice, width: int) -> list[Text]:
    """'   XID 0 · ECC 0/0 retired 0 remap 0 · PCIe 4x16/4x16 ↑2.3 ↓26.0MB/s · SM 2520/2790
    mem 10501/10501MHz · P2 fan 45%', after what slows it (bold yellow) when known; the
    parts most worth a look first, and those that do not fit `width` on a second row."""
    parts: list[tuple[str, str]] = []
    reason = slowdown_reason(d)
    if reason:
        parts.append((reason, "bold yellow"))
    xid = f"XID {_count(d.xid_count)}"
    if d.xid_count and d.xid_last is not None:
        xid += f" (last {d.xid_last})"
    parts.append((xid, "bold red" if d.xid_count else ""))
    ecc = "N/A"
    if d.ecc_corrected is not None or d.ecc_uncorrected is not None:
        ecc = f"{_count(d.ecc_corrected)}/{_count(d.ecc_uncorrected)}"
    mem = f"ECC {ecc} retired {_count(d.retired_pages)} remap {_count(d.remapped_rows)}"
    if d.remap_pending:
        mem += " (reset pending)"
    parts.append((mem, "bold red" if d.ecc_uncorrected or d.remap_pending else ""))
    if d.pcie_gen is not None and d.pcie_width is not None:
        link = f"PCIe {d.pcie_gen}x{d.pcie_width}"
        if d.pcie_gen_max is not None and d.pcie_width_max is not None:
            link += f"/{d.pcie_gen_max}x{d.pcie_width_max}"
    else:
        link = "PCIe N/A"
    if d.pcie_tx_kbs is not None and d.pcie_rx_kbs is not None:
        link += f" ↑{d.pcie_tx_kbs / 1024:.1f} ↓{d.pcie_rx_kbs / 1024:.1f}MB/s"
    parts.append((link, ""))
    clocks = (
        f"SM {_pair(d.sm_clock_mhz, d.sm_clock_max_mhz)} "
        f"mem {_pair(d.mem_clock_mhz, d.mem_clock_max_mhz)}"
        + ("MHz" if d.sm_clock_mhz is not None or d.mem_clock_mhz is not None else "")
    )
    parts.append((clocks, ""))
    fan = "N/A" if d.fan_percent is None else f"{d.fan_percent:.0f}%"
    parts.append((f"{d.pstate or 'P-state N/A'} fan {fan}", ""))
    rows = [Text("   ", no_wrap=True, overflow="ellipsis")]
    for text, style in parts:
        row = rows[-1]
        sep = " · " if row.cell_len > 3 else ""
        if sep and row.cell_len + len(sep) + len(text) > width:  # on a second row
            row = Text("   ", no_wrap=True, overflow="ellipsis")
            rows.append(row)
            sep = ""
        row.append(sep)
        row.append(text, style=style)
    return rows


def _minutes(now: float | None, started_at: float | None) -> int | None:
    if now is None or started_at is None:
        return None
    return int(max(now - started_at, 0.0) // 60)


class GpuPane(LinePane):
    """Repaints only the cells that changed, and only when its slice (GPUs, system, run
    names, idle minutes) changed."""

    AUTO_HEIGHT = True
    DEFAULT_CSS = """
    GpuPane { height: 1; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._key: tuple | None = None
        self._gpus: GpuView | None = None
        self._system: SystemView | None = None
        self._names: dict[str, str] = {}
        self._setup: tuple = ()

    def show(
        self,
        gpus: GpuView | None,
        system: SystemView | None,
        runs: tuple[RunInfo, ...],
        setup: tuple[SetupProcess, ...] = (),
        now: float | None = None,
    ) -> None:
        """`setup`: trainings setting up before their status.json (shown under the GPUs,
        with their age in minutes at `now`)."""
        names = {r.run_dir: printable(r.name) for r in runs}
        idle_min = None
        if gpus is not None and gpus.idle and gpus.idle_seconds is not None:
            idle_min = int(gpus.idle_seconds // 60)
        setup_rows = tuple((p.pid, p.command, p.why, _minutes(now, p.started_at)) for p in setup)
        key = (gpus, system, tuple(sorted(names.items())), idle_min, setup_rows)
        if key == self._key:
            return
        self._key = key
        self._gpus, self._system, self._names = gpus, system, names
        self._setup = setup_rows
        self.repaint_rows()

    def build_rows(self, width: int) -> list[Text]:
        width = max(width, 40)
        g, s = self._gpus, self._system
        head = Text(no_wrap=True, overflow="ellipsis")
        lines = [head]
        if g is None:
            head.append("GPUs …", style="bold")
        elif not g.available:
            head.append(g.reason or "No GPUs", style="yellow")
        else:
            head.append(f"GPUs {len(g.devices)}", style="bold")
            if g.source == "fake":
                head.append(" simulated", style="bold magenta")
            elif g.source == "replay":
                head.append(" replay", style="bold magenta")
            if g.source != "fake" and g.driver_version:
                head.append(f" driver {printable(g.driver_version)}", style="dim")
            if g.pid_namespace == "host":
                head.append("  container: NVML gives host pids", style="yellow")
            if g.idle:
                head.append(f"  IDLE {fmt_duration(g.idle_seconds)}", style="bold black on yellow")
        sep = "  │  "
        for part in system_parts(s):
            if head.cell_len + len(sep) + len(part) > width:
                break
            head.append(sep + part)
            sep = "  "
        if g is not None and g.available:
            name_w = min(max((len(short_gpu_name(d.name)) for d in g.devices), default=3), 12)
            every = len(g.devices) <= HEALTH_ALL_GPUS
            for d in g.devices:
                lines.append(gpu_row(d, self._names, width, name_w, g.simulated))
                if width >= HEALTH_FROM and d.state == "ok" and (every or health_trouble(d)):
                    lines.extend(health_rows(d, width))
        for pid, command, why, minutes in self._setup:  # busy: no status.json yet
            row = Text(no_wrap=True, overflow="ellipsis")
            row.append("SETTING UP", style="bold black on cyan")
            age = f" {minutes}m" if minutes is not None else ""
            row.append(f"{age} ({why}, no status.json yet: not idle)", style="bold")
            row.append(f" pid {pid} {command}")
            lines.append(cut_words(row, width))
        warnings = list(g.warnings if g is not None else ()) + list(s.warnings if s else ())
        for w in warnings:
            row = Text(w, style="bold yellow", no_wrap=True, overflow="ellipsis")
            lines.append(cut_words(row, width))
        return lines
