"""Money: what the machine has cost, what the run will cost, idle money, stop vs destroy.

Pure functions of the settings and a clock passed in, plus `CostTracker`, which
remembers idle time between refreshes. Unknown inputs give None, never a guess.

The model (the seed guide's "Stop paying" section):
- spent = hours since billing started x price per hour; a run's cost is its
  elapsed time x the rate; per epoch and to finish likewise from the run's mean
  epoch time and ETA.
- stopped $/h = allocated GB x storage $/GB-month / HOURS_PER_MONTH. The seed
  writes the formula with 730 but its measured figure (8x RTX 4090, 250 GB,
  $0.20/GB-month: $0.0694/h) is 250 x 0.20 / 720 = 0.069444; / 730 would give
  $0.0685. Providers bill storage by 30-day months, so 720 it is.
- stopping saves (1 - stopped/running) of the rate; break-even = rebuild cost /
  stopped rate: coming back sooner favours stopping, later favours destroying.
- idle: no run running or starting and every GPU under 5% (GpuView.idle); without GPU
  readings, no run running; never while a training sets up (`setting_up`); counted by the
  one idle clock (core.picture.idle). Idle money
  is idle seconds seen x the rate; the banner is up once the current stretch has
  lasted idle_minutes.
- balance left = balance - (now - balance_at) x rate; it runs out at
  balance_at + balance / rate.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
from collections.abc import Iterable
from dataclasses import replace

import psutil

from ..base.config import Settings, config_file_for, env_var, flag_name
from ..base.formatting import fmt_duration, fmt_money, fmt_price, fmt_rate, iso
from ..base.text import printable
from ..base.values import TIMES
from ..model.snapshot import CostView, DiskInfo, GpuView, RunInfo, SystemView
from .idle import GAP_CAP_S, IdleClock, IdleReading, machine_idle
from .price import PriceReading, age_text, price_problem

HOURS_PER_MONTH = 720.0  # 30-day months, as the seed's measured stopped rate shows
IDLE_GAP_CAP_S = GAP_CAP_S  # one gap between samples counts at most this much idle time
LOW_BALANCE_HOURS = 1.0  # warn when the balance lasts less than this


def _finite(*values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


# -- formulas -------------------------------------------------------------------


def billed_hours(started_at: float | None, now: float) -> float | None:
    if not _finite(started_at) or started_at not in TIMES:
        return None
    return max(now - started_at, 0.0) / 3600


def cost_of(seconds: float | None, per_hour: float | None) -> float | None:
    """USD for `seconds` at `per_hour`."""
    if not _finite(seconds, per_hour):
        return None
    return max(seconds, 0.0) * per_hour / 3600


def stopped_rate(disk_gb: float | None, storage_price_gb_month: float | None) -> float | None:
    """USD per hour a stopped machine costs: its disk."""
    if not _finite(disk_gb, storage_price_gb_month):
        return None
    return disk_gb * storage_price_gb_month / HOURS_PER_MONTH


def stop_saving_percent(per_hour: float | None, stopped: float | None) -> float | None:
    """How much of the running rate stopping saves, in percent."""
    if not _finite(per_hour, stopped) or per_hour <= 0:
        return None
    return (1 - stopped / per_hour) * 100


def break_even_hours(rebuild_cost: float | None, stopped: float | None) -> float | None:
    """Hours stopped that cost as much as a rebuild. None when stopping is free (always stop)."""
    if not _finite(rebuild_cost, stopped) or stopped <= 0:
        return None
    return rebuild_cost / stopped


def balance_left(
    balance: float | None, balance_at: float | None, per_hour: float | None, now: float
) -> float | None:
    if not _finite(balance, balance_at, per_hour):
        return None
    return balance - max(now - balance_at, 0.0) * per_hour / 3600


def balance_runs_out_at(
    balance: float | None, balance_at: float | None, per_hour: float | None
) -> float | None:
    """When the balance reaches zero (epoch seconds); None if unknown, never (free) or
    beyond core.base.values.TIMES (a tiny price and a huge balance: centuries away)."""
    if not _finite(balance, balance_at, per_hour) or per_hour <= 0:
        return None
    at = balance_at + balance / per_hour * 3600
    return at if at in TIMES else None


def run_spent(run: RunInfo | None, per_hour: float | None) -> tuple[float | None, float | None]:
    """A run's time and money: (seconds, dollars). The one function every view uses (the
    header, the cost strip and view, snapshot, run_done, compare, the chart's `$`, the
    exporter, the fleet): the time is the sum of the run's attempts' seconds
    (core.records.attempts.total_seconds, put on RunInfo.elapsed_seconds by
    core.picture.run_life), start-up and epochs lost at a kill included; the money is that
    time at `per_hour` (None without a price)."""
    if run is None:
        return None, None
    seconds = run.elapsed_seconds if _finite(run.elapsed_seconds) else None
    return seconds, cost_of(seconds, per_hour)


def run_costs(
    run: RunInfo | None, per_hour: float | None
) -> tuple[float | None, float | None, float | None, float | None]:
    """(run_spent, per_epoch, to_finish, projected_total) for one run.

    to_finish is 0 for a completed run and None for one that will not finish
    (failed, dead, stopped) or whose ETA is unknown.
    """
    if run is None or not _finite(per_hour):
        return None, None, None, None
    spent = run_spent(run, per_hour)[1]
    per_epoch = cost_of(run.mean_epoch_seconds, per_hour)
    if run.state == "completed":
        to_finish = 0.0
    elif run.state in ("failed", "dead", "stopped"):
        to_finish = None
    else:
        to_finish = cost_of(run.eta_seconds, per_hour)
    total = spent + to_finish if spent is not None and to_finish is not None else None
    return spent, per_epoch, to_finish, total


def disk_gb_for(settings: Settings, system: SystemView | None) -> float | None:
    """The allocated disk: the setting, else the size of the filesystem that holds the runs."""
    if settings.disk_gb is not None:
        return settings.disk_gb
    if system is not None and system.disk is not None and system.disk.total_bytes > 0:
        return system.disk.total_bytes / 1e9
    return None


def disk_view(path: str) -> SystemView | None:
    """A SystemView with only the disk that holds `path` (or would, once created)."""
    here = os.path.abspath(path)
    while not os.path.exists(here) and os.path.dirname(here) != here:
        here = os.path.dirname(here)
    try:
        usage = shutil.disk_usage(here)
    except OSError:
        return None
    disk = DiskInfo(here, usage.total, usage.used, usage.free)
    return SystemView(None, None, None, None, None, None, None, disk)


def container_started_at() -> tuple[float, str] | None:
    """When billing most likely began: PID 1's start (the container), else boot time."""
    try:
        return float(psutil.Process(1).create_time()), "container start"
    except Exception:
        pass
    try:
        return float(psutil.boot_time()), "boot time"
    except Exception:
        return None


