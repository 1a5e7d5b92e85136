"""`rgpu-tui pull` against the local Hub (tests/support/hub_server.py), as a user runs it.

A real run directory (the run_completed fixture's artifacts, zip checkpoints with a
data.pkl) is pushed with `rgpu-tui push` subprocesses, then pulled back with
`rgpu-tui pull` subprocesses: byte identity in libreyolo's layout, "already here" without
touching a file, refusals without --force, corrupted or broken-off downloads that leave
nothing under the real name, one-line errors, and the token nowhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.checkpoints import checkpoint_bytes
from support.hub_server import HubServer
from support.secrets import tokens_nowhere

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
ARTIFACTS = ("status.json", "metrics.jsonl", "results.csv", "summary.json", "train_config.yaml")
HF = "hf" + "_"  # assembled so that no token-shaped literal sits in the tree
WRITE_TOKEN = HF + "PullTestWriteTokenForTheLocalHub0123"
OTHER_TOKEN = HF + "PullTestOtherUserTokenForTheHub45678"
BAD_TOKEN = HF + "PullTestUnknownTokenTheHubRejects999"
TOKENS = (WRITE_TOKEN, OTHER_TOKEN, BAD_TOKEN)
REPO = "alice/ckpts"


def make_run(root: Path, name: str = "exp1", epochs: tuple[int, ...] = (3,)) -> Path:
    run = root / name
    (run / "weights").mkdir(parents=True)
    for artifact in ARTIFACTS:
        shutil.copy(FIXTURE_RUN / artifact, run / artifact)
    (run / "weights" / "best.pt").write_bytes(checkpoint_bytes(300_000, 1))
    (run / "weights" / "last.pt").write_bytes(checkpoint_bytes(300_000, 2))
    for epoch in epochs:
        (run / "weights" / f"epoch_{epoch}.pt").write_bytes(checkpoint_bytes(50_000, 10 + epoch))
    return run


def rgpu(
    hub_url: str,
    home: Path,
    *args: str,
    token: str | None = WRITE_TOKEN,
    deadline: float = 120,
    **env_extra,
):
    """rgpu-tui as a subprocess; the token travels in the environment, never in argv. A
    run past `deadline` seconds fails the test."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "HF_HOME": str(home / "hf"),
        "HF_ENDPOINT": hub_url,
        "LANG": "C.UTF-8",
        **env_extra,
    }
    if token:
        env["HF_TOKEN"] = token
    argv = [sys.executable, "-m", "rgpu_tui", *args]
    for t in TOKENS:
        assert all(t not in a for a in argv)
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=deadline)
    except subprocess.TimeoutExpired:
        pytest.fail(f"rgpu-tui {' '.join(args)} ran past {deadline:g} s")


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def stats(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def token_nowhere(*places) -> None:
    tokens_nowhere(TOKENS, *places)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.fixture
def hub(tmp_path: Path):
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice")
    server.add_token(OTHER_TOKEN, "bob")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pushed_once(tmp_path_factory):
    """One Hub with exp1 (best, last, epoch_3, artifacts) pushed by `rgpu-tui push`."""
    tmp = tmp_path_factory.mktemp("pushed")
    server = HubServer(str(tmp / "hub-storage"), max_lifetime_s=900)
    server.add_token(WRITE_TOKEN, "alice")
    server.add_token(OTHER_TOKEN, "bob")
    server.start()
    run = make_run(tmp / "runs")
    for which in ("best", "last", "epoch_3"):
        proc = rgpu(
            server.url, tmp, "push", str(run), "--repo", REPO, "--file", which, "--settle", "0"
        )
        assert proc.returncode == 0, proc.stderr
    try:
        yield server, run
    finally:
        server.stop()


@pytest.fixture
def pushed(pushed_once):
    """pushed_once, its fault knobs cleared after each test whatever happened."""
    hub, run = pushed_once
    try:
        yield hub, run
    finally:
        hub.clear_faults()


# -- the round trip ----------------------------------------------------------------------


def test_pull_all_is_a_byte_identical_round_trip_and_a_second_pull_touches_nothing(
    pushed, tmp_path
) -> None:
    hub, run = pushed
    out = tmp_path / "restore"
    out.mkdir()
    cdn_before = len(hub.cdn_auth_headers)
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out), "--file", "all")
    assert proc.returncode == 0, proc.stderr
    want = {
        name: data
        for name, data in files_under(run).items()
        if name in ARTIFACTS or name.startswith("weights/")
    }
    assert sorted(want) == sorted(
        [*ARTIFACTS, "weights/best.pt", "weights/last.pt", "weights/epoch_3.pt"]
    )
    assert files_under(out / "exp1") == want  # every file, byte-identical, nothing else
    for path in (out / "exp1").rglob("*"):
        if path.is_file():
            assert path.stat().st_mode & 0o077 == 0  # written private
    assert proc.stdout.count("downloaded ") == len(want)
    # the checkpoints came from the "CDN" origin, which never saw the token
    assert hub.cdn_auth_headers[cdn_before:] == [None, None, None]
    assert "downloading weights/best.pt (300.2 kB)..." in proc.stdout.splitlines()

    before = stats(out / "exp1")
    gets = hub.count("GET", r"/resolve/|/cdn/")
    again = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out), "--file", "all")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already here") == len(want)
    assert "download" not in again.stdout and again.stderr == ""
    assert stats(out / "exp1") == before  # same inodes, same mtimes
    assert hub.count("GET", r"/resolve/|/cdn/") == gets  # nothing downloaded again
    token_nowhere(proc.stdout, proc.stderr, again.stdout, again.stderr, out, run / ".rgpu")


