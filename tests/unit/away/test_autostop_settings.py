"""autostop_command and autostop_idle_minutes in the settings, and `$VAR` / `${VAR}` in the
command's arguments (core.base.env_expand)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.config_files import error_of, load
from support.docs import doc

from rgpu_tui.core.away.autostop import enabled
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.base.env_expand import UnsetVariable, check_template, expand


def test_from_the_file_and_the_environment(tmp_path: Path) -> None:
    s = load(
        tmp_path,
        'autostop_command = ["runpodctl", "stop", "pod", "$RUNPOD_POD_ID"]\n'
        "autostop_idle_minutes = 30\n",
    )
    assert s.autostop_command == ("runpodctl", "stop", "pod", "$RUNPOD_POD_ID")
    assert s.autostop_idle_minutes == 30.0
    assert enabled(s) is None
    s = load(
        tmp_path,
        env={
            "RGPU_AUTOSTOP_COMMAND": '["sudo", "shutdown", "-h", "now"]',
            "RGPU_AUTOSTOP_IDLE_MINUTES": "0.5",
        },
    )
    assert s.autostop_command == ("sudo", "shutdown", "-h", "now")
    assert s.autostop_idle_minutes == 0.5  # fractions allowed: 30 s
    assert s.source("autostop_command") == "RGPU_AUTOSTOP_COMMAND"


def test_off_unless_both_are_set(tmp_path: Path) -> None:
    assert enabled(load(tmp_path)) == "autostop off (no autostop_command)"
    half = load(tmp_path, 'autostop_command = ["vastai", "stop", "instance", "12345"]\n')
    assert enabled(half) == (
        "autostop off: autostop_command is set but autostop_idle_minutes is not"
    )
    assert enabled(Settings(autostop_idle_minutes=5.0)) == "autostop off (no autostop_command)"


@pytest.mark.parametrize(
    "line, said",
    [
        (
            'autostop_command = "vastai stop instance 1"',
            'autostop_command must be an argv list of strings, e.g. ["vastai", "stop", '
            '"instance", "12345"] (no shell)',
        ),
        ("autostop_command = []", "the first one is the program"),
        ('autostop_command = ["stop", "${POD"]', "has a '${' without a variable name and '}'"),
        ('autostop_command = ["stop", "${}"]', "has a '${' without a variable name and '}'"),
        ("autostop_idle_minutes = 0", "autostop_idle_minutes must be more than 0"),
        ("autostop_idle_minutes = -5", "autostop_idle_minutes must be more than 0"),
        ('autostop_idle_minutes = "soon"', "autostop_idle_minutes must be a number"),
    ],
)
def test_bad_values_are_one_line_naming_the_file_line(tmp_path: Path, line, said) -> None:
    message = error_of(tmp_path, line + "\n")
    assert message.startswith(str(tmp_path / ".config" / "rgpu-tui" / "config.toml") + " line 1")
    assert said in message


def test_variables_are_filled_in_per_argument_once() -> None:
    env = {"POD": "pod-1", "ZONE": "eu", "SNEAKY": "$POD"}
    argv = ["stop", "$POD", "${ZONE}-x", "id=${POD}", "$$POD", "cost$5", "end$", "$SNEAKY"]
    assert expand(argv, env) == [
        "stop",
        "pod-1",
        "eu-x",
        "id=pod-1",
        "$POD",
        "cost$5",
        "end$",
        "$POD",
    ]
    assert expand(["no", "refs"], {}) == ["no", "refs"]


def test_an_unset_or_empty_variable_is_an_error_naming_it_never_an_empty_argument() -> None:
    with pytest.raises(UnsetVariable, match=r"^\$RUNPOD_POD_ID is not set$"):
        expand(["runpodctl", "stop", "pod", "$RUNPOD_POD_ID"], {})
    with pytest.raises(UnsetVariable, match=r"^\$A, \$B are not set$"):
        expand(["x", "${A}", "$B", "$A"], {"B": ""})


def test_malformed_references_are_found_before_anything_runs() -> None:
    assert check_template(["stop", "$POD", "${ZONE}", "$$"]) is None
    assert "'${' without a variable name" in check_template(["x", "${1ABC}"])


def test_the_readme_examples_are_valid_settings(tmp_path: Path) -> None:
    readme = doc("away.md")  # the examples moved from README.md to docs/away.md
    lines = re.findall(r"^(?:# )?(autostop_command = \[.*)$", readme, re.MULTILINE)
    assert len(lines) == 3, lines
    got = [load(tmp_path, line + "\n").autostop_command for line in lines]
    assert [argv[0] for argv in got] == ["vastai", "runpodctl", "sudo"]
    assert got[1][-1] == "$RUNPOD_POD_ID"
    assert "autostop_idle_minutes = 30" in readme
