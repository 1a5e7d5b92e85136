"""Values out of every range in run files and settings: each becomes "unknown" for its field
and a problem line for its run, or a one-line ConfigError; never an exception out of a
reader, a refresh or the cost."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from rgpu_tui.core.base import values
from rgpu_tui.core.base.config import ConfigError, Settings, load_settings
from rgpu_tui.core.model.snapshot_json import snapshot_to_json
from rgpu_tui.core.picture.cost import balance_runs_out_at, cost_once, cost_to_text
from rgpu_tui.core.picture.watch import RunsWatcher
from rgpu_tui.core.records.records import read_json_lines
from rgpu_tui.core.render.snapshot_text import snapshot_to_text
from rgpu_tui.core.run.metrics import MetricsReader
from rgpu_tui.core.run.status import StatusReader, check_pid

BIG = 10**400  # json.loads and tomllib read it as an int; float() of it overflows
DEEP = "[" * 1000 + "]" * 1000  # json.loads raises RecursionError
MAP = "metrics/mAP50-95"


# -- core.base.values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, (3, False)),
        (3.9, (3, False)),
        (None, (None, False)),
        ("3", (None, False)),
        (True, (None, False)),
        (-5, (None, True)),
        (1e30, (None, True)),
        (2**63, (None, True)),
        (BIG, (None, True)),
        (-BIG, (None, True)),
        (math.inf, (None, True)),
        (math.nan, (None, True)),
    ],
    ids=["3", "3.9", "None", "str", "bool", "-5", "1e30", "2**63", "big", "-big", "inf", "nan"],
)
def test_checked_epochs(value, expected) -> None:
    assert values.checked(value, values.EPOCHS, integer=True) == expected


def test_num_and_int_or_none_never_raise() -> None:
    assert values.num(BIG) is None
    assert values.num(-BIG) is None
    assert values.num(2.5) == 2.5
    assert values.int_or_none(BIG) is None
    assert values.int_or_none(1e30) is None
    assert values.int_or_none(2**63 - 1) == 2**63 - 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-07-31T10:00:00+00:00", (1785492000.0, False)),
        ("2026-07-31T10:00:00Z", (1785492000.0, False)),
        ("0001-01-01T00:00:00", (None, True)),  # naive: timestamp() raises in local time
        ("0001-01-01T00:00:00+00:00", (None, True)),
        ("9999-12-31T23:59:59+00:00", (None, True)),
        ("yesterday", (None, False)),
        (1785492000, (None, False)),
    ],
)
def test_checked_time(text, expected) -> None:
    assert values.checked_time(text) == expected


def test_parse_json_refuses_deep_nesting_with_a_value_error() -> None:
    for doc in (DEEP, "[" * 40 + "]" * 40, '{"a": ' * 40 + "1" + "}" * 40):
        with pytest.raises(ValueError, match="nested too deep"):
            values.parse_json(doc)
    flat = {"epoch": 1, "note": "[[[[{{{{" * 20, "error": {"type": "E", "message": "m"}}
    assert values.parse_json(json.dumps(flat).encode()) == flat
    with pytest.raises(ValueError):
        values.parse_json(b'{"epoch": 1, "train/lo')


def test_shown_cuts_a_huge_number() -> None:
    assert values.shown(BIG) == "401-digit number"
    assert values.shown(-5) == "-5"
    assert values.shown("0001-01-01T00:00:00") == "0001-01-01T00:00:00"
    assert len(values.shown("x" * 100)) == 24


# -- status.json --------------------------------------------------------------------------


def run_with_status(root: Path, name: str, doc, rows: list[dict] | None = None) -> Path:
    run = root / name
    run.mkdir(parents=True)
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (run / "status.json").write_text(text)
    if rows is not None:
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_status_json_nested_1000_deep(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text(DEEP)
    reader = StatusReader(str(path))
    reader.poll()
    assert (reader.data, reader.problem) == (
        None,
        "status.json is not usable JSON (nested too deep)",
    )


def test_every_odd_status_value_is_unknown_and_named(tmp_path: Path) -> None:
    """One status.json with a value out of range in every numeric field: the refresh
    succeeds, each field is unknown, and the run's problem names each field."""
    doc = {
        "state": "completed",
        "pid": 2**63,
        "started_at": "0001-01-01T00:00:00",
        "updated_at": "9999-12-31T23:59:59+00:00",
        "total_epochs": BIG,
        "completed_epochs": -5,
        "current_epoch": 1e30,
        "start_epoch": math.inf,
        "best_epoch": -1,
        "mean_epoch_seconds": 1e300,
        "elapsed_seconds": -3.0,
        "best_metric": BIG,
    }
    run = run_with_status(tmp_path, "odd", doc)
    snap = RunsWatcher(str(run)).refresh(time.time())
    r = snap.runs[0]
    assert r.state == "completed"
    unknown = (
        r.pid,
        r.total_epochs,
        r.current_epoch,
        r.progress,
        r.elapsed_seconds,
        r.mean_epoch_seconds,
        r.best_metric,
        r.best_epoch,
        r.updated_at,
    )
    assert unknown == (None,) * len(unknown)
    assert r.problem == (
        "status.json: pid out of range (9223372036854775808), total_epochs out of range "
        "(401-digit number), completed_epochs out of range (-5), current_epoch out of range "
        "(1e+30), start_epoch out of range (inf), best_epoch out of range (-1), "
        "mean_epoch_seconds out of range (1e+300), elapsed_seconds out of range (-3.0), "
        "best_metric out of range (401-digit number), started_at out of range "
        "(0001-01-01T00:00:00), updated_at out of range (9999-12-31T23:59:59+00:…)"
    )
    json.dumps(snapshot_to_json(snap), allow_nan=False)  # the JSON output holds
    assert "status.json: pid out of range" in snapshot_to_text(snap)