def test_default_is_best_pt_into_the_current_directory_and_json_says_what_happened(
    pushed, tmp_path
) -> None:
    hub, run = pushed
    cwd = tmp_path / "here"
    cwd.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": hub.url,
        "HF_TOKEN": WRITE_TOKEN,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "pull", REPO, "exp1", "--json"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    best = (run / "weights" / "best.pt").read_bytes()
    assert files_under(cwd) == {"exp1/weights/best.pt": best}
    [entry] = data["files"]
    assert entry["path"] == str(cwd / "exp1" / "weights" / "best.pt")
    assert (entry["size"], entry["sha256"], entry["outcome"]) == (
        len(best),
        hashlib.sha256(best).hexdigest(),
        "downloaded",
    )
    assert entry["repo_path"] == "exp1/best.pt" and entry["verified_by"] == "sha256"
    assert data["ok"] is True and data["error"] is None and data["revision"] == hub.repos[REPO].head
    token_nowhere(proc.stdout, proc.stderr)


def test_without_best_pt_the_default_pulls_last_pt_and_says_so(hub, tmp_path) -> None:
    run = make_run(tmp_path / "runs", "exp2", epochs=())
    (run / "weights" / "best.pt").unlink()
    proc = rgpu(hub.url, tmp_path, "push", str(run), "--repo", REPO, "--settle", "0")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "restore"
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp2", "--to", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "has no best.pt for exp2: pulling last.pt" in proc.stderr
    assert files_under(out / "exp2") == {
        "weights/last.pt": (run / "weights" / "last.pt").read_bytes()
    }
    only_last = rgpu(hub.url, tmp_path, "pull", REPO, "exp2", "--to", str(out), "--file", "best")
    assert only_last.returncode == 0 and "already here" in only_last.stdout