def billing_start(settings: Settings) -> tuple[float | None, str | None]:
    if settings.billing_started_at is not None:
        return settings.billing_started_at, "settings"
    got = container_started_at()
    return got if got is not None else (None, None)


def balance_warnings(
    runs_out_at: float | None,
    left: float | None,
    now: float,
    runs: Iterable[RunInfo],
    selected: RunInfo | None,
) -> list[str]:
    """Sentences about a balance that ends too soon (first: the most urgent)."""
    if left is None:
        return []
    if left <= 0:
        ago = f" {fmt_duration(now - runs_out_at)} ago" if runs_out_at is not None else ""
        return [
            f"Balance ran out{ago} by the settings: "
            "top up, or the machine and its runs may be lost — push checkpoints now."
        ]
    if runs_out_at is None:
        return []
    out = []
    candidates = [selected] if selected is not None else []
    candidates += [r for r in runs if r is not selected]
    for run in candidates:
        if run.state != "running" or not _finite(run.eta_seconds):
            continue
        if runs_out_at < now + run.eta_seconds:
            out.append(
                f"Balance runs out in {fmt_duration(runs_out_at - now)}, before run {run.name} "
                f"finishes (ETA {fmt_duration(run.eta_seconds)}): the run would be lost — "
                "push checkpoints now."
            )
            break
    if not out and runs_out_at - now < LOW_BALANCE_HOURS * 3600:
        out.append(
            f"Balance runs out in {fmt_duration(runs_out_at - now)}: top up or push checkpoints."
        )
    return out


# -- the tracker --------------------------------------------------------------------