SLEEP = "import time; time.sleep(30)"


def test_running_with_year_1_started_at(tmp_path: Path) -> None:
    """started_at in year 1 made `snapshot`, `cost` and the app fail ("year 0 is out of
    range"); now the elapsed time is unknown and the run says why."""
    # a trainer whose command line names the run (core.run.run_process)
    trainer = subprocess.Popen([sys.executable, "-c", SLEEP, str(tmp_path / "r")])
    try:
        run = run_with_status(
            tmp_path,
            "r",
            {
                "state": "running",
                "pid": trainer.pid,  # alive; with no usable started_at it cannot be told apart
                "started_at": "0001-01-01T00:00:00",
                "total_epochs": 10,
            },
        )
        r = RunsWatcher(str(run)).refresh(time.time()).runs[0]
    finally:
        trainer.kill()
        trainer.wait()
    assert (r.state, r.elapsed_seconds) == ("running", None)
    assert r.problem == "status.json: started_at out of range (0001-01-01T00:00:00)"


def test_negative_epochs_never_make_a_negative_progress(tmp_path: Path) -> None:
    """completed_epochs -5 of 100 showed "-5%": now the epoch count is unknown (no
    progress rather than a negative one) and the run says the value is odd; a negative
    epoch in the metrics history counts as missing."""
    run = run_with_status(
        tmp_path,
        "neg",
        {"state": "running", "pid": 1, "total_epochs": 100, "completed_epochs": -5},
        rows=[{"epoch": -5, "train/loss": 1.0}],
    )
    snap = RunsWatcher(str(run)).refresh(time.time())
    r = snap.runs[0]
    assert r.progress == 0.01  # the one metrics row counts as epoch 1 (of 100)
    assert r.problem == (
        "status.json: completed_epochs out of range (-5); metrics.jsonl: 1 epoch out of range"
    )
    assert "-5%" not in snapshot_to_text(snap)


