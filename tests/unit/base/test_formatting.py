"""One formatter per idea (core.base.formatting): prices with significant digits, sizes in
one unit, and the config file named as it is found."""

from __future__ import annotations

import math

import pytest

from rgpu_tui.core.base.config import Settings, config_file_for
from rgpu_tui.core.base.formatting import fmt_bytes, fmt_bytes_of, fmt_price, fmt_rate


@pytest.mark.parametrize(
    "value,per,text",
    [
        (2.10 * 2.0 / 3600, "epoch", "$0.00117/epoch"),  # 2 s an epoch at $2.10/h
        (0.00012, "epoch", "$0.00012/epoch"),  # significant digits, however small
        (0.0694444, "h", "$0.0694/h"),  # the seed's stopped rate, as before
        (3.48 * 60 / 3600, "epoch", "$0.058/epoch"),  # no trailing zero
        (0.35, "epoch", "$0.35/epoch"),
        (0.5, "h", "$0.50/h"),
        (0.999, "h", "$0.999/h"),
        (2.1, "h", "$2.10/h"),
        (1234.5, "h", "$1,234.50/h"),
        (0.0, "epoch", "$0.00/epoch"),
        (-0.5, "h", "-$0.50/h"),
        (None, "epoch", "?/epoch"),
        (math.nan, "h", "?/h"),
        (1e-30, "h", "$0.00/h"),  # capped: never a hundred zeros
    ],
)
def test_fmt_price(value, per, text) -> None:
    assert fmt_price(value, per) == text


def test_fmt_rate_is_a_price_per_hour() -> None:
    assert fmt_rate(3.48) == "$3.48/h" and fmt_rate(None) == "?/h"


@pytest.mark.parametrize(
    "n,text",
    [
        (812, "812 B"),
        (3_400_000, "3.4 MB"),
        (69_900_000_000, "69.9 GB"),  # a disk's free space: the header and a notice alike
        (2_000_400_000_000, "2.0 TB"),
        (None, "?"),
    ],
)
def test_fmt_bytes(n, text) -> None:
    assert fmt_bytes(n) == text


def test_fmt_bytes_of_takes_the_unit_of_the_whole() -> None:
    assert fmt_bytes_of(13_000_000_000, 67_400_000_000) == "13.0/67.4 GB"
    assert fmt_bytes_of(600_000_000, 67_400_000_000) == "0.6/67.4 GB"
    assert fmt_bytes_of(None, 1_000) == "?/1.0 kB"


def test_config_file_for_names_the_file_read_else_the_xdg_default(tmp_path) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert config_file_for(Settings(), env) == str(tmp_path / "xdg" / "rgpu-tui" / "config.toml")
    env = {"HOME": str(home)}
    assert config_file_for(Settings(), env) == "~/.config/rgpu-tui/config.toml"
    read = Settings(config_path=str(tmp_path / "prices.toml"))
    assert config_file_for(read, env) == str(tmp_path / "prices.toml")


def test_fmt_bytes_never_reads_1000_of_a_unit() -> None:
    assert fmt_bytes(999_999_999) == "1.0 GB"  # not "1000.0 MB"
    assert fmt_bytes(999_940_000) == "999.9 MB"
    assert fmt_bytes_of(999_999_999, 999_999_999) == "1.0/1.0 GB"