class CostTracker:
    """One per app: call `sample` once a refresh; it keeps the idle time seen, by the
    one idle clock (core.picture.idle: at most `gap_cap` seconds per gap between samples, so a
    suspended laptop or a stalled refresh does not bill hours nobody watched).
    Thread-safe; `sample` never raises.
    """

    def __init__(self, settings: Settings, *, gap_cap: float = IDLE_GAP_CAP_S) -> None:
        self.settings = settings
        self.gap_cap = gap_cap
        self._billing_started_at, self._billing_source = billing_start(settings)
        self._lock = threading.Lock()
        self._idle = IdleClock(gap_cap)

    def sample(
        self,
        now: float,
        runs: Iterable[RunInfo] = (),
        selected: RunInfo | None = None,
        gpus: GpuView | None = None,
        system: SystemView | None = None,
        price: PriceReading | None = None,
        *,
        setting_up: bool = False,
    ) -> CostView:
        """`price`: price_command's last reading (core.picture.price), if it is set;
        `setting_up`: a training sets up before its status.json (busy, never idle)."""
        with self._lock:
            try:
                runs = tuple(runs or ())
                idle = self._idle.sample(now, machine_idle(runs, gpus) and not setting_up)
                return self._view(now, runs, selected, system, idle, price)
            except Exception as exc:  # never raise into the refresh worker
                detail = " ".join(f"{type(exc).__name__}: {exc}".split())
                return CostView(
                    configured=self.settings.price_per_hour is not None,
                    price_per_hour=self.settings.price_per_hour,
                    idle_minutes=self.settings.idle_minutes,
                    warnings=(f"cost unavailable: {detail}",),
                )

    def _view(
        self,
        now: float,
        runs: tuple[RunInfo, ...],
        selected: RunInfo | None,
        system,
        idle: IdleReading,
        price: PriceReading | None = None,
    ) -> CostView:
        s = self.settings
        rate, source, read_at = s.price_per_hour, s.source("price_per_hour"), None
        balance, balance_at = s.balance, s.balance_at
        if price is not None and price.price_per_hour is not None:
            rate, source, read_at = price.price_per_hour, price.source, price.read_at
            if price.balance is not None:
                balance, balance_at = price.balance, price.read_at
        problem = price_problem(price, s.price_per_hour, now)
        hours = billed_hours(self._billing_started_at, now)
        spent = hours * rate if hours is not None and rate is not None else None
        run_spent, per_epoch, to_finish, projected = run_costs(selected, rate)
        disk_gb = disk_gb_for(s, system)
        stopped = stopped_rate(disk_gb, s.storage_price_gb_month)
        stretch = idle.stretch_seconds
        left = balance_left(balance, balance_at, rate, now)
        runs_out = balance_runs_out_at(balance, balance_at, rate)
        warnings = balance_warnings(runs_out, left, now, runs, selected)
        return CostView(
            configured=rate is not None,
            price_per_hour=rate,
            billing_started_at=self._billing_started_at,
            billing_started_source=self._billing_source,
            billed_hours=hours,
            spent=spent,
            run_spent=run_spent,
            per_epoch=per_epoch,
            to_finish=to_finish,
            projected_total=projected,
            stopped_per_hour=stopped,
            break_even_hours=break_even_hours(s.rebuild_cost, stopped),
            stop_saving_percent=stop_saving_percent(rate, stopped),
            idle_seconds=idle.total_seconds,
            idle_spent=cost_of(idle.total_seconds, rate),
            idle_now_seconds=stretch,
            idle_now_spent=cost_of(stretch, rate),
            idle_minutes=s.idle_minutes,
            idle_alert=stretch is not None and stretch >= s.idle_minutes * 60,
            disk_gb=disk_gb,
            balance_left=left,
            balance_runs_out_at=runs_out,
            warnings=tuple(warnings + ([problem] if problem else [])),
            price_source=source if rate is not None else None,
            price_read_at=read_at,
            price_age_seconds=max(now - read_at, 0.0) if read_at is not None else None,
            price_problem=problem,
        )


def cost_once(
    settings: Settings,
    now: float,
    runs: Iterable[RunInfo] = (),
    selected: RunInfo | None = None,
    gpus: GpuView | None = None,
    system: SystemView | None = None,
    price: PriceReading | None = None,
    *,
    setting_up: bool = False,
) -> CostView:
    """One look (the `cost` and `snapshot` commands): idle time cannot be seen, so it is None."""
    view = CostTracker(settings).sample(
        now, runs, selected, gpus, system, price, setting_up=setting_up
    )
    return replace(
        view,
        idle_seconds=None,
        idle_spent=None,
        idle_now_seconds=None,
        idle_now_spent=None,
        idle_alert=False,
    )


# -- text (rgpu-tui cost) -----------------------------------------------------------


def price_source_text(c: CostView, lead: str = " ") -> str:
    """'(price_command (vastai), read 3 min ago)' or '(RGPU_PRICE_PER_HOUR)'; '' if unknown."""
    if c.price_source is None:
        return ""
    age = f", read {age_text(c.price_age_seconds)}" if c.price_age_seconds is not None else ""
    return f"{lead}({c.price_source}{age})"


def _hint(key: str) -> str:
    return f"{flag_name(key)}, {env_var(key)} or {key} in the config file"


