"""`pull` against a hostile Hub: a listing whose pages never end
or that drips a few bytes at a time is cut by --timeout as a whole and by a cap on its
entries; one odd file name in the repo is skipped with a notice; an unexpected error is one
line, said once, with no Python exception name.

The real huggingface_hub client against the local Hub server (tests/support/hub_server.py).
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

import pytest
from e2e.test_hub_pull import REPO, WRITE_TOKEN, rgpu
from support.checkpoints import checkpoint_bytes
from support.hub_server import Commit, HubServer, StoredFile

from rgpu_tui.core.hub.hub_errors import describe_pull_error
from rgpu_tui.core.hub.hub_pull import LISTED_MAX, pull


@pytest.fixture
def hub(tmp_path: Path):
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def put_files(hub: HubServer, files: dict[str, bytes]) -> None:
    """One commit of small regular files, straight into the server's repo."""
    repo = hub.create_repo(REPO, private=True)
    stored = {
        path: StoredFile(hashlib.sha256(data).hexdigest(), len(data), False, data)
        for path, data in files.items()
    }
    with hub.lock:
        tree = repo.tree
        tree.update(stored)
        repo.commits.append(Commit(secrets.token_hex(20), "put", tree, tuple(stored)))


def do_pull(hub: HubServer, tmp_path: Path, timeout: float = 5.0, which: str = "best"):
    return pull(REPO, "exp1", to_dir=str(tmp_path / "out"), which=which, endpoint=hub.url,
                token=WRITE_TOKEN, timeout=timeout)  # fmt: skip


def test_a_listing_whose_pages_never_end_is_cut(hub, tmp_path: Path) -> None:
    """Every page linked a next one: `pull` went on (1.1 GB in 25 s)."""
    put_files(hub, {f"exp1/epoch_{i}.pt": b"x" for i in range(2000)})
    hub.endless_listing = True
    result = do_pull(hub, tmp_path, timeout=30)
    assert not result.ok and result.files == ()
    assert result.error == (
        f"the Hub lists more than {LISTED_MAX} entries in {REPO}: exp1: not a run's folder "
        "(pull stopped listing)"
    )
    assert hub.count("GET", r"/tree/") <= LISTED_MAX // 2000 + 2  # the pages it asked for


def test_a_listing_that_drips_is_cut_by_the_timeout_as_a_whole(hub, tmp_path: Path) -> None:
    """16 bytes every 0.3 s: each read comes well within the 2 s timeout, the listing as a
    whole would take a minute."""
    put_files(hub, {f"exp1/epoch_{i}.pt": b"x" for i in range(30)})
    hub.drip_listing_s = 0.3
    result = do_pull(hub, tmp_path, timeout=2.0)
    assert not result.ok and result.files == ()
    assert result.error == (
        f"the Hub's listing of {REPO} did not end within 2 s (--timeout): try again later"
    )


def test_an_endless_listing_through_the_cli_is_one_line(hub, tmp_path: Path) -> None:
    put_files(hub, {"exp1/best.pt": b"b", **{f"exp1/epoch_{i}.pt": b"x" for i in range(2000)}})
    hub.endless_listing = True
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(tmp_path / "o"))
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"rgpu-tui: pull failed: the Hub lists more than {LISTED_MAX}")


def test_an_epoch_number_out_of_range_is_skipped_with_a_notice(hub, tmp_path: Path) -> None:
    """`epoch_<5000 digits>.pt` failed the whole pull with a raw ValueError."""
    odd = "exp1/epoch_" + "7" * 5000 + ".pt"
    best, three = checkpoint_bytes(64, 1), checkpoint_bytes(64, 3)  # pull refuses a torn .pt
    put_files(hub, {"exp1/best.pt": best, "exp1/epoch_3.pt": three, odd: b"odd"})
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(tmp_path / "o"),
                "--file", "all")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [notice] = proc.stderr.splitlines()
    assert notice.startswith("rgpu-tui: skipped exp1/epoch_777") and len(notice) < 200
    assert notice.endswith(": its epoch is out of range")
    assert (tmp_path / "o" / "exp1" / "weights" / "epoch_3.pt").read_bytes() == three
    assert (tmp_path / "o" / "exp1" / "weights" / "best.pt").read_bytes() == best


def test_an_unexpected_error_is_said_once_without_a_python_name() -> None:
    line = describe_pull_error(
        ValueError("Exceeds the limit (4300 digits) for integer string conversion"),
        repo=REPO, endpoint="https://hub.invalid", timeout=5,
    )  # fmt: skip
    assert line == "unexpected error: Exceeds the limit (4300 digits) for integer string conversion"
    assert "ValueError" not in line and "pull failed" not in line


def test_what_the_repo_has_instead_is_named_within_one_short_line(hub, tmp_path: Path) -> None:
    put_files(hub, {f"exp1/epoch_{i}.pt": b"x" for i in range(5000)})
    result = do_pull(hub, tmp_path)
    assert result.error == (
        f"{REPO} has no best.pt or last.pt for exp1 (it has epoch_0.pt, epoch_1.pt, epoch_2.pt, "
        "epoch_3.pt, epoch_4.pt, epoch_5.pt, epoch_6.pt, epoch_7.pt, epoch_8.pt, epoch_9.pt "
        "and 4990 more)"
    )