def test_a_custom_hub_path_is_read_back(hub, tmp_path) -> None:
    run = make_run(tmp_path / "runs", "exp9", epochs=(12,))
    layout = {"RGPU_HUB_PATH": "ckpt/{run}-{file}"}
    for which in ("best", "epoch_12"):
        proc = rgpu(
            hub.url, tmp_path, "push", str(run), "--repo", REPO, "--file", which,
            "--settle", "0", **layout,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    assert "ckpt/exp9-epoch_12.pt" in hub.repos[REPO].tree
    out = tmp_path / "restore"
    proc = rgpu(
        hub.url, tmp_path, "pull", REPO, "exp9", "--to", str(out), "--file", "all", **layout
    )
    assert proc.returncode == 0, proc.stderr
    # ckpt/status.json etc. are shared by every run under this hub_path: not pulled, said so
    notice = one_line(proc.stderr)
    assert notice.startswith("rgpu-tui: artifacts not pulled: hub_path 'ckpt/{run}-{file}'")
    want = {
        n: d for n, d in files_under(run).items() if n in ("weights/best.pt", "weights/epoch_12.pt")
    }
    assert files_under(out / "exp9") == want
    missing = rgpu(hub.url, tmp_path, "pull", REPO, "exp8", "--to", str(out), **layout)
    assert missing.returncode == 1
    assert one_line(missing.stderr).endswith("runs there: exp9")


# -- never clobbering -------------------------------------------------------------------


def test_a_different_local_best_pt_is_refused_without_force_and_replaced_with_it(
    pushed, tmp_path
) -> None:
    hub, run = pushed
    out = tmp_path / "restore"
    local = out / "exp1" / "weights" / "best.pt"
    local.parent.mkdir(parents=True)
    mine = checkpoint_bytes(1000, 99)
    local.write_bytes(mine)
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out))
    assert proc.returncode == 1
    line = one_line(proc.stderr)
    assert line.startswith("rgpu-tui: weights/best.pt is already here with a different size")
    assert "--force" in line
    assert local.read_bytes() == mine
    # same size, other bytes: still refused
    best = (run / "weights" / "best.pt").read_bytes()
    same_size = bytes([best[0] ^ 1]) + best[1:]
    local.write_bytes(same_size)
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out))
    assert proc.returncode == 1 and "with different content" in one_line(proc.stderr)
    assert local.read_bytes() == same_size
    forced = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert local.read_bytes() == best
    assert os.listdir(local.parent) == ["best.pt"]


def test_a_fifo_in_the_way_never_blocks_and_is_refused(pushed, tmp_path) -> None:
    hub, _run = pushed
    out = tmp_path / "restore"
    (out / "exp1" / "weights").mkdir(parents=True)
    os.mkfifo(out / "exp1" / "weights" / "best.pt")
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out))
    assert proc.returncode == 1
    assert "is already here with not a regular file" in one_line(proc.stderr)


# -- bad downloads leave nothing ----------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("flip", "does not match the Hub's sha256"),
        ("cut", "the download broke off"),
        ("extra", "the Hub sent more than"),
    ],
)
def test_a_bad_download_leaves_nothing_under_the_real_name(pushed, tmp_path, how, expected) -> None:
    hub, run = pushed
    out = tmp_path / "restore"
    hub.fault_download("exp1/best.pt", how)
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out))
    assert proc.returncode == 1
    line = one_line(proc.stderr)
    assert line.startswith("rgpu-tui: weights/best.pt: ") and expected in line, line
    assert "nothing written" in line
    assert os.listdir(out / "exp1" / "weights") == []  # no best.pt, no temporary file
    # the server is fine again: the next pull brings it
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "exp1/weights/best.pt").read_bytes() == (run / "weights/best.pt").read_bytes()


def test_a_bad_download_with_force_keeps_the_old_local_file(pushed, tmp_path) -> None:
    hub, _run = pushed
    out = tmp_path / "restore"
    local = out / "exp1" / "status.json"
    local.parent.mkdir(parents=True)
    local.write_text('{"mine": true}\n')
    hub.fault_download("exp1/status.json", "flip")
    proc = rgpu(
        hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out), "--file", "all", "--force"
    )
    assert proc.returncode == 1
    assert "status.json: the download does not match the Hub's git-sha1" in proc.stderr
    assert local.read_text() == '{"mine": true}\n'
    assert not [p for p in local.parent.rglob("*.pull")]