def no_price_text(config_file: str) -> str:
    """config_file: the file to name (core.base.config.config_file_for)."""
    return (
        "No price set: pass --price-per-hour 3.48, set RGPU_PRICE_PER_HOUR=3.48, "
        f"or put price_per_hour = 3.48 in {config_file}."
    )


def gpus_cost_text(gpus: GpuView, per_hour: float | None) -> str:
    """'8 x RTX 4090: $0.4350/h per GPU'; simulated GPUs are named so."""
    n = len(gpus.devices)
    names = {d.name for d in gpus.devices if d.name}
    what = f"{n} x {printable(names.pop())}" if len(names) == 1 else f"{n}"
    if gpus.simulated:
        what = f"{n} simulated (--fake-gpus: not this machine's)"
    elif gpus.source == "replay":
        what += " (a GPU recording, --gpu-replay)"
    rate = per_hour / n if per_hour is not None else None
    return f"{what}: {fmt_rate(rate)} per GPU"


def cost_to_text(
    c: CostView,
    settings: Settings,
    now: float,
    disk_gb: float | None = None,
    run: RunInfo | None = None,
    gpus: GpuView | None = None,
) -> str:
    """A few aligned lines: the calculator and the bill so far. disk_gb: the disk the
    stopped rate is for (default: the CostView's); gpus: the machine's GPUs (the price per
    GPU-hour; simulated ones are said to be)."""
    if disk_gb is None:
        disk_gb = c.disk_gb
    if not c.configured:
        text = no_price_text(config_file_for(settings))
        return f"{text}\n! {printable(c.price_problem)}" if c.price_problem else text
    rows: list[tuple[str, str]] = []
    rows.append(("running", fmt_rate(c.price_per_hour) + price_source_text(c, "  ")))
    if gpus is not None and gpus.available and gpus.devices:
        rows.append(("GPUs", gpus_cost_text(gpus, c.price_per_hour)))
    if c.billed_hours is not None and c.billing_started_at is not None:
        rows.append(
            (
                "spent so far",
                f"{fmt_money(c.spent)}  ({c.billed_hours:.1f} h since {iso(c.billing_started_at)}, "
                f"{c.billing_started_source})",
            )
        )
    else:
        rows.append(("spent so far", "? (billing start unknown: set billing_started_at)"))
    if run is not None and c.run_spent is not None:
        parts = [f"{fmt_money(c.run_spent)} so far"]
        if c.per_epoch is not None:
            parts.append(fmt_price(c.per_epoch, "epoch"))
        if c.to_finish is not None:
            parts.append(f"{fmt_money(c.to_finish)} to finish")
        if c.projected_total is not None:
            parts.append(f"{fmt_money(c.projected_total)} in all")
        rows.append((f"run {printable(run.name)}", ", ".join(parts)))
    if c.stopped_per_hour is not None:
        basis = ""
        if disk_gb is not None and settings.storage_price_gb_month is not None:
            basis = (
                f"  ({disk_gb:.0f} GB x ${settings.storage_price_gb_month:.2f}/GB-month"
                f" / {HOURS_PER_MONTH:.0f} h)"
            )
        rows.append(("stopped", fmt_rate(c.stopped_per_hour) + basis))
        if c.stop_saving_percent is not None:
            rows.append(("saving", f"{c.stop_saving_percent:.1f}% while stopped"))
        if c.break_even_hours is not None:
            rows.append(
                (
                    "break-even",
                    f"{c.break_even_hours:.1f} h  (rebuild {fmt_money(settings.rebuild_cost)}: "
                    f"back within {c.break_even_hours:.1f} h, stop; longer, destroy)",
                )
            )
        elif settings.rebuild_cost is None:
            rows.append(("break-even", f"? (set rebuild_cost: {_hint('rebuild_cost')})"))
    else:
        missing = "storage_price_gb_month" if disk_gb is not None else "disk_gb"
        rows.append(("stopped", f"? (set {missing}: {_hint(missing)})"))
    if c.balance_left is not None:
        text = f"{fmt_money(c.balance_left)} left"
        if c.balance_runs_out_at is not None and c.balance_left > 0:
            text += (
                f", runs out in {fmt_duration(c.balance_runs_out_at - now)} "
                f"({iso(c.balance_runs_out_at)})"
            )
        rows.append(("balance", text))
    else:
        rows.append(("balance", f"? (set balance: {_hint('balance')})"))
    width = max(len(label) for label, _ in rows) + 2
    out = [f"{label:<{width}}{value}" for label, value in rows]
    out.extend(f"! {w}" for w in c.warnings)
    return "\n".join(printable(line) for line in out)  # run names, paths, errors: inert
