"""Numeric flags of the app and the action commands, and the launch's argument messages.

Every numeric flag goes through one validator (rgpu_tui.cli.numbers.number): NaN, the
infinities and values out of the flag's range end the command with exit status 2 and one
line naming the flag and its range, before anything runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rgpu_tui import cli
from rgpu_tui.cli.app import app_parser
from rgpu_tui.cli.launch import launch_parser
from rgpu_tui.cli.push import push_parser
from rgpu_tui.core.launch.launch_spec import LaunchError, make_spec

BAD_SECONDS = ["nan", "NaN", "inf", "-inf", "-1", "1e400", "ten", ""]
TINY = "1e-300"  # a busy loop for --interval, an instant timeout: below the lower bound


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch, tmp_path) -> None:
    """A flag let through by mistake must fail the test, not start the app, the GPU probe
    or a demo training."""
    import rgpu_tui.core.launch.demo as demo
    import rgpu_tui.core.launch.gpu_probe as gpu_probe
    import rgpu_tui.tui.app as app

    def refuse(*args, **kwargs):
        raise AssertionError("a bad flag was let through")

    monkeypatch.setattr(app, "RgpuApp", refuse)
    monkeypatch.setattr(gpu_probe, "gpu_preflight", refuse)
    monkeypatch.setattr(demo, "libreyolo_problem", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def one_line_exit_2(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    [line] = out.err.splitlines()
    return line


@pytest.mark.parametrize(
    "argv, expected, bad",
    [
        (["--interval"], "a number of seconds from 0.1 to 3600", [TINY, "0", "3601"]),
        (["push", "RUN", "--settle"], "a number of seconds from 0 to 300", ["301"]),
        (["push", "RUN", "--timeout"], "a number of seconds from 1 to 3600", [TINY, "0"]),
        (["preflight", "--timeout"], "a number of seconds from 5 to 3600", [TINY, "0", "4"]),
        (["launch", "--wait"], "a number of seconds from 0 to 3600", ["3601"]),
        (["pull", "a/b", "exp1", "--timeout"], "a number of seconds from 1 to 3600", [TINY, "0"]),
        (["resume", "RUN", "--wait"], "a number of seconds from 0 to 3600", ["3601"]),
    ],
    ids=[
        "app-interval",
        "push-settle",
        "push-timeout",
        "preflight-timeout",
        "launch-wait",
        "pull-timeout",
        "resume-wait",
    ],
)
def test_bad_seconds_exit_2_in_one_line(argv, expected, bad, capsys) -> None:
    *command, flag = argv
    for value in BAD_SECONDS + bad:
        line = one_line_exit_2([*command, f"{flag}={value}"], capsys)
        assert line.startswith("rgpu-tui")
        assert f"argument {flag}: must be {expected}, got {value!r}" in line


@pytest.mark.parametrize("value", ["0", "1001", "1000000", "1e9", "1.5", "nan", "-3"])
def test_demo_epochs_is_a_whole_number_from_1_to_1000(value, capsys) -> None:
    line = one_line_exit_2(["demo", "--epochs", value], capsys)
    assert f"argument --epochs: must be a whole number of epochs from 1 to 1000, got {value!r}" in (
        line
    )


def test_the_limits_themselves_are_accepted() -> None:
    assert app_parser().parse_args(["--interval", "0.1"]).interval == 0.1
    assert app_parser().parse_args(["--interval", "3600"]).interval == 3600
    push = push_parser().parse_args(["RUN", "--settle", "0", "--timeout", "3600"])
    assert (push.settle, push.timeout) == (0, 3600)
    assert launch_parser().parse_args(["--wait", "0"]).wait == 0


def test_settle_nan_no_longer_says_keeps_changing(tmp_path: Path, capsys) -> None:
    """Before: NaN settle time never settled, and the push failed with "best.pt keeps
    changing: tried 5 times"."""
    line = one_line_exit_2(["push", str(tmp_path), "--settle", "nan", "--repo", "a/b"], capsys)
    assert "keeps changing" not in line and "--settle" in line


def test_preflight_timeout_0_no_longer_says_importing_torch_hung(capsys) -> None:
    line = one_line_exit_2(["preflight", "--timeout", "0"], capsys)
    assert "importing torch hung" not in line and "--timeout" in line


# -- the launch's messages --------------------------------------------------------------


@pytest.fixture
def data_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "data.yaml"
    path.write_text("nc: 1\n")
    return path


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("epochs", 0, "epochs: must be 1 or more, got 0"),
        ("epochs", -3, "epochs: must be 1 or more, got -3"),
        ("batch", 0, "batch: must be -1 (auto) or 1 or more, got 0"),
        ("batch", -2, "batch: must be -1 or more (-1 means auto), got -2"),
    ],
)
def test_each_field_is_named_in_its_own_error(data_yaml, tmp_path, field, value, message):
    with pytest.raises(LaunchError) as error:
        make_spec(str(data_yaml), str(tmp_path / "runs"), **{field: value})
    assert str(error.value) == message


@pytest.mark.parametrize("item", ["--help", "-h", "-x", "--epochs=5"])
def test_an_option_passed_to_launch_is_refused_before_launching(
    item, data_yaml, tmp_path, monkeypatch, capsys
) -> None:
    """`rgpu-tui launch -- data=... --help`: libreyolo train takes KEY=VALUE only; before,
    `--help` was launched, printed libreyolo's help and the launch said "the run died"."""
    import rgpu_tui.core.launch.launch_spec as launch_spec_mod

    monkeypatch.setattr(launch_spec_mod, "libreyolo_executable", lambda: "/bin/true")
    project = tmp_path / "runs"
    argv = ["launch", "--project", str(project), "--no-doctor", "--wait", "0", "--"]
    assert cli.main([*argv, f"data={data_yaml}", "device=cpu", item]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"rgpu-tui: extra arguments: {item!r} is not a KEY=VALUE argument "
        "(libreyolo train takes KEY=VALUE only)\n"
    )
    assert not project.exists()  # nothing launched, nothing recorded