def test_sigterm_during_a_download_leaves_nothing(pushed, tmp_path) -> None:
    hub, _run = pushed
    out = tmp_path / "restore"
    hub.stall_download_s = 30.0
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": hub.url,
        "HF_TOKEN": WRITE_TOKEN,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "rgpu_tui", "pull", REPO, "exp1", "--to", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        started = proc.stdout.readline()  # the handshake: its download has begun
        assert started.startswith("downloading weights/best.pt"), started
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted by SIGTERM" in one_line(err)
    assert os.listdir(out / "exp1" / "weights") == []


# -- one-line errors ----------------------------------------------------------------------


def test_unknown_repo_and_unknown_run_are_one_line_each(pushed, tmp_path) -> None:
    hub, _run = pushed
    out = tmp_path / "restore"
    proc = rgpu(hub.url, tmp_path, "pull", "alice/nothing", "exp1", "--to", str(out))
    assert proc.returncode == 1 and proc.stdout == ""
    assert one_line(proc.stderr).startswith(
        "rgpu-tui: pull failed: repo alice/nothing not found (404)"
    )
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp7", "--to", str(out))
    assert proc.returncode == 1 and proc.stdout == ""
    assert one_line(proc.stderr) == (
        f"rgpu-tui: pull failed: run exp7 is not in {REPO} (no files at exp7/{{file}}); "
        "runs there: exp1"
    )
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp7", "--to", str(out), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["files"] == [] and "exp7" in data["error"]
    assert not out.exists()  # a failed pull creates nothing


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (BAD_TOKEN, "rgpu-tui: pull failed: token rejected (401)"),
        (OTHER_TOKEN, f"rgpu-tui: pull failed: repo {REPO} not found (404)"),  # private
        (None, f"rgpu-tui: pull failed: repo {REPO} not found (404)"),
    ],
)
def test_a_token_that_cannot_read_is_one_line(pushed, tmp_path, token, expected) -> None:
    hub, _run = pushed
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(tmp_path), token=token)
    assert proc.returncode == 1 and proc.stdout == ""
    assert one_line(proc.stderr).startswith(expected)
    token_nowhere(proc.stdout, proc.stderr)


def test_an_unreachable_hub_is_one_line_within_the_timeout(tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://user:{WRITE_TOKEN}@127.0.0.1:{port}"  # credentials in the URL: not shown
    proc = rgpu(url, tmp_path, "pull", REPO, "exp1", "--to", str(tmp_path), "--timeout", "5")
    assert proc.returncode == 1
    assert one_line(proc.stderr).startswith(
        f"rgpu-tui: pull failed: cannot reach the Hub at http://127.0.0.1:{port}"
    )
    token_nowhere(proc.stdout, proc.stderr)


class SilentListener:
    """A port on 127.0.0.1 that accepts every connection and never answers (a Hub behind a
    proxy that hangs): only the client's own timeout ends a request. Counts what it took."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:  # closed
                return
            self.accepted.append(conn)  # held open, never read, never answered

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()
        self._thread.join(5)


def test_a_hub_that_never_answers_is_ended_by_the_timeout(tmp_path) -> None:
    """`--timeout` is what ends it: far below the default 60 s (a pull that ignored it
    runs past this test's 30 s deadline and fails here)."""
    hub = SilentListener()
    try:
        url = f"http://user:{WRITE_TOKEN}@127.0.0.1:{hub.port}"
        out = tmp_path / "restore"
        proc = rgpu(
            url, tmp_path, "pull", REPO, "exp1", "--to", str(out), "--timeout", "2", deadline=30
        )
        assert len(hub.accepted) >= 1  # it connected: no refusal ended it
    finally:
        hub.close()
    assert proc.returncode == 1 and proc.stdout == ""
    assert one_line(proc.stderr) == (
        "rgpu-tui: pull failed: the Hub did not answer within 2 s: try again later"
    )
    assert not out.exists()
    token_nowhere(proc.stdout, proc.stderr)


def test_a_stalled_download_times_out_and_leaves_nothing(pushed, tmp_path) -> None:
    hub, _run = pushed
    out = tmp_path / "restore"
    hub.stall_download_s = 30.0
    proc = rgpu(hub.url, tmp_path, "pull", REPO, "exp1", "--to", str(out), "--timeout", "1")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "rgpu-tui: pull failed: the Hub did not answer within 1 s: try again later"
    )
    assert os.listdir(out / "exp1" / "weights") == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["not-a-repo", "exp1"], "bad Hub repo 'not-a-repo'"),
        ([REPO, "../exp1"], "bad run name '../exp1'"),
        ([REPO, "exp1", "--file", "epoch_3"], "argument --file: invalid choice"),
        ([REPO, "exp1", "--timeout", "nan"], "argument --timeout"),
        ([REPO, "exp1", "--hub-path", "{run}/weights.pt"], "has no {file}"),
        ([REPO, "exp1", "--hub-path", "{run}/{file}/w.pt"], "puts {file} in a folder name"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, expected) -> None:
    proc = rgpu("http://127.0.0.1:9", tmp_path, "pull", *args, "--to", str(tmp_path / "o"))
    assert proc.returncode == 2, proc.stderr
    assert expected in one_line(proc.stderr)
    assert not (tmp_path / "o").exists()