def test_progress_is_clamped_to_0_100(tmp_path: Path) -> None:
    run = run_with_status(
        tmp_path, "over", {"state": "completed", "total_epochs": 10, "completed_epochs": 50}
    )
    assert RunsWatcher(str(run)).refresh(time.time()).runs[0].progress == 1.0


def test_check_pid_refuses_a_pid_out_of_range() -> None:
    assert check_pid(2**63, None).reason == "no pid in status.json"
    assert check_pid(BIG, None).reason == "no pid in status.json"


# -- metrics.jsonl / results.csv --------------------------------------------------------


def metrics_reader(tmp_path: Path, lines: list[str], name: str = "metrics.jsonl"):
    (tmp_path / name).write_text("".join(line + "\n" for line in lines))
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    return reader


@pytest.mark.parametrize(
    "epoch",
    ["1e30", str(2**63), "9" * 400, "-5", "NaN", "Infinity"],
    ids=["1e30", "2**63", "400-digits", "-5", "NaN", "Infinity"],
)
def test_metrics_epoch_out_of_range_counts_as_missing(tmp_path: Path, epoch: str) -> None:
    reader = metrics_reader(
        tmp_path,
        ['{"epoch": 1, "train/loss": 3.0}', f'{{"epoch": {epoch}, "train/loss": 2.0}}'],
    )
    assert reader.last_epoch == 2  # the previous epoch + 1
    assert reader.odd_epochs == 1
    assert reader.series("train/loss") == (3.0, 2.0)
    assert reader.value_problem() == "1 epoch out of range"


def test_infinity_in_a_metric_does_not_hide_the_best(tmp_path: Path) -> None:
    """An infinite mAP made the column's max "-" for the rest of the run and hid the real
    best: non-finite values are gaps, skipped by the stats, and counted."""
    reader = metrics_reader(
        tmp_path,
        [
            f'{{"epoch": 1, "{MAP}": 0.5, "train/loss": 3.0}}',
            f'{{"epoch": 2, "{MAP}": Infinity, "train/loss": NaN}}',
            f'{{"epoch": 3, "{MAP}": 0.6, "train/loss": -Infinity}}',
            f'{{"epoch": 4, "{MAP}": 0.55, "train/loss": {"9" * 400}}}',
        ],
    )
    stats = reader.stats()[MAP]
    assert (stats.last, stats.min, stats.max, stats.best, stats.best_epoch) == (
        0.55,
        0.5,
        0.6,
        0.6,
        3,
    )
    loss = reader.stats()["train/loss"]
    assert (loss.last, loss.min, loss.max, loss.best) == (3.0, 3.0, 3.0, 3.0)
    assert reader.series(MAP) == (0.5, None, 0.6, 0.55)
    assert reader.non_finite == {MAP: 1, "train/loss": 3}
    assert reader.value_problem() == "4 non-finite values skipped (metrics/mAP50-95, train/loss)"


def test_non_finite_values_reach_the_run_problem_and_the_metrics_view(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "metrics.jsonl").write_text(
        f'{{"epoch": 1, "{MAP}": 0.5}}\n{{"epoch": 2, "{MAP}": Infinity}}\n'
    )
    snap = RunsWatcher(str(run)).refresh(time.time())
    assert snap.runs[0].problem == "metrics.jsonl: 1 non-finite value skipped (metrics/mAP50-95)"
    assert snap.selected.metrics.non_finite_values == 1
    assert snap.selected.metrics.column(MAP).max == 0.5
    out = snapshot_to_json(snap)["selected"]["metrics"]
    assert (out["non_finite_values"], out["stats"][MAP]["max"]) == (1, 0.5)


