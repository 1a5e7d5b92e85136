"""`push` asks the Hub before it skips a file as unchanged: after the Hub
lost the repo's files, `rgpu-tui push RUN` said "best.pt ... is unchanged since it was
pushed" and exited 0; only --force pushed it. Now the Hub is asked (the check autostop
makes): not there, or another file there, pushes again; a Hub that cannot be asked is said
and the push is tried. The real CLI as a subprocess against the local Hub server.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from e2e.test_hub_push import make_run

from rgpu_tui.core.records.push_records import read_pushes

from .test_hostile_actions import REPO, push_cli


def first_push(hub, tmp_path: Path) -> Path:
    run = make_run(tmp_path / "runs")
    proc = push_cli(hub.url, run, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(hub.commits(REPO)) == 1
    return run


def test_the_hub_still_has_it_nothing_is_pushed(hub, tmp_path: Path) -> None:
    run = first_push(hub, tmp_path)
    proc = push_cli(hub.url, run, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "is unchanged since it was pushed" in proc.stdout
    assert len(hub.commits(REPO)) == 1 and read_pushes(str(run))[-1]["outcome"] == "skipped"
    assert hub.count("POST", r"/paths-info/") == 1  # asked


def test_the_hub_lost_the_repo_it_is_pushed_again(hub, tmp_path: Path) -> None:
    run = first_push(hub, tmp_path)
    with hub.lock:
        del hub.repos[REPO]
    proc = push_cli(hub.url, run, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "is unchanged since it was pushed" not in proc.stdout
    assert (
        "best.pt is unchanged since its last push, but the Hub disagrees (alice/ckpts is not on "
        "the Hub (deleted, or this token cannot see it)): pushing it again"
    ) in proc.stderr
    [commit] = hub.commits(REPO)  # the repo again, with the file
    assert "exp1/best.pt" in commit.files
    assert read_pushes(str(run))[-1]["outcome"] == "ok"


def test_another_file_at_the_path_it_is_pushed_again(hub, tmp_path: Path) -> None:
    run = first_push(hub, tmp_path)
    other = make_run(tmp_path / "elsewhere", seed=2)
    assert push_cli(hub.url, other, tmp_path).returncode == 0  # another machine's exp1
    proc = push_cli(hub.url, run, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "exp1/best.pt at its head is another file): pushing it again" in proc.stderr
    assert len(hub.commits(REPO)) == 3
    assert hub.file_bytes(REPO, "exp1/best.pt") == (run / "weights" / "best.pt").read_bytes()


def test_a_hub_that_cannot_be_asked_is_said_and_the_push_tried(hub, tmp_path: Path) -> None:
    run = first_push(hub, tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{s.getsockname()[1]}"
    path = run / ".rgpu" / "pushes.jsonl"  # the same Hub, moved away: nothing listens
    records = [json.loads(x) for x in path.read_text().splitlines()]
    records[-1]["endpoint"] = gone
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    proc = push_cli(gone, run, tmp_path)
    assert proc.returncode == 1  # was 0: "unchanged"
    assert f"cannot confirm best.pt on the Hub (cannot reach the Hub at {gone}" in proc.stderr
    assert "push failed: cannot reach the Hub" in proc.stderr
