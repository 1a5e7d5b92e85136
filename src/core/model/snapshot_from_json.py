"""The Snapshot back from its JSON (core.model.snapshot_json, beside it): what a remote host's
agent sends (core.fleet.agent, core.fleet.fleet) becomes the dataclasses the app's panes take.
The codec in both directions lives here, next to the dataclasses; what a host's document
cannot be trusted with is the fleet's (core.fleet.host_ranges.host_snapshot: the numbers
held to the local readers' ranges, the derived fields derived again by the local rules).

`snapshot_from_json(doc)` is the inverse of `snapshot_to_json` for everything the JSON
keeps. What the JSON does not keep comes back as follows:

- times written as ISO text (`generated_at`, the cost's `billing_started_at` and
  `balance_runs_out_at`, the pushes' `last_ok_at`, an attempt's `started_at` and
  `ended_at`: any number field given as text is read as an ISO time) come back in whole
  seconds;
- RunInfo: `activity` is 0.0 (the list keeps its order, newest first), `started_at` is
  None, `updated` is status.json's `updated_at` text parsed as the run reader parses it;
- NaN and infinities were written as null: they come back as None;
- the selected run: the log keeps its last LOG_TAIL_LEN lines (the app keeps 500), its
  path is `log_path` (older agents: the run directory); `checkpoints_not_listed` is 0
  and `artifacts_target` None (a remote `P` lists checkpoints only); `push_default` is
  the dataclass's default here (core.fleet.host_ranges derives it from the checkpoints as
  the refresh derives it); a checkpoint's target keeps its repo, path and folder, and its
  one `hub_problem` comes back as its `path_problem` (host_ranges tells a repo problem
  from it by the repo, as every dialog shows the repo problem first).

The document comes over the network from another machine: every field is checked
against its dataclass annotation. A value of the wrong type becomes None (or the field's
default); only a document without what a Snapshot cannot do without (`generated_at`,
`root`, `runs`) raises SnapshotJsonError. Never anything else.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing

from ..base.values import INT64_MAX, parse_time
from .snapshot import (
    Checkpoint,
    CostView,
    GpuView,
    LogView,
    MetricColumn,
    MetricsView,
    PushInfo,
    PushTarget,
    RunInfo,
    SelectedRun,
    Snapshot,
    SystemView,
)

FLOAT_LIMIT = 1e300  # an int this large would overflow a float in a format


class SnapshotJsonError(ValueError):
    """The document is not a Snapshot; str(error) is one line."""


class _Bad(Exception):
    pass


_HINTS: dict[type, dict[str, object]] = {}


def _hints(cls: type) -> dict[str, object]:
    got = _HINTS.get(cls)
    if got is None:
        got = _HINTS[cls] = typing.get_type_hints(cls)
    return got


def _check(value, hint):
    """`value` if it fits `hint` (a dataclass annotation), converted (a list to a tuple,
    a dict to a dataclass); raises _Bad otherwise."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None:
            if type(None) in args:
                return None
            raise _Bad
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _check(value, arg)
            except _Bad:
                continue
        raise _Bad
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, (list, tuple)):
            raise _Bad
        if len(args) == 2 and args[1] is Ellipsis:
            items = (_element(v, args[0]) for v in value)
            return tuple(v for v in items if v is not _DROP)
        if len(value) != len(args):
            raise _Bad
        return tuple(_check(v, a) for v, a in zip(value, args, strict=True))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise _Bad
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise _Bad
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > INT64_MAX:
            raise _Bad
        return value
    if hint is float:  # an int stays an int (the dataclass held one): it formats the same
        if isinstance(value, str):  # a time: the JSON writes every one as ISO text
            ts = parse_time(value)
            if ts is None:
                raise _Bad
            return ts
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Bad
        if isinstance(value, float) and not math.isfinite(value):
            raise _Bad
        if isinstance(value, int) and abs(value) > FLOAT_LIMIT:
            raise _Bad
        return value
    if hint is str:
        if not isinstance(value, str):
            raise _Bad
        return value
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise _Bad
        return _build(hint, value)
    raise _Bad  # a type the Snapshot does not use


_DROP = object()


def _element(value, hint):
    """One element of a tuple: a bad one is None where None fits, else it is dropped."""
    try:
        return _check(value, hint)
    except _Bad:
        return None if _optional(hint) else _DROP


def _optional(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    )


