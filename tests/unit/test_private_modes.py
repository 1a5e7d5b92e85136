"""What rgpu-tui writes is private (docs/security.md): records and console logs 0600, the
`.rgpu/` folders and those below it 0700, under the usual umask 022 and under a stricter
or looser one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.test_hub_push import make_run

from rgpu_tui.core.base.private import private_dir, private_parent
from rgpu_tui.core.hub.push import append_push_record
from rgpu_tui.core.hub.staging import stage
from rgpu_tui.core.launch.launch import launch
from rgpu_tui.core.launch.launch_spec import LaunchSpec
from rgpu_tui.core.records.autostop_files import AutostopFiles, Hold
from rgpu_tui.core.records.event_state import save_state
from rgpu_tui.core.records.launch_records import launches_path, read_launches
from rgpu_tui.core.records.push_records import pushes_path


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture(params=[0o022, 0o002, 0o000], ids=["umask022", "umask002", "umask000"])
def umask(request) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_a_launch_writes_a_private_folder_record_and_console_log(tmp_path: Path, umask) -> None:
    project = tmp_path / "runs"
    data = tmp_path / "data.yaml"
    data.write_text("nc: 1\n")
    spec = LaunchSpec(data=str(data), project=str(project), name="exp")
    record = launch(spec, executable="/bin/true", env={"PATH": os.environ.get("PATH", "")})
    rgpu = project / ".rgpu"
    assert mode(rgpu) == 0o700
    assert mode(rgpu / "console") == 0o700
    assert mode(record.console_log) == 0o600
    assert mode(launches_path(str(project))) == 0o600
    assert read_launches(str(project))[0].pid == record.pid


def test_a_push_record_and_the_staging_folder_are_private(tmp_path: Path, umask) -> None:
    run = make_run(tmp_path / "runs")
    append_push_record(str(run), {"outcome": "error", "error": "x"})
    assert mode(run / ".rgpu") == 0o700
    assert mode(pushes_path(str(run))) == 0o600
    staged = stage(str(run / "weights" / "best.pt"), str(run / ".rgpu" / "staging"), settle_s=0)
    try:
        assert mode(run / ".rgpu" / "staging") == 0o700
        assert mode(staged.path) == 0o600
    finally:
        staged.remove()


def test_a_push_makes_rgpu_and_staging_private_in_one_go(tmp_path: Path) -> None:
    """push() creates <run>/.rgpu/staging before anything else exists: both folders 0700
    (os.makedirs would give the parent 0755), in a fresh process with umask 022."""
    run = make_run(tmp_path / "runs")
    code = (
        "import os, sys\n"
        "os.umask(0o022)\n"
        "from rgpu_tui.core.base.config import Settings\n"
        "from rgpu_tui.core.hub.push import PushRequest, push\n"
        "r = push(PushRequest(sys.argv[1], 'best.pt'), Settings(hub_repo='a/b'),\n"
        "         endpoint='http://127.0.0.1:9', token='x', settle_s=0, timeout=1,\n"
        "         retry_waits=())\n"
        "print(r.error)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=60
    )
    assert "cannot reach the Hub" in proc.stdout, proc.stderr
    assert (mode(run / ".rgpu"), mode(run / ".rgpu" / "staging")) == (0o700, 0o700)
    assert mode(pushes_path(str(run))) == 0o600


def test_private_dir_leaves_existing_folders_and_refuses_a_symlink(tmp_path: Path) -> None:
    mine = tmp_path / "runs"
    mine.mkdir(mode=0o755)
    private_dir(str(mine / ".rgpu" / "console"), str(mine))
    assert mode(mine) == 0o755  # the user's folder is left as it is
    assert (mode(mine / ".rgpu"), mode(mine / ".rgpu" / "console")) == (0o700, 0o700)
    run = tmp_path / "run"
    run.mkdir()
    (run / ".rgpu").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(OSError, match="is a symlink"):
        private_dir(str(run / ".rgpu" / "staging"), str(run))
    assert not (tmp_path / "elsewhere" / "staging").exists()


def test_private_parent_makes_the_missing_folders_private(tmp_path: Path, umask) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    state = home / ".local" / "state" / "rgpu-tui"
    assert private_parent(str(state / "watch.json")) == str(state)
    assert mode(home) == 0o755  # it existed: left as it is
    for folder in (home / ".local", home / ".local" / "state", state):
        assert mode(folder) == 0o700, folder
    assert private_parent(str(state / "other.json")) == str(state)  # there already: fine
    # a folder that exists is the user's, a symlink too (dotfiles): used as it is
    (tmp_path / "elsewhere").mkdir(mode=0o755)
    (home / "linked").symlink_to(tmp_path / "elsewhere")
    private_parent(str(home / "linked" / "rgpu-tui" / "x.json"))
    assert mode(tmp_path / "elsewhere") == 0o755
    assert mode(tmp_path / "elsewhere" / "rgpu-tui") == 0o700


def test_the_state_and_the_autostop_hold_make_their_folders_private(tmp_path: Path, umask) -> None:
    """save_state and the app's autostop hold (Hold.take) make the XDG state folders the
    same way (core.base.private.private_parent)."""
    env = {"XDG_STATE_HOME": str(tmp_path / "a" / "state")}
    files = AutostopFiles.for_root(str(tmp_path / "runs"), env)
    hold = Hold(files.hold)
    hold.take()
    try:
        assert mode(files.hold) == 0o600
    finally:
        hold.release()
    for folder in (tmp_path / "a", tmp_path / "a" / "state", Path(files.hold).parent):
        assert mode(folder) == 0o700, folder
    plan = tmp_path / "b" / "state" / "plan.json"
    save_state(str(plan), {"x": 1})
    assert (mode(tmp_path / "b"), mode(plan.parent), mode(plan)) == (0o700, 0o700, 0o600)


def test_a_symlink_planted_where_a_record_goes_is_never_written_through(tmp_path: Path) -> None:
    """<run>/.rgpu/pushes.jsonl -> a file of the user's: the record is not written there
    (the push itself is what matters; its record is best effort)."""
    run = make_run(tmp_path / "runs")
    victim = tmp_path / "bashrc"
    victim.write_text("alias ls='ls -F'\n")
    (run / ".rgpu").mkdir(mode=0o700)
    os.symlink(victim, pushes_path(str(run)))
    with pytest.raises(OSError):
        append_push_record(str(run), {"outcome": "error"})
    assert victim.read_text() == "alias ls='ls -F'\n"


def test_a_launch_that_cannot_be_recorded_says_so_with_its_pid(tmp_path: Path) -> None:
    from rgpu_tui.core.launch.launch_spec import LaunchError

    project = tmp_path / "runs"
    (project / ".rgpu").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("")
    os.symlink(victim, launches_path(str(project)))
    data = tmp_path / "data.yaml"
    data.write_text("nc: 1\n")
    spec = LaunchSpec(data=str(data), project=str(project), name="exp")
    with pytest.raises(LaunchError, match=r"^started pid \d+, but cannot record it in "):
        launch(spec, executable="/bin/true", env={"PATH": os.environ.get("PATH", "")})
    assert victim.read_text() == ""