# -- the server speaks what huggingface_hub's own download checks ------------------------------


def test_huggingface_hub_downloads_from_the_local_hub_with_its_own_checks(pushed, tmp_path):
    """hf_hub_download: HEAD metadata (X-Linked-Etag, the LFS redirect), GET, its own size
    check; get_paths_info: the LFS sha256 a watcher compares with pushes.jsonl."""
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url

    hub, run = pushed
    best = (run / "weights" / "best.pt").read_bytes()
    path = hf_hub_download(
        REPO, "exp1/best.pt", endpoint=hub.url, token=WRITE_TOKEN,
        cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    assert Path(path).read_bytes() == best
    meta = get_hf_file_metadata(
        hf_hub_url(REPO, "exp1/best.pt", endpoint=hub.url), token=WRITE_TOKEN
    )
    assert (meta.etag, meta.size, meta.commit_hash) == (
        hashlib.sha256(best).hexdigest(),
        len(best),
        hub.repos[REPO].head,
    )
    [info] = HfApi(endpoint=hub.url, token=WRITE_TOKEN).get_paths_info(REPO, ["exp1/best.pt"])
    assert (info.lfs.sha256, info.lfs.size) == (hashlib.sha256(best).hexdigest(), len(best))


def test_a_torn_checkpoint_on_the_hub_is_never_written(hub, tmp_path) -> None:
    """Another tool put a torn last.pt (a zip cut short) on the Hub: it matches the Hub's
    sha256, but is no checkpoint (core.run.torch_checkpoint): pull writes nothing under
    the real name, not even with --force over a good local one, and says why."""
    from huggingface_hub import HfApi

    from rgpu_tui.core.hub.hub_client import configure_hub

    configure_hub(30.0)  # LFS, as the local Hub speaks it (no xet)
    hub.create_repo(REPO)
    whole = checkpoint_bytes(300_000, 5)
    torn = tmp_path / "torn.pt"
    torn.write_bytes(whole[: len(whole) // 2])
    HfApi(endpoint=hub.url, token=WRITE_TOKEN).upload_file(
        path_or_fileobj=str(torn), path_in_repo="exp7/last.pt", repo_id=REPO
    )
    out = tmp_path / "restore"
    good = out / "exp7" / "weights" / "last.pt"
    good.parent.mkdir(parents=True)
    good.write_bytes(whole)
    proc = rgpu(
        hub.url, tmp_path, "pull", REPO, "exp7", "--to", str(out), "--file", "last", "--force"
    )
    assert proc.returncode == 1
    assert "weights/last.pt on the Hub: last.pt is not a complete torch checkpoint" in proc.stderr
    assert "nothing written" in proc.stderr
    assert good.read_bytes() == whole
    assert not list(good.parent.glob("*.pull"))