def _build(cls, obj: dict, **given):
    """A `cls` from the JSON object's keys of the same names (unknown keys ignored);
    `given` fields are set as they are. A bad or missing field is None where None fits,
    else its default, else () for a list; any other raises _Bad."""
    hints = _hints(cls)
    kwargs = dict(given)
    for f in dataclasses.fields(cls):
        if f.name in given:
            continue
        hint = hints[f.name]
        if f.name in obj:
            try:
                kwargs[f.name] = _check(obj[f.name], hint)
                continue
            except _Bad:
                pass
        if f.default is not dataclasses.MISSING:
            kwargs[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            kwargs[f.name] = f.default_factory()
        elif _optional(hint):
            kwargs[f.name] = None
        elif typing.get_origin(hint) is tuple and typing.get_args(hint)[-1] is Ellipsis:
            kwargs[f.name] = ()
        else:
            raise _Bad
    return cls(**kwargs)


def _obj(value) -> dict:
    return value if isinstance(value, dict) else {}


def _time(value) -> float | None:
    return parse_time(value)


# -- the parts ---------------------------------------------------------------------


def run_from_json(obj: dict) -> RunInfo:
    updated_at = obj.get("updated_at") if isinstance(obj.get("updated_at"), str) else None
    return _build(
        RunInfo,
        obj,
        activity=0.0,
        started_at=None,
        updated=_time(updated_at),
    )


def gpus_from_json(obj: dict) -> GpuView:
    return _build(GpuView, obj)


def system_from_json(obj: dict) -> SystemView:
    return _build(SystemView, obj)


def cost_from_json(obj: dict) -> CostView:
    return _build(CostView, obj)  # billing_started_at, balance_runs_out_at: ISO text


def pushes_from_json(obj: dict) -> PushInfo:
    return _build(PushInfo, obj)  # last_ok_at: ISO text


def metrics_from_json(obj: dict) -> MetricsView:
    series = _obj(obj.get("series"))
    stats = _obj(obj.get("stats"))
    columns = []
    for name, values in series.items():
        try:
            columns.append(
                _build(
                    MetricColumn,
                    {**_obj(stats.get(name)), "values": values},
                    name=name,
                )
            )
        except _Bad:
            continue
    return _build(MetricsView, obj, series=tuple(columns))


def checkpoint_from_json(obj: dict) -> Checkpoint:
    repo = obj.get("hub_repo") if isinstance(obj.get("hub_repo"), str) else ""
    path = obj.get("hub_path") if isinstance(obj.get("hub_path"), str) else None
    problem = obj.get("hub_problem") if isinstance(obj.get("hub_problem"), str) else None
    target = PushTarget(
        repo=repo,
        path=path,
        folder=path.rpartition("/")[0] if path else "",
        path_problem=problem,  # which problem it is: core.fleet.host_ranges
    )
    return _build(Checkpoint, obj, target=target)


def selected_from_json(obj: dict, pushes: dict | None) -> SelectedRun:
    run_dir = obj.get("run_dir")
    if not isinstance(run_dir, str):
        raise _Bad
    log_path = obj.get("log_path")
    log_lines = obj.get("log_tail")
    log = LogView(
        path=log_path if isinstance(log_path, str) else run_dir,
        lines=tuple(x for x in log_lines if isinstance(x, str))
        if isinstance(log_lines, list)
        else (),
        problem=obj.get("log_problem") if isinstance(obj.get("log_problem"), str) else None,
    )
    checkpoints = []
    items = obj.get("checkpoints")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict):
            try:
                checkpoints.append(checkpoint_from_json(item))
            except _Bad:
                continue
    push_info = None
    if isinstance(pushes, dict) and pushes.get("run_dir") in (None, run_dir):
        push_info = pushes_from_json(pushes)
    return SelectedRun(
        run_dir=run_dir,
        metrics=metrics_from_json(_obj(obj.get("metrics"))),
        log=log,
        pushes=push_info,
        checkpoints=tuple(checkpoints),
    )


_READ_ABOVE = frozenset(
    {
        "generated_at", "root", "root_exists", "runs", "selected", "problem", "gpus",
        "system", "cost", "schema_version", "deep_dirs_skipped",
    }
)  # fmt: skip


def snapshot_from_json(doc) -> Snapshot:
    """The Snapshot a `snapshot_to_json` document describes (see the module doc for what
    JSON does not keep). Raises SnapshotJsonError, one line, when it is not one."""
    if not isinstance(doc, dict):
        raise SnapshotJsonError("a snapshot must be a JSON object")
    generated_at = _time(doc.get("generated_at"))
    if generated_at is None:
        raise SnapshotJsonError("the snapshot has no usable generated_at")
    root = doc.get("root")
    if not isinstance(root, str):
        raise SnapshotJsonError("the snapshot has no root")
    if not isinstance(doc.get("runs"), list):
        raise SnapshotJsonError("the snapshot has no list of runs")
    runs = []
    for item in doc["runs"]:
        if isinstance(item, dict):
            try:
                runs.append(run_from_json(item))
            except _Bad:  # a run without run_dir, name or state: left out
                continue
    selected = None
    if isinstance(doc.get("selected"), dict):
        try:
            selected = selected_from_json(doc["selected"], doc.get("pushes"))
        except _Bad:
            selected = None

    def part(key: str, convert):
        value = doc.get(key)
        if not isinstance(value, dict):
            return None
        try:
            return convert(value)
        except _Bad:
            return None

    schema = doc.get("schema_version")
    deep = doc.get("deep_dirs_skipped")
    # any other part a Snapshot has (the autostop plan, the charts), by its annotation
    hints = _hints(Snapshot)
    more = {}
    for f in dataclasses.fields(Snapshot):
        if f.name not in _READ_ABOVE and isinstance(doc.get(f.name), (dict, list)):
            try:
                more[f.name] = _check(doc[f.name], hints[f.name])
            except _Bad:
                continue
    return Snapshot(
        **more,
        generated_at=generated_at,
        root=root,
        root_exists=doc.get("root_exists") is True,
        runs=tuple(runs),
        selected=selected,
        problem=doc.get("problem") if isinstance(doc.get("problem"), str) else None,
        gpus=part("gpus", gpus_from_json),
        system=part("system", system_from_json),
        cost=part("cost", cost_from_json),
        schema_version=schema if type(schema) is int else 0,
        deep_dirs_skipped=deep if type(deep) is int and deep >= 0 else 0,
    )


def dataclass_from_json(cls, obj):
    """Any frozen dataclass of core (a ResumePlan, a StopResult) from a JSON object, each
    field checked against its annotation as above; raises SnapshotJsonError when a field
    it cannot do without is missing or bad."""
    if not isinstance(obj, dict):
        raise SnapshotJsonError(f"{cls.__name__} must be a JSON object")
    try:
        return _build(cls, obj)
    except _Bad:
        raise SnapshotJsonError(f"{cls.__name__} is missing a field or has a bad one") from None
