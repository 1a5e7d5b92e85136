"""`rgpu-tui --version` and `rgpu-tui --help` (also `help`, `-h`): the help names every
sub-command, one line each, from the same table main() dispatches on."""

from __future__ import annotations

import importlib.metadata
import re

import pytest
from support.cli_env import run_rgpu
from support.docs import readme

from rgpu_tui import cli
from rgpu_tui.cli.app import version_text


def _readme_commands() -> list[str]:
    """The sub-commands the README's Use block shows (`rgpu-tui NAME ...` lines)."""
    use = readme().split("## Use", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return re.findall(r"^rgpu-tui ([a-z]\S*)", use, flags=re.M)


def test_version_prints_both_installed_versions_and_exits_0(monkeypatch) -> None:
    monkeypatch.delenv("RGPU_FAST_PATHS", raising=False)
    proc = run_rgpu("--version")
    assert proc.returncode == 0, proc.stderr
    own, textual = (importlib.metadata.version(d) for d in ("rgpu-tui", "textual"))
    assert proc.stdout == f"rgpu-tui {own} (textual {textual}, fast paths on)\n"


def test_version_says_which_fast_paths_are_off_and_why(monkeypatch) -> None:
    monkeypatch.setenv("RGPU_FAST_PATHS", "0")
    proc = run_rgpu("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith(
        ", fast paths off: partial updates, input thread, log pane (RGPU_FAST_PATHS=0))\n"
    )


def test_version_says_so_when_the_distribution_is_not_installed(monkeypatch) -> None:
    real = importlib.metadata.version

    def version(dist: str) -> str:
        if dist == "rgpu-tui":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    text = version_text()
    assert text.startswith("rgpu-tui version unknown (not installed as a distribution) ")
    assert f"(textual {real('textual')}, fast paths " in text


def test_help_names_every_command_of_the_readme_on_one_line_each() -> None:
    proc = run_rgpu("--help")
    assert proc.returncode == 0, proc.stderr
    readme = _readme_commands()
    assert len(readme) >= 7, readme  # snapshot cost push launch stop preflight demo
    table = proc.stdout.split("\ncommands:\n", 1)[1].splitlines()
    for name in readme:
        [line] = [x for x in table if x.split()[:1] == [name]]
        assert len(line.split()) > 2, line  # the name and a summary
    assert "--interval" in proc.stdout and "[path]" in proc.stdout  # the app and its flags


def test_help_and_dash_h_print_the_same_as_double_dash_help() -> None:
    helps = [run_rgpu(flag) for flag in ("--help", "-h", "help")]
    assert [p.returncode for p in helps] == [0, 0, 0]
    assert helps[0].stdout == helps[1].stdout == helps[2].stdout


@pytest.mark.parametrize("name", [n for n in cli.COMMANDS if n != "help"])
def test_each_command_in_the_table_dispatches_to_its_own_parser(name: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([name, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: rgpu-tui {name} ")


@pytest.mark.parametrize("name", [n for n in cli.COMMANDS if n != "help"])
def test_help_command_prints_that_commands_help(name: str, capsys) -> None:
    """`rgpu-tui help push` prints push's help, not the general help."""
    with pytest.raises(SystemExit):
        cli.main([name, "--help"])
    own = capsys.readouterr().out
    assert cli.main(["help", name]) == 0
    assert capsys.readouterr().out == own


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["pussh"], "did you mean `rgpu-tui help push`? "),
        (["train"], "did you mean `rgpu-tui help launch`? "),
        (["zzz"], ""),
        (["push", "extra"], "did you mean `rgpu-tui help push`? "),
    ],
)
def test_help_of_an_unknown_command_is_one_line_with_the_nearest(argv, hint) -> None:
    proc = run_rgpu("help", *argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"rgpu-tui help: no command {' '.join(argv)!r}: {hint}")
    assert "commands: snapshot, cost, chart" in proc.stderr
