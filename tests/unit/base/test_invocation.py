"""Hints name our command the way this shell finds it: `rgpu-tui` when
that name on PATH is this very program, else the program's absolute path (the README runs
`.venv/bin/rgpu-tui` without putting it on PATH)."""

from __future__ import annotations

import os
import subprocess

from support.cli_env import RGPU_TUI, clean_env

from rgpu_tui.core.base.invocation import NAME, command_for


def _script(folder) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NAME
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_the_name_when_path_finds_this_program_else_its_absolute_path(tmp_path):
    venv = _script(tmp_path / "venv" / "bin")
    other = _script(tmp_path / "other")
    assert command_for(venv, "/usr/bin:/bin") == venv  # not on PATH: the path
    assert command_for(venv, f"/usr/bin:{tmp_path / 'venv' / 'bin'}") == NAME
    assert command_for(venv, f"{tmp_path / 'other'}:{tmp_path / 'venv' / 'bin'}") == venv
    assert command_for(other, str(tmp_path / "other")) == NAME
    (tmp_path / "linked").mkdir()
    os.symlink(venv, tmp_path / "linked" / NAME)  # ~/.local/bin/rgpu-tui -> the venv's
    assert command_for(venv, str(tmp_path / "linked")) == NAME
    spaced = _script(tmp_path / "my venv" / "bin")
    assert command_for(spaced, "/usr/bin") == f"'{spaced}'"  # pasted into a shell as is
    assert command_for("/usr/bin/python3", "/usr/bin") == NAME  # python -m, a test runner


def test_the_app_without_a_terminal_names_the_commands_the_shell_can_run(tmp_path):
    """The console script, stdin not a terminal: the way out it names runs as printed."""
    root = tmp_path / "runs"
    root.mkdir()
    for path, shown in (
        ("/usr/bin:/bin", str(RGPU_TUI)),
        (f"{RGPU_TUI.parent}:/usr/bin:/bin", NAME),
    ):
        env = clean_env(tmp_path, PATH=path)
        proc = subprocess.run(
            [str(RGPU_TUI), str(root)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        assert f"`{shown} snapshot` prints what it shows once" in proc.stderr
        assert f"`{shown} watch` prints each event" in proc.stderr
