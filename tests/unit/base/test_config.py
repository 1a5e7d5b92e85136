"""Settings: the TOML file < RGPU_* environment < flags, and one-line errors."""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rgpu_tui.cli.options import add_settings_flags, settings_from_args
from rgpu_tui.core.base.config import (
    SETTING_KEYS,
    ConfigError,
    Settings,
    default_config_path,
    load_settings,
)

NOW = 1_800_000_000.0


def write_config(home: Path, text: str, mtime: float | None = None) -> Path:
    path = home / ".config" / "rgpu-tui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def load(home: Path, env: dict | None = None, flags: dict | None = None, **kw) -> Settings:
    environ = {"HOME": str(home), **(env or {})}
    return load_settings(environ=environ, flags=flags, now=NOW, **kw)


def error_of(home: Path, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        load(home, **kw)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- where the file is ---------------------------------------------------------------


def test_default_path_uses_xdg_config_home_then_home(tmp_path: Path) -> None:
    xdg = str(tmp_path / "xdg")
    assert default_config_path({"XDG_CONFIG_HOME": xdg, "HOME": "/h"}) == (
        f"{xdg}/rgpu-tui/config.toml"
    )
    assert default_config_path({"HOME": "/h"}) == "/h/.config/rgpu-tui/config.toml"
    # a relative XDG_CONFIG_HOME is ignored, as the XDG spec says
    assert default_config_path({"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == (
        "/h/.config/rgpu-tui/config.toml"
    )


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    # nothing set anywhere (RGPU_FAKE_GPUS is not a setting): every key keeps its default and
    # comes from nowhere. What each default does is tested where it acts: idle_minutes in
    # tui/test_cost.py (the banner after 10 idle minutes), stop_term_after/stop_kill_after in
    # unit/test_launch_unit.py (SIGTERM at 30 s, SIGKILL at 60 s), model there too (the
    # launched argv), hub_path and auto_push in e2e/test_hub_push.py, no price in tui/test_cost.py.
    s = load(tmp_path, env={"RGPU_FAKE_GPUS": "2"})
    assert s == Settings()
    assert s.config_path is None and s.sources == ()


def test_the_file_under_xdg_config_home_is_read(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "rgpu-tui" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("price_per_hour = 2.5\n")
    s = load_settings(environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, now=NOW)
    assert s.price_per_hour == 2.5 and s.config_path == str(path)


def test_every_key_from_the_file_with_its_line(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "# my machine\n"
        "price_per_hour = 3.4828\n"
        "disk_gb = 250\n"
        'storage_price_gb_month = "0.20"\n'
        "rebuild_cost = 1\n"
        "balance = 12.5\n"
        "balance_at = 2027-01-15T08:00:00Z\n"
        'billing_started_at = "2027-01-15T09:30:00+01:00"\n'
        "idle_minutes = 15\n",
    )
    s = load(tmp_path)
    assert (s.price_per_hour, s.disk_gb, s.storage_price_gb_month, s.rebuild_cost) == (
        3.4828,
        250.0,
        0.20,
        1.0,
    )
    assert s.balance == 12.5
    assert s.balance_at == datetime(2027, 1, 15, 8, tzinfo=timezone.utc).timestamp()
    assert s.billing_started_at == datetime(2027, 1, 15, 8, 30, tzinfo=timezone.utc).timestamp()
    assert s.idle_minutes == 15.0
    assert s.config_path == str(path)
    assert s.source("price_per_hour") == f"{path} line 2"
    assert s.source("idle_minutes") == f"{path} line 9"


# -- precedence -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "flags", "price", "source"),
    [
        ({}, {}, 1.0, "file"),
        ({"RGPU_PRICE_PER_HOUR": "2"}, {}, 2.0, "RGPU_PRICE_PER_HOUR"),
        ({"RGPU_PRICE_PER_HOUR": "2"}, {"price_per_hour": "3"}, 3.0, "--price-per-hour"),
        ({}, {"price_per_hour": "3"}, 3.0, "--price-per-hour"),
        ({"RGPU_PRICE_PER_HOUR": "  "}, {"price_per_hour": None}, 1.0, "file"),  # blank: unset
    ],
)
def test_file_then_environment_then_flags(
    tmp_path: Path, env: dict, flags: dict, price: float, source: str
) -> None:
    path = write_config(tmp_path, "price_per_hour = 1\ndisk_gb = 100\n")
    s = load(tmp_path, env=env, flags=flags)
    assert s.price_per_hour == price
    assert s.source("price_per_hour") == (f"{path} line 1" if source == "file" else source)
    assert s.disk_gb == 100.0  # the keys nobody overrode stay from the file


TEXT_VALUES = {"hub_repo": "org/name", "hub_path": "x/{file}", "auto_push": "best", "model": "m.pt"}
# keys whose text in the environment is parsed into another value
PARSED_VALUES = {
    "notify_command": ('["x", "{event}"]', ("x", "{event}")),
    "notify_new_best": ("yes", True),
    "autostop_trust_records": ("on", True),
    "autostop_command": ('["stop", "$ID"]', ("stop", "$ID")),
    "price_command": ('["vastai", "show", "$ID"]', ("vastai", "show", "$ID")),
    "auto_push_files": ("best,last", ("best", "last")),
}


def test_every_key_has_an_environment_variable(tmp_path: Path) -> None:
    expected = {key: TEXT_VALUES.get(key, 7.0) for key in SETTING_KEYS}
    env = {"RGPU_" + key.upper(): TEXT_VALUES.get(key, "7") for key in SETTING_KEYS}
    for key, (text, value) in PARSED_VALUES.items():
        env["RGPU_" + key.upper()], expected[key] = text, value
    s = load(tmp_path, env=env)
    for key in SETTING_KEYS:
        assert getattr(s, key) == expected[key], key
        assert s.source(key) == "RGPU_" + key.upper()


def test_auto_push_files(tmp_path: Path) -> None:
    assert load(tmp_path, env={}).auto_push_files == ("best",)
    got = load(tmp_path, env={"RGPU_AUTO_PUSH_FILES": '["last", "best", "last"]'})
    assert got.auto_push_files == ("last", "best")
    write_config(tmp_path, 'auto_push_files = ["best", "last"]\n')
    assert load(tmp_path, env={}).auto_push_files == ("best", "last")
    for bad in ('["best", "epoch"]', "[]", "[1]", "{"):
        with pytest.raises(ConfigError, match="^RGPU_AUTO_PUSH_FILES: auto_push_files must"):
            load(tmp_path, env={"RGPU_AUTO_PUSH_FILES": bad})


def test_text_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^RGPU_AUTO_PUSH: auto_push must be one of off, best"):
        load(tmp_path, env={"RGPU_AUTO_PUSH": "always"})
    with pytest.raises(ConfigError, match=r"^RGPU_HUB_REPO: hub_repo must look like ORG/NAME"):
        load(tmp_path, env={"RGPU_HUB_REPO": "no-slash"})


def test_other_rgpu_variables_are_left_alone(tmp_path: Path) -> None:
    s = load(tmp_path, env={"RGPU_FAKE_GPUS": "3", "RGPU_SOMETHING_ELSE": "x"})
    assert s.sources == ()


# -- bad files ------------------------------------------------------------------------


def test_malformed_file_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = write_config(tmp_path, "price_per_hour = 3\ndisk_gb = 250\nrebuild_cost = = 1\n")
    message = error_of(tmp_path)
    assert message.startswith(f"{path} line 3: "), message
    assert "value" in message  # tomllib's "Invalid value", lower-cased


def test_malformed_file_at_the_end(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'price_per_hour = 3\nbalance_at = "2027-01-01\n')
    message = error_of(tmp_path)
    assert message.startswith(f"{path} line 2: "), message


def test_unknown_key_suggests_the_near_one(tmp_path: Path) -> None:
    path = write_config(tmp_path, "price_per_hour = 3\n\nprice_per_hr = 4\n")
    assert error_of(tmp_path) == (
        f"{path} line 3: unknown key 'price_per_hr' (did you mean 'price_per_hour'?)"
    )


def test_unknown_table_is_an_unknown_key(tmp_path: Path) -> None:
    path = write_config(tmp_path, "price_per_hour = 3\n[zzz]\nq = 1\n")
    message = error_of(tmp_path)
    assert message.startswith(f"{path} line 2: unknown key 'zzz' (known: price_per_hour, ")


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('price_per_hour = "abc"', "price_per_hour must be a number, got 'abc'"),
        ("price_per_hour = -1", "price_per_hour must not be negative, got -1"),
        ("price_per_hour = true", "price_per_hour must be a number, got True"),
        ("disk_gb = nan", "disk_gb must be a finite number, got nan"),
        ("idle_minutes = 0", "idle_minutes must be more than 0, got 0"),
        ('balance_at = "yesterday"', "balance_at must be an ISO 8601 time"),
    ],
)
def test_wrong_values_in_the_file_name_key_and_line(tmp_path: Path, text: str, what: str) -> None:
    path = write_config(tmp_path, "# costs\n" + text + "\n")
    message = error_of(tmp_path)
    assert message.startswith(f"{path} line 2: {what}"), message


