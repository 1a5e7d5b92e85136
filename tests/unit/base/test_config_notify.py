"""The watcher's settings: notify_command (an argv list) and notify_new_best."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.config_files import error_of, load


def test_notify_command_from_the_file_and_the_environment(tmp_path: Path) -> None:
    s = load(
        tmp_path,
        'price_per_hour = 1.0\nnotify_command = ["curl", "-s", "-d", "{message}", '
        '"https://ntfy.sh/t"]\nnotify_new_best = true\n',
    )
    assert s.notify_command == ("curl", "-s", "-d", "{message}", "https://ntfy.sh/t")
    assert s.notify_new_best is True
    assert s.source("notify_command").endswith("config.toml line 2")
    env = {"RGPU_NOTIFY_COMMAND": '["mail", "-s", "{event}", "me@example.com"]'}
    env["RGPU_NOTIFY_NEW_BEST"] = "no"
    s = load(tmp_path, env=env)
    assert s.notify_command == ("mail", "-s", "{event}", "me@example.com")
    assert s.notify_new_best is False
    assert s.source("notify_command") == "RGPU_NOTIFY_COMMAND"


def test_unset_by_default(tmp_path: Path) -> None:
    s = load(tmp_path)
    assert s.notify_command is None and s.notify_new_best is False


@pytest.mark.parametrize(
    "line, said",
    [
        ('notify_command = "curl -d {message} https://x"', "must be an argv list of strings"),
        ("notify_command = []", "the first one is the program"),
        ('notify_command = ["  ", "x"]', "the first one is the program"),
        ('notify_command = ["curl", 3]', "must be an argv list of strings"),
        ('notify_command = ["curl", ["-d"]]', "must be an argv list of strings"),
        ("notify_command = [" + '"a", ' * 65 + "]", "at most 64 arguments"),
        ('notify_command = ["curl", "' + "x" * 5000 + '"]', "at most 4096 characters"),
        ('notify_command = ["curl", "a\\u0000b"]', "must not hold a NUL"),
        ('notify_new_best = "maybe"', "must be true or false"),
        ("notify_new_best = 1", "must be true or false"),
    ],
)
def test_bad_values_are_one_line_naming_file_and_line(tmp_path: Path, line: str, said: str) -> None:
    message = error_of(tmp_path, "price_per_hour = 1.0\n" + line + "\n")
    assert "config.toml line 2:" in message and said in message


@pytest.mark.parametrize(
    "value, said",
    [
        ("curl -d {message}", "must be an argv list of strings"),
        ('["curl", ', "must be an argv list of strings"),
        ('{"argv": ["curl"]}', "must be an argv list of strings"),
        ("[" * 100_000, "must be an argv list of strings"),
    ],
)
def test_bad_environment_values(tmp_path: Path, value: str, said: str) -> None:
    message = error_of(tmp_path, env={"RGPU_NOTIFY_COMMAND": value})
    assert message.startswith("RGPU_NOTIFY_COMMAND: notify_command") and said in message
