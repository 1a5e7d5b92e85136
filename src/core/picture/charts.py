"""The runs the chart view draws: what it asks for (ChartRequest) and what a refresh builds
(RunChart, in Snapshot.charts).

The app, the agent and `rgpu-tui chart` ask for a few runs (at most MAX_RUNS) and a few
metrics (at most MAX_METRICS; none: each run's default panels, by its model family).
A RunChart holds the honest series (core.run.series), the marks that need more than
the rows (saved weights/epoch_N.pt, whether best.pt is on the Hub by the run's push
records) and the run's train_config.yaml flattened (the compare table). It is built
again only when one of its inputs changed (the metrics history, the checkpoints, the
pushes, the config, the request), so an unchanged chart is the same object and the
view redraws only on a new epoch.

A refresh with no request builds nothing: the chart view closed costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..base.text import printable
from ..model.snapshot import RunChart, RunInfo, Snapshot
from ..run.checkpoints import file_epoch
from ..run.series import attempt_starts, attempts_time, honest_chart
from ..run.train_config import ConfigReader

MAX_RUNS = 6
MAX_METRICS = 16
MAX_NAME = 200  # a metric name longer than this is not asked for

# the panels a family's charts open with, from the keys libreyolo writes
METRIC_PANELS = ("metrics/precision", "metrics/recall", "metrics/mAP50", "metrics/mAP50-95")
DEFAULT_PANELS = {
    "yolo9": (
        "train/box_loss",
        "train/cls_loss",
        "train/dfl_loss",
        *METRIC_PANELS,
        "lr/group0",
    ),
    "yolox": (
        "train/iou_loss",
        "train/obj_loss",
        "train/cls_loss",
        "train/l1_loss",
        *METRIC_PANELS,
        "lr/group0",
    ),
}
# bookkeeping, not curves: never a panel of their own unless picked
NOT_CURVES = frozenset({"epoch", "time", "best_epoch", "metrics/max_det", "speed/images_seen"})


HEADLINE = "metrics/mAP50-95"  # the headline metric when the run names none
FIRST_PANELS = ("train/loss",)  # then the headline: the first page holds both


def default_panels(
    family: str | None, columns: Iterable[str], headline: str | None = None
) -> tuple[str, ...]:
    """train/loss and the headline metric (the run's best_metric_name, else mAP50-95)
    first, when the run has them; then the family's panels that the run has; for another
    family (or none of those columns): its losses (train/*_loss, else train/loss), the
    four metrics, lr/group0."""
    have = list(columns)
    known = set(have)
    first = [n for n in (*FIRST_PANELS, headline or HEADLINE) if n in known]
    panels = [n for n in DEFAULT_PANELS.get((family or "").lower(), ()) if n in known]
    if not panels:
        losses = [n for n in have if n.startswith("train/") and n.endswith("_loss")]
        if not losses and "train/loss" in known:
            losses = ["train/loss"]
        rest = [n for n in (*METRIC_PANELS, "lr/group0") if n in known]
        panels = losses + rest
    if not panels and not first:
        panels = [n for n in have if n not in NOT_CURVES][:8]
    return tuple(dict.fromkeys([*first, *panels]))


SHOWN_PREFIX = "metrics/"  # every view shows metrics/mAP50-95 as mAP50-95
NAMES_LISTED = 6  # columns named when an unknown name has no close one


def shown_metric(name: str) -> str:
    """A column's name as the views show it (`mAP50-95` for `metrics/mAP50-95`)."""
    return name.removeprefix(SHOWN_PREFIX)


def metric_candidates(asked: Iterable[str]) -> tuple[str, ...]:
    """The columns the asked names may stand for: each name itself, and the column shown
    under that name (`metrics/` + name), in the order asked."""
    out: list[str] = []
    for name in asked:
        out += [name, SHOWN_PREFIX + name] if not name.startswith(SHOWN_PREFIX) else [name]
    return tuple(dict.fromkeys(out))


def resolve_metrics(asked: Sequence[str], columns: Iterable[str]) -> tuple[tuple[str, ...], str]:
    """(the columns `asked` names, in order, each once; "" or why a name is none of them).
    A name is a column's own or the name the views show; no column at all (no rows yet):
    the names as asked. An unknown name's line offers the nearest shown name."""
    import difflib

    have = list(dict.fromkeys(columns))
    if not have:
        return tuple(dict.fromkeys(asked)), ""
    known = set(have)
    out: list[str] = []
    for name in asked:
        column = name if name in known else SHOWN_PREFIX + name
        if column in known:
            out.append(column)
            continue
        curves = [c for c in have if c not in NOT_CURVES] or have
        shown = list(dict.fromkeys(shown_metric(c) for c in curves))
        lower = {n.lower(): n for n in shown}
        near = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.6)
        if near:
            hint = f"did you mean `{printable(lower[near[0]])}`?"
        else:
            listed = ", ".join(printable(n) for n in shown[:NAMES_LISTED])
            more = ", …" if len(shown) > NAMES_LISTED else ""
            hint = f"the metrics are {listed}{more}"
        return (), f"no metric '{printable(name)}' in the runs' metrics: {hint}"
    return tuple(dict.fromkeys(out)), ""


@dataclass(frozen=True)
class ChartRequest:
    """Which runs' charts a refresh builds, and which metrics: `metrics` first, then (with
    `defaults`) each run's default panels."""

    runs: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    defaults: bool = True

    @classmethod
    def of(
        cls, runs: Iterable[str], metrics: Iterable[str] = (), defaults: bool = True
    ) -> ChartRequest:
        """Bounded: the first MAX_RUNS runs and MAX_METRICS metrics, each once."""
        runs = tuple(dict.fromkeys(r for r in runs if isinstance(r, str)))[:MAX_RUNS]
        names = (m for m in metrics if isinstance(m, str) and 0 < len(m) <= MAX_NAME)
        return cls(runs, tuple(dict.fromkeys(names))[:MAX_METRICS], bool(defaults))

    def to_json(self) -> dict:
        return {"runs": list(self.runs), "metrics": list(self.metrics), "defaults": self.defaults}

    @classmethod
    def from_json(cls, obj) -> ChartRequest:
        """From an agent command's fields; raises ValueError with one line."""
        if not isinstance(obj, dict):
            raise ValueError('"chart" must be an object with "runs" and "metrics"')
        runs, metrics = obj.get("runs", []), obj.get("metrics", [])
        defaults = obj.get("defaults", True)
        if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
            raise ValueError('"runs" must be a list of run directories')
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise ValueError('"metrics" must be a list of metric names')
        if not isinstance(defaults, bool):
            raise ValueError('"defaults" must be true or false')
        return cls.of(runs, metrics, defaults)


def best_pushed(checkpoints: Sequence, pushes) -> bool | None:
    """best.pt on the Hub by the push records: True when its last successful push is of
    the best.pt on disk now, False when it was never pushed or changed since, None when
    there is no best.pt."""
    if not any(c.name == "best.pt" and c.exists for c in checkpoints):
        return None
    return pushes is not None and pushes.best_changed is False


def saved_epochs(checkpoints: Sequence) -> tuple[int, ...]:
    """The epochs of the run's epoch_N.pt files (an N out of range is no epoch)."""
    out = []
    for c in checkpoints:
        n = file_epoch(c.name)
        if n is not None and c.exists:
            out.append(n)
    return tuple(sorted(set(out)))


class ChartBuilder:
    """RunCharts for a request, each built again only when its inputs changed."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self._built: dict[str, tuple[tuple, RunChart]] = {}
        self._configs: dict[str, ConfigReader] = {}

    def build(self, request: ChartRequest | None, runs_watcher, infos, now: float):
        """The charts of `request`'s runs that `runs_watcher` (a RunsWatcher) watches, in
        the request's order; () without a request."""
        if request is None or not request.runs:
            self._built.clear()
            self._configs.clear()
            return ()
        by_dir = {i.run_dir: i for i in infos}
        out = []
        for run_dir in request.runs:
            watcher = runs_watcher.watcher(run_dir)
            if watcher is None:
                continue
            try:
                out.append(self._chart(watcher, by_dir.get(run_dir), request, now))
            except Exception as exc:  # a reader bug: this run's chart says so
                why = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
                out.append(RunChart(run_dir=run_dir, problem=f"could not be read: {why}"))
        for gone in set(self._built) - set(request.runs):
            self._built.pop(gone, None)
            self._configs.pop(gone, None)
        return tuple(out)

    def chart(self, watcher, info: RunInfo | None, request: ChartRequest, now: float) -> RunChart:
        """One run's chart (a RunWatcher's), built again only when its inputs changed."""
        return self._chart(watcher, info, request, now)

    def _chart(self, watcher, info: RunInfo | None, request: ChartRequest, now: float):
        checkpoints, _n = watcher.checkpoints(self.settings, now)
        pushes = watcher.push_info()
        reader = self._configs.get(watcher.run_dir)
        if reader is None:
            reader = self._configs[watcher.run_dir] = ConfigReader(watcher.run_dir)
        config, config_problem = reader.read()
        family = (watcher.status.data or {}).get("model_family")
        family = family if isinstance(family, str) else None
        best = (info.best_epoch, info.best_metric, info.best_metric_name) if info else None
        metrics = (request.metrics, request.defaults)
        attempts = info.attempts if info is not None else ()
        key = (
            watcher.metrics.generation,
            metrics,
            checkpoints,
            pushes,
            config,
            best,
            family,
            attempts,
        )
        got = self._built.get(watcher.run_dir)
        if got is not None and got[0] == key:
            return got[1]
        chart = run_chart(watcher.metrics, watcher.run_dir, request, family, info)
        chart = replace(
            chart,
            saved=saved_epochs(checkpoints),
            best_pushed=best_pushed(checkpoints, pushes),
            config=config,
            config_problem=config_problem,
        )
        self._built[watcher.run_dir] = (key, chart)
        return chart


def run_chart(reader, run_dir: str, request: ChartRequest, family: str | None, info):
    """The honest series of the request's metrics and (with its defaults, or when it
    names none) the family's default panels, and the best epoch (status.json's, else the
    rows')."""
    best_epoch = info.best_epoch if info is not None else None
    best = info.best_metric if info is not None else None
    best_name = info.best_metric_name if info is not None else None
    if best_epoch is None:
        last = reader.checkpoint_rows.last_best
        if last is not None:
            best_epoch, best_name, best = last
    names = request.metrics
    if request.defaults or not names:
        names = (*names, *default_panels(family, reader.numeric_columns(), best_name))
    chart = honest_chart(reader, run_dir, names)
    starts = attempt_starts(reader.row_epochs, info.attempts) if info is not None else ()
    spent = chart.spent_seconds
    if info is not None:
        spent = attempts_time(
            chart.epochs, spent, reader.row_epochs, reader.row_seconds, info.attempts
        )
    return replace(
        chart,
        spent_seconds=spent,
        resumes=tuple(sorted(set(chart.resumes) | set(starts))),
        family=family,
        best_epoch=best_epoch,
        best_metric=best,
        best_metric_name=best_name,
    )


def charts_once(run_dirs: Sequence[str], request: ChartRequest, settings, now: float) -> list:
    """(RunInfo, RunChart) of each run directory, read once (`rgpu-tui chart`, `compare`):
    each read as `rgpu-tui snapshot RUN_DIR` reads it (its project's launch records give
    its attempts), so its time, money and state are every view's."""
    from .watch import RunsWatcher, RunWatcher

    builder = ChartBuilder(settings)
    out = []
    for run_dir in run_dirs:
        run_dir = os.path.abspath(run_dir)
        runs = RunsWatcher(run_dir, log_keep=1, settings=settings)
        try:
            info = runs.refresh(now, run_dir).run(run_dir)
            watcher = runs.watcher(run_dir)
            if watcher is None:  # not a run by its markers: read it as one all the same
                watcher = RunWatcher(run_dir, os.path.basename(run_dir.rstrip("/")) or run_dir)
                runs.adopt(watcher)
                info = watcher.poll(now)
            chart = builder.chart(watcher, info, request, now)
        finally:
            runs.close()
        out.append((info, chart))
    return out


def charts_snapshot(got: Sequence[tuple], settings, now: float) -> Snapshot:
    """What `charts_once` read as one Snapshot (its runs, their charts) with the cost of one
    look (core.picture.cost.cost_once: the settings' price; no price_command is run for a
    chart), so `rgpu-tui chart` and `compare` show their runs through the one ShownRun
    builder (core.render.chart_layout.shown_run) with the price a snapshot has."""
    from .cost import cost_once

    infos = tuple(info for info, _chart in got if info is not None)
    return Snapshot(
        generated_at=now,
        root=os.path.commonpath([c.run_dir for _i, c in got]) if got else "",
        root_exists=True,
        runs=infos,
        selected=None,
        charts=tuple(chart for _info, chart in got),
        cost=cost_once(settings, now, infos),
    )


def run_label(run_dir: str, name: str | None = None, host: str | None = None) -> str:
    """A run's name for legends and tables: its name (or folder), with its host."""
    label = printable(name or os.path.basename(run_dir.rstrip("/")) or run_dir)
    return f"{printable(host)}:{label}" if host else label
