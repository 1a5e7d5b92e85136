"""The Snapshot as plain text (`rgpu-tui snapshot`): what the app shows, line by line.

Every run-derived string is made printable at the output boundary (`_lines`).
"""

from __future__ import annotations

import math
import os

from ..base.formatting import fmt_bytes, fmt_bytes_of, fmt_duration, fmt_eta, fmt_number, iso
from ..base.text import printable
from ..machine.setup_procs import setup_text
from ..model.snapshot import GpuProcess, GpuView, RunInfo, Snapshot, SystemView
from ..run.discovery import deep_dirs_text


def epoch_text(r: RunInfo) -> str:
    cur = "?" if r.current_epoch is None else str(r.current_epoch)
    tot = "?" if r.total_epochs is None else str(r.total_epochs)
    return f"{cur}/{tot}"


def best_text(r: RunInfo) -> str:
    if r.best_metric is None:
        return "best -"
    name = printable(r.best_metric_name or "metric").removeprefix("metrics/")
    at = f" @ep{r.best_epoch}" if r.best_epoch is not None else ""
    return f"best {name} {fmt_number(r.best_metric)}{at}"


CPU_UNKNOWN = "measured between two readings, one look has one: the app shows it"


def _na(value, fmt: str, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "N/A"
    return f"{value:{fmt}}{unit}"


def _lines(lines: list[str]) -> list[str]:
    """The output boundary of the text functions: each entry one printable line (a newline
    or an escape sequence inside a run-derived field shows as ^J / ^[)."""
    return [printable(line) for line in lines]


def _process_text(p: GpuProcess) -> str:
    """'1234 exp7'; a host pid: 'host 81234=12 exp7' (paired) or 'host 81234'."""
    pid = str(p.pid)
    if p.host_pid:
        pid = f"host {p.pid}" + (f"={p.local_pid}" if p.local_pid is not None else "")
    return pid + (" " + printable(os.path.basename(p.run_dir)) if p.run_dir else "")


def gpus_to_text(g: GpuView) -> list[str]:
    if not g.available:
        return _lines([g.reason or "no GPUs"])
    label = "simulated" if g.source == "fake" else f"driver {g.driver_version or 'N/A'}"
    if g.source == "replay":
        label = f"replay, {label}"
    out = [f"GPUs {len(g.devices)} ({printable(label)})" + ("  IDLE" if g.idle else "")]
    if g.pid_namespace == "host":
        out.append("  container: NVML gives host pids")
    sim = " (simulated)" if g.simulated else ""
    for d in g.devices:
        if d.state == "lost":
            out.append(f"  {d.index} {d.name or 'N/A'}{sim}: LOST")
            continue
        mem = (
            f"{d.mem_used_mib / 1024:.1f}/{d.mem_total_mib / 1024:.0f} GiB"
            if d.mem_used_mib is not None and d.mem_total_mib
            else "N/A"
        )
        procs = ", ".join(_process_text(p) for p in d.processes)
        line = (
            f"  {d.index} {d.name or 'N/A'}{sim}: util {_na(d.util_percent, '.0f', '%')}"
            f"  mem {mem}  {_na(d.temperature_c, '.0f', 'C')}  {_na(d.power_w, '.0f', 'W')}"
        )
        if d.flags:
            line += "  [" + ",".join(d.flags) + "]"
        if procs:
            line += f"  pids {procs}"
        out.append(line)
    out.extend(f"  ! {w}" for w in g.warnings)
    return _lines(out)


def system_to_text(s: SystemView) -> list[str]:
    if s.cpu_percent is None:  # psutil measures the CPU between two readings
        parts = [f"CPU N/A ({CPU_UNKNOWN})"]
    else:
        parts = [f"CPU {_na(s.cpu_percent, '.0f', '%')}"]
    if s.load_avg:
        parts.append(f"load {s.load_avg[0]:.2f}")
    if s.mem_total_bytes:
        used = s.mem_used_bytes or 0
        parts.append(f"RAM {fmt_bytes_of(used, s.mem_total_bytes)}")
    if s.disk:
        parts.append(
            f"disk {s.disk.path}: {fmt_bytes(s.disk.free_bytes)} free of "
            f"{fmt_bytes(s.disk.total_bytes)}"
        )
    return _lines(["  ".join(parts)] + [f"  ! {w}" for w in s.warnings])


def snapshot_to_text(s: Snapshot) -> str:
    """What the app shows, as plain lines; every run-derived string made printable."""
    out = [f"rgpu-tui snapshot  {iso(s.generated_at)}  root {s.root}"]
    if s.gpus is not None:
        out.extend(gpus_to_text(s.gpus))
    if s.system is not None:
        out.extend(system_to_text(s.system))
    if s.problem:
        out.append(s.problem)
    out.extend(setup_text(s.setup, s.generated_at))
    for r in s.runs:
        pct = "   ?" if r.progress is None else f"{r.progress * 100:3.0f}%"
        eta = fmt_eta(r.eta_seconds, r.eta_overdue_seconds)
        line = (
            f"{r.state:<9} {printable(r.name):<24} ep {epoch_text(r):>9} {pct}  "
            f"eta {eta:>6}  elapsed {fmt_duration(r.elapsed_seconds):>6}  "
            f"{best_text(r)}"
        )
        out.append(line.rstrip())
        if len(r.attempts) > 1:
            out.append(f"          {attempts_text(r)}")
        if r.error:
            out.append(f"          {r.error}")
        if r.problem:
            out.append(f"          ({r.problem})")
    if s.deep_dirs_skipped:
        out.append(deep_dirs_text(s.deep_dirs_skipped))
    if s.selected is not None:
        m = s.selected.metrics
        out.append("")
        out.append(f"selected {s.selected.run_dir}")
        for col in m.series:
            if col.name in ("train/loss", "lr/group0") or col.name == m.last.get(
                "best_metric_name"
            ):
                out.append(
                    f"  {printable(col.name):<22} last {fmt_number(col.last):>9}  "
                    f"min {fmt_number(col.min):>9}  max {fmt_number(col.max):>9}"
                )
        if m.problem:
            out.append(f"  metrics: {m.problem}")
        if m.malformed_lines:
            out.append(f"  metrics: {m.malformed_lines} malformed line(s) skipped")
        tail = s.selected.log.lines[-10:]
        if tail:
            out.append("  log:")
            out.extend(f"    {line}" for line in tail)
        elif s.selected.log.problem:
            out.append(f"  log: {s.selected.log.problem}")
    return "\n".join(_lines(out))


def attempts_text(r: RunInfo) -> str:
    """ "2 attempts: 53s (22 epochs), 17s (3 epochs)": each one's time and epochs."""
    parts = []
    for a in r.attempts:
        epochs = ""
        if a.epochs is not None:
            epochs = f" ({a.epochs} epoch{'s' if a.epochs != 1 else ''})"
        parts.append(f"{fmt_duration(a.seconds)}{epochs}")
    return f"{len(r.attempts)} attempts: " + ", ".join(parts)