def test_resume_recomputes_stats_without_the_infinite_value(tmp_path: Path) -> None:
    reader = metrics_reader(
        tmp_path,
        [f'{{"epoch": 1, "{MAP}": 0.5}}', f'{{"epoch": 2, "{MAP}": Infinity}}'],
    )
    with open(tmp_path / "metrics.jsonl", "a") as f:  # resumed from epoch 2
        f.write(f'{{"epoch": 2, "{MAP}": 0.7}}\n')
    reader.poll()
    assert reader.stats()[MAP].max == 0.7


def test_metrics_line_nested_1000_deep_is_malformed(tmp_path: Path) -> None:
    reader = metrics_reader(tmp_path, [f'{{"epoch": 1, "x": {DEEP}}}', '{"epoch": 2, "a": 1.0}'])
    assert (reader.malformed, reader.row_count, reader.last_epoch) == (1, 1, 2)


def test_results_csv_with_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_bytes(b"\xef\xbb\xbfepoch,train/loss\n1,0.5\n2,0.4\n")
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert reader.columns == ["epoch", "train/loss"]
    assert reader.last_epoch == 2


def test_results_csv_with_huge_and_infinite_values(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text(f"epoch,loss\n1,0.5\n{'9' * 400},inf\n3,{'9' * 400}\n")
    reader = MetricsReader(str(tmp_path))
    reader.poll()
    assert (reader.last_epoch, reader.odd_epochs, reader.non_finite) == (3, 1, {"loss": 2})
    assert reader.stats()["loss"].max == 0.5


# -- records ------------------------------------------------------------------------------


def test_record_line_nested_1000_deep_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "pushes.jsonl"
    path.write_text(f'{{"outcome": "ok"}}\n{{"x": {DEEP}}}\n{{"outcome": "error"}}\n')
    assert read_json_lines(str(path)) == [{"outcome": "ok"}, {"outcome": "error"}]


def test_odd_push_record_values_are_unknown(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "status.json").write_text('{"state": "completed"}')
    (run / ".rgpu").mkdir()
    record = {
        "outcome": "ok",
        "file": "best.pt",
        "epoch": BIG,
        "time": "0001-01-01T00:00:00",
        "size": BIG,
    }
    (run / ".rgpu" / "pushes.jsonl").write_text(json.dumps(record) + "\n")
    pushes = RunsWatcher(str(run)).refresh(time.time()).selected.pushes
    assert (pushes.last_ok_file, pushes.last_ok_epoch, pushes.last_ok_at) == ("best.pt", None, None)


# -- settings ---------------------------------------------------------------------------------


def config_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(str(path), environ={})
    message = str(err.value)
    assert "\n" not in message
    return message.removeprefix(f"{path} ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"price_per_hour = {'9' * 400}", "line 1: price_per_hour must be at most 100,000"),
        (f"balance = -{'9' * 400}", "line 1: balance must be at least -1,000,000,000"),
        (f"disk_gb = {'9' * 400}", "line 1: disk_gb must be at most 10,000,000"),
        ("price_per_hour = 1e400", "line 1: price_per_hour must be a finite number"),
        ("storage_price_gb_month = 5000", "line 1: storage_price_gb_month must be at most 1,000"),
        ("idle_minutes = 1e9", "line 1: idle_minutes must be at most 525,600"),
        ("stop_term_after = 1e9", "line 1: stop_term_after must be at most 86,400"),
        ("rebuild_cost = 1e12", "line 1: rebuild_cost must be at most 1,000,000,000"),
        ("billing_started_at = 0001-01-01T00:00:00", "line 1: billing_started_at must be a time"),
        ('billing_started_at = "0001-01-01T00:00:00Z"', "line 1: billing_started_at must be a"),
        (f"billing_started_at = {'9' * 400}", "line 1: billing_started_at must be a finite"),
        ("balance_at = 1700000000000", "line 1: balance_at looks like epoch milliseconds"),
    ],
    ids=lambda v: v.split(" =")[0] + ("-huge" if "9" * 50 in v else "") if "=" in v else None,
)
def test_config_values_out_of_range(tmp_path: Path, text: str, message: str) -> None:
    assert config_error(tmp_path, text + "\n").startswith(message)