def test_wrong_values_from_environment_and_flags_name_their_origin(tmp_path: Path) -> None:
    assert error_of(tmp_path, env={"RGPU_DISK_GB": "lots"}) == (
        "RGPU_DISK_GB: disk_gb must be a number, got 'lots'"
    )
    assert error_of(tmp_path, flags={"price_per_hour": "-3"}) == (
        "--price-per-hour: price_per_hour must not be negative, got '-3'"
    )


def test_a_negative_balance_is_allowed(tmp_path: Path) -> None:
    assert load(tmp_path, flags={"balance": "-2"}).balance == -2.0


def test_named_config_file_must_exist_but_the_default_need_not(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    assert error_of(tmp_path, config_path=str(missing)) == f"{missing}: no such file"
    assert load(tmp_path).config_path is None


def test_named_config_file_is_read_instead_of_the_default(tmp_path: Path) -> None:
    write_config(tmp_path, "price_per_hour = 1\n")
    other = tmp_path / "other.toml"
    other.write_text("price_per_hour = 9\n")
    s = load(tmp_path, config_path=str(other))
    assert (s.price_per_hour, s.config_path) == (9.0, str(other))


def test_a_directory_or_binary_config_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    assert "is a directory" in error_of(tmp_path, config_path=str(folder))
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"price_per_hour = 1\n\xff\xfe\n")
    assert error_of(tmp_path, config_path=str(binary)) == f"{binary} line 2: not UTF-8 text"


