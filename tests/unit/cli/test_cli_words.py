"""`rgpu-tui WORD`: a word that is neither a command nor an existing path is a mistyped
command (exit 2, one line); a path opens the app. The app, demo and fleet screens refuse to
start without a terminal (pytest's stdin is not one). In a real pty: e2e/test_terminal.py."""

from __future__ import annotations

import os

import pytest

from rgpu_tui import cli
from rgpu_tui.cli.app import not_a_path


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    for key in [k for k in os.environ if k.startswith("RGPU_")]:
        monkeypatch.delenv(key)
    return tmp_path


@pytest.mark.parametrize(
    "word,hint",
    [
        ("doctor", "`libreyolo doctor DATA.yaml` checks a dataset"),
        ("snaphot", "did you mean `rgpu-tui snapshot`?"),
        ("lauch", "did you mean `rgpu-tui launch`?"),
        ("train", "did you mean `rgpu-tui launch`?"),
        ("zzz", "commands: snapshot"),
    ],
)
def test_an_unknown_word_is_one_line_and_exit_2(here, capsys, word, hint) -> None:
    assert cli.main([word]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"rgpu-tui: '{word}' is neither a command nor an existing path")
    assert hint in err
    for name in cli.COMMANDS:
        assert name in err
    assert f"`./{word}` opens it as a runs root" in err
    assert not (here / word).exists()


@pytest.mark.parametrize("path", ["./doctor", "runs/exp", "~/runs", ".", "/no/such/runs"])
def test_paths_are_opened(here, path) -> None:
    assert not_a_path(path) is None


def test_an_existing_word_is_a_path(here) -> None:
    (here / "doctor").mkdir()
    assert not_a_path("doctor") is None
    (here / "notes").write_text("x")  # a file: the app says what it is, as before
    assert not_a_path("notes") is None


def test_a_word_with_escapes_is_shown_inert(here, capsys) -> None:
    assert cli.main(["\x1b[2Jwipe"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "^[" in err


@pytest.mark.parametrize(
    "argv,instead",
    [
        (["./runs"], "`rgpu-tui snapshot` prints what it shows once"),
        (["demo", "--dir", "DEMO"], "`rgpu-tui demo --no-app`"),
        (["fleet", "somehost"], "`rgpu-tui fleet --once`"),
    ],
)
def test_no_terminal_is_one_line_and_starts_nothing(here, capsys, monkeypatch, argv, instead):
    """pytest's stdin is no terminal; stdout is made to say it is one, so that `fleet`
    (which prints its table once when stdout is not a terminal) tries its screen."""
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    argv = [str(here / "demo") if a == "DEMO" else a for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the app needs a terminal, and stdin" in err, err
    assert instead in err
    assert not (here / "demo").exists()  # the demo launched nothing