def test_config_number_too_long_to_read(tmp_path: Path) -> None:
    """5000 digits: tomllib's int() raises a plain ValueError (the 4300-digit limit), which
    escaped as a traceback."""
    message = config_error(tmp_path, f"price_per_hour = {'9' * 5000}\n")
    assert message == f"{tmp_path / 'config.toml'}: holds a number too long to read"


def test_env_and_flags_out_of_range() -> None:
    with pytest.raises(ConfigError, match=r"^RGPU_BILLING_STARTED_AT: billing_started_at looks "):
        load_settings(None, environ={"RGPU_BILLING_STARTED_AT": "1700000000000", "HOME": "/n"})
    with pytest.raises(ConfigError, match=r"^--balance: balance must be at most 1,000,000,000"):
        load_settings(None, environ={"HOME": "/n"}, flags={"balance": "1e12"})
    with pytest.raises(ConfigError, match=r"^--price-per-hour: price_per_hour must be a finite"):
        load_settings(None, environ={"HOME": "/n"}, flags={"price_per_hour": "nan"})
    ok = load_settings(
        None,
        environ={"HOME": "/n", "RGPU_BILLING_STARTED_AT": "1700000000"},
        flags={"price_per_hour": "0.0001", "balance": "1e9"},
    )
    assert (ok.billing_started_at, ok.price_per_hour, ok.balance) == (1.7e9, 0.0001, 1e9)


# -- cost ---------------------------------------------------------------------------------


def test_tiny_price_and_huge_balance_never_overflow() -> None:
    """--price-per-hour 0.0001 --balance 1e9 (the largest balance allowed): the balance
    would last 4 million years; the `c` view crashed formatting that date."""
    now = datetime(2026, 7, 31).timestamp()
    assert balance_runs_out_at(1e9, now, 0.0001) is None  # past 2200: not a date we show
    assert balance_runs_out_at(-1e9, now, 0.0001) is None
    settings = Settings(price_per_hour=0.0001, balance=1e9, balance_at=now, billing_started_at=now)
    view = cost_once(settings, now + 3600)
    assert view.balance_left == pytest.approx(1e9)
    text = cost_to_text(view, settings, now + 3600)
    assert "balance       $1,000,000,000.00 left\n" in text + "\n"

    broke = Settings(price_per_hour=0.0001, balance=-1e9, balance_at=now, billing_started_at=now)
    view = cost_once(broke, now)
    assert view.warnings[0].startswith("Balance ran out by the settings: top up")
    cost_to_text(view, broke, now)


def test_a_launch_record_with_a_400_digit_time_is_skipped(tmp_path) -> None:
    """float() of a 400-digit integer raises OverflowError: the record is skipped, the
    others are read."""
    from rgpu_tui.core.records.launch_records import launches_path, read_launches

    good = {
        "kind": "launch",
        "id": "a1",
        "time": 1_700_000_000.0,
        "pid": 4321,
        "project": str(tmp_path),
        "console_log": str(tmp_path / "c.log"),
    }
    path = launches_path(str(tmp_path))
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(json.dumps({**good, "id": "bad", "time": int("9" * 400)}) + "\n")
        f.write(json.dumps(good) + "\n")
    assert [r.id for r in read_launches(str(tmp_path))] == ["a1"]


def test_a_profile_summary_nested_too_deep_gives_no_verdict(tmp_path) -> None:
    from rgpu_tui.core.machine.gpu import read_profile_verdict

    (tmp_path / "profile_summary.json").write_text("[" * 1000 + "]" * 1000)
    assert read_profile_verdict(str(tmp_path)) is None
    (tmp_path / "profile_summary.json").write_text('{"bound": "dataloader"}')
    assert (
        read_profile_verdict(str(tmp_path)) == "GPU starved — profiler verdict: data-loader bound"
    )