# -- times -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    ["2027-01-15T08:00:00Z", "2027-01-15T09:00:00+01:00", "2027-01-15 08:00:00+00:00"],
)
def test_iso_times_from_the_environment(tmp_path: Path, raw: str) -> None:
    s = load(tmp_path, env={"RGPU_BILLING_STARTED_AT": raw})
    assert s.billing_started_at == datetime(2027, 1, 15, 8, tzinfo=timezone.utc).timestamp()


def test_epoch_seconds_are_a_time_too(tmp_path: Path) -> None:
    s = load(tmp_path, env={"RGPU_BILLING_STARTED_AT": "1700000000"})
    assert s.billing_started_at == 1_700_000_000.0


def test_balance_at_defaults_to_the_file_mtime_when_the_balance_is_in_the_file(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, "balance = 20\n", mtime=NOW - 3600)
    s = load(tmp_path)
    assert (s.balance, s.balance_at) == (20.0, NOW - 3600)
    assert s.source("balance_at") == "config file mtime"


def test_balance_at_defaults_to_now_when_the_balance_is_a_flag_or_variable(
    tmp_path: Path,
) -> None:
    # the file's balance_at belongs to the file's balance, not to the flag's
    write_config(tmp_path, "balance = 20\nbalance_at = 2020-01-01T00:00:00Z\n", mtime=NOW - 60)
    assert load(tmp_path, flags={"balance": "5"}).balance_at == NOW
    assert load(tmp_path, env={"RGPU_BALANCE": "5"}).balance_at == NOW
    later = load(tmp_path, env={"RGPU_BALANCE_AT": "1700000000"}, flags={"balance": "5"})
    assert later.balance_at == NOW  # an env balance_at is older than a --balance flag
    explicit = load(tmp_path, env={"RGPU_BALANCE": "5", "RGPU_BALANCE_AT": "1700000000"})
    assert explicit.balance_at == 1_700_000_000.0
    from_file = load(tmp_path)
    assert from_file.balance_at == datetime(2020, 1, 1, tzinfo=timezone.utc).timestamp()


def test_no_balance_no_balance_at(tmp_path: Path) -> None:
    s = load(tmp_path)
    assert s.balance is None and s.balance_at is None


# -- argparse ----------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_settings_flags(p)
    return p


def test_flags_through_argparse(tmp_path: Path) -> None:
    other = tmp_path / "c.toml"
    other.write_text("rebuild_cost = 2\nprice_per_hour = 1\n")
    args = parser().parse_args(
        [
            "--config",
            str(other),
            "--price-per-hour",
            "3.4828",
            "--disk-gb",
            "250",
            "--storage-price-gb-month",
            "0.2",
            "--balance",
            "10",
        ]
    )
    s = settings_from_args(args, environ={"HOME": str(tmp_path)}, now=NOW)
    assert (s.price_per_hour, s.disk_gb, s.storage_price_gb_month) == (3.4828, 250.0, 0.2)
    assert (s.rebuild_cost, s.balance, s.balance_at) == (2.0, 10.0, NOW)
    assert s.source("rebuild_cost") == f"{other} line 1"


def test_flags_are_the_money_keys_and_the_repo() -> None:
    options = {a.dest for a in parser()._actions if a.option_strings and a.dest != "help"}
    assert options == {
        "config",
        "price_per_hour",
        "disk_gb",
        "storage_price_gb_month",
        "rebuild_cost",
        "balance",
        "hub_repo",
    }


def test_bad_flag_value_is_a_config_error_not_an_argparse_exit(tmp_path: Path) -> None:
    args = parser().parse_args(["--rebuild-cost", "cheap"])
    with pytest.raises(ConfigError, match=r"^--rebuild-cost: rebuild_cost must be a number"):
        settings_from_args(args, environ={"HOME": str(tmp_path)})


def test_settings_are_frozen_and_hashable(tmp_path: Path) -> None:
    s = load(tmp_path, flags={"price_per_hour": "1"})
    with pytest.raises(AttributeError):
        s.price_per_hour = 2  # type: ignore[misc]
    assert hash(s) == hash(load(tmp_path, flags={"price_per_hour": "1"}))
