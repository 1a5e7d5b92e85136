"""Hostile run directories against the actions (push, stop, launch), at the system level.

A run directory is written by the trainer, which may be buggy or hostile: symlinks out of
the run, FIFOs where files should be, credentials in HF_ENDPOINT. rgpu-tui runs here as a
subprocess with a timeout (a hang fails the test instead of hanging the suite), pushing to
the local Hub server, which keeps what it received.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from e2e.test_hub_push import WRITE_TOKEN
from e2e.test_hub_push import make_run as make_hub_run
from support.checkpoints import checkpoint_bytes

from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.push import PushRequest, push, staging_dir
from rgpu_tui.core.records.push_records import pushes_path, read_pushes

REPO = "alice/ckpts"
SECRET = b"SECRET-OUTSIDE-THE-RUN\n"


def push_cli(hub_url: str, run: Path, home: Path, *args: str, timeout: float = 30, **env):
    """`rgpu-tui push RUN --repo alice/ckpts --settle 0.05 ...`; a hang raises TimeoutExpired."""
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "HF_ENDPOINT": hub_url,
        "HF_TOKEN": WRITE_TOKEN,
        "HF_HUB_DISABLE_XET": "1",
        **env,
    }
    argv = [sys.executable, "-m", "rgpu_tui", "push", str(run), "--repo", REPO]
    return subprocess.run(
        [*argv, "--settle", "0.05", "--timeout", "10", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python(code: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """A snippet in a fresh interpreter; a hang raises TimeoutExpired."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def records(run: Path) -> list[dict]:
    """pushes.jsonl, every line a complete JSON object."""
    raw = Path(pushes_path(str(run))).read_bytes()
    assert raw.endswith(b"\n")
    parsed = [json.loads(line) for line in raw.splitlines()]
    assert parsed == read_pushes(str(run))
    return parsed


def received(hub) -> bytes:
    """Every byte the Hub server holds: LFS objects and the files of every commit."""
    out = b""
    for repo in list(hub.repos):
        for i, commit in enumerate(hub.commits(repo)):
            for path in commit.files:
                out += hub.file_bytes(repo, path, i)
    return out


def staging_files(run: Path) -> list[str]:
    try:
        return sorted(os.listdir(staging_dir(str(run))))
    except FileNotFoundError:
        return []


# -- symlinks out of the run ---------------------------------------------------------


def test_an_artifact_symlinked_out_of_the_run_is_skipped_with_a_notice(hub, tmp_path) -> None:
    """train_config.yaml -> a file outside the run, status.json -> /etc/passwd: neither
    reaches the Hub; the CLI prints why, the record keeps it; the rest is pushed."""
    run = make_hub_run(tmp_path / "runs")
    secret = tmp_path / "outside" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    (run / "train_config.yaml").unlink()
    (run / "train_config.yaml").symlink_to(secret)
    (run / "status.json").unlink()
    (run / "status.json").symlink_to("/etc/passwd")
    proc = push_cli(hub.url, run, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    [commit] = hub.commits(REPO)
    assert sorted(commit.files) == [
        "exp1/best.pt", "exp1/metrics.jsonl", "exp1/results.csv", "exp1/summary.json",
    ]  # fmt: skip
    everything = received(hub)
    assert SECRET not in everything and b"root:" not in everything
    expected = [
        "status.json resolves to /etc/passwd, outside the run directory (skipped)",
        f"train_config.yaml resolves to {secret}, outside the run directory (skipped)",
    ]
    assert [f"rgpu-tui: {n}" for n in expected] == proc.stderr.splitlines()
    [record] = records(run)
    assert record["outcome"] == "ok" and record["notices"] == expected


def test_a_checkpoint_symlinked_out_of_the_run_is_not_pushed(hub, tmp_path) -> None:
    run = make_hub_run(tmp_path / "runs")
    elsewhere = tmp_path / "outside" / "other.pt"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(checkpoint_bytes(50_000, seed=9))
    best = run / "weights" / "best.pt"
    best.unlink()
    best.symlink_to(elsewhere)
    proc = push_cli(hub.url, run, tmp_path / "home")
    assert proc.returncode == 1
    line = f"best.pt resolves to {elsewhere}, outside the run directory: not pushed"
    assert proc.stderr == f"rgpu-tui: push failed: {line}\n"
    assert hub.requests == [] and staging_files(run) == []
    [record] = records(run)
    assert (record["outcome"], record["error"]) == ("error", line)
    # --file PATH is held to the same rule
    proc = push_cli(hub.url, run, tmp_path / "home", "--file", str(elsewhere))
    assert proc.returncode == 1 and "outside the run directory: not pushed" in proc.stderr
    assert hub.requests == []


def test_a_best_pt_symlinked_inside_the_run_is_pushed(hub, tmp_path) -> None:
    run = make_hub_run(tmp_path / "runs")
    best = run / "weights" / "best.pt"
    epoch = run / "weights" / "epoch_37.pt"
    best.rename(epoch)
    best.symlink_to("epoch_37.pt")
    proc = push_cli(hub.url, run, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert hub.file_bytes(REPO, "exp1/best.pt") == epoch.read_bytes()


# -- credentials in HF_ENDPOINT -------------------------------------------------------


def test_credentials_in_hf_endpoint_are_never_recorded_or_printed(hub, tmp_path) -> None:
    password = "pw-" + "Zq8xKcV3mT"
    endpoint = hub.url.replace("http://", f"http://someone:{password}@")
    for args in ((), ("--json",)):
        proc = push_cli(hub.url, make_hub_run(tmp_path / f"r{len(args)}"), tmp_path, *args,
                        HF_ENDPOINT=endpoint)  # fmt: skip
        assert password not in proc.stdout + proc.stderr
        assert "someone" not in proc.stdout + proc.stderr
    for run in (tmp_path / "r0" / "exp1", tmp_path / "r1" / "exp1"):
        raw = Path(pushes_path(str(run))).read_text()
        assert password not in raw and "someone" not in raw
        [record] = records(run)
        assert record["endpoint"] == hub.url


# -- FIFOs where files should be ------------------------------------------------------


@pytest.mark.parametrize("name", ["results.csv", "train_config.yaml"])
def test_a_fifo_artifact_is_skipped_with_a_notice(hub, tmp_path, name) -> None:
    run = make_hub_run(tmp_path / "runs")
    (run / name).unlink()
    os.mkfifo(run / name)
    proc = push_cli(hub.url, run, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"rgpu-tui: {name} skipped: not a regular file\n"
    [commit] = hub.commits(REPO)
    assert f"exp1/{name}" not in commit.files and "exp1/best.pt" in commit.files
    assert records(run)[-1]["notices"] == [f"{name} skipped: not a regular file"]


def test_a_fifo_checkpoint_fails_the_push_in_one_line(hub, tmp_path) -> None:
    run = make_hub_run(tmp_path / "runs")
    (run / "weights" / "best.pt").unlink()
    os.mkfifo(run / "weights" / "best.pt")
    proc = push_cli(hub.url, run, tmp_path / "home")
    assert proc.returncode == 1
    assert proc.stderr == "rgpu-tui: push failed: best.pt is not a regular file\n"
    assert hub.requests == [] and staging_files(run) == []


def test_a_fifo_metrics_jsonl_neither_hangs_the_push_nor_the_confirm(hub, tmp_path) -> None:
    """metrics.jsonl gives the checkpoint's epoch and metric (the commit message, the
    app's confirm dialog): as a FIFO it is skipped and they are unknown."""
    run = make_hub_run(tmp_path / "runs")
    (run / "metrics.jsonl").unlink()
    os.mkfifo(run / "metrics.jsonl")
    proc = push_cli(hub.url, run, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "rgpu-tui: metrics.jsonl skipped: not a regular file\n"
    [commit] = hub.commits(REPO)
    assert commit.message == "exp1: best.pt"
    info = run_python(SELECTED_CHECKPOINTS.format(run=str(run)))
    assert json.loads(info.stdout)["best.pt"]["epoch"] is None, info.stderr


SELECTED_CHECKPOINTS = """
import json, time
from rgpu_tui.core.picture.watch import RunsWatcher
snap = RunsWatcher({run!r}).refresh(time.time(), selected={run!r})
print(json.dumps({{c.name: {{"exists": c.exists, "problem": c.problem, "epoch": c.epoch}}
                  for c in snap.selected.checkpoints}}))
"""


def test_a_fifo_checkpoint_and_metrics_in_the_confirm_dialog(tmp_path) -> None:
    """What the app's push confirm shows (the Snapshot's checkpoints, built by the refresh)
    never blocks, and says why a FIFO best.pt cannot be pushed."""
    run = make_hub_run(tmp_path / "runs")
    for path in (run / "metrics.jsonl", run / "weights" / "best.pt"):
        path.unlink()
        os.mkfifo(path)
    info = run_python(SELECTED_CHECKPOINTS.format(run=str(run)))
    got = json.loads(info.stdout)["best.pt"]
    assert (got["exists"], got["problem"], got["epoch"]) == (
        True, "best.pt is not a regular file", None,
    )  # fmt: skip


def test_a_fifo_status_json_never_hangs_stop(tmp_path) -> None:
    run = tmp_path / "runs" / "exp1"
    run.mkdir(parents=True)
    os.mkfifo(run / "status.json")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "stop", str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert proc.stderr == f"rgpu-tui: {run}: no readable status.json; nothing sent\n"


def test_fifos_never_hang_a_launch(tmp_path) -> None:
    """`rgpu-tui launch` waits for the run directory by reading the status.json of every
    NAME, NAME2...: a FIFO there is passed over; and the console log of a launch that died,
    replaced by a FIFO, gives no tail instead of a hang."""
    project = tmp_path / "runs"
    (project / "exp").mkdir(parents=True)
    os.mkfifo(project / "exp" / "status.json")  # a clashing run: libreyolo makes exp2
    data = tmp_path / "data.yaml"
    data.write_text("train: a\nval: b\nnc: 1\nnames: {0: a}\n")
    fake = tmp_path / "bin" / "libreyolo"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "args = dict(a.split('=', 1) for a in sys.argv[2:])\n"
        "run = os.path.join(args['project'], args['name'] + '2')\n"
        "os.makedirs(run)\n"
        "json.dump({'state': 'completed', 'pid': os.getpid()},"
        " open(os.path.join(run, 'status.json'), 'w'))\n"
    )
    fake.chmod(0o755)
    proc = run_python(
        f"""
        import sys
        import rgpu_tui.core.launch.launch_spec as launch_spec
        from rgpu_tui.cli import main
        launch_spec.libreyolo_executable = lambda: {str(fake)!r}
        sys.exit(main(["launch", "--project", {str(project)!r}, "--no-doctor", "--json",
                       "--", "data={data}", "device=cpu"]))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["run_dir"] == str(project / "exp2")

    # a launch whose process is gone and whose console log is now a FIFO
    console = tmp_path / "console.log"
    os.mkfifo(console)
    gone = subprocess.Popen(["true"])
    gone.wait()
    state = run_python(
        f"""
        from rgpu_tui.core.records.launch_records import LaunchRecord
        from rgpu_tui.core.records.launch_runs import launch_state
        record = LaunchRecord(id="x", time=0.0, pid={gone.pid}, create_time=None, argv=(),
                              command="", cwd="/", project={str(tmp_path / "empty")!r},
                              name="exp", console_log={str(console)!r})
        state = launch_state(record, 10.0)
        print(state.state, state.tail)
        """
    )
    assert state.stdout == "died ()\n", state.stderr


# -- a push killed by SIGTERM ----------------------------------------------------------


@contextmanager
def uploading_push(hub, run: Path, home: Path) -> Iterator[subprocess.Popen]:
    """`rgpu-tui push RUN` as a subprocess, given once the Hub holds its upload (set
    hub.stall_put_s first); killed on the way out if it still runs."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "HF_ENDPOINT": hub.url,
        "HF_TOKEN": WRITE_TOKEN,
        "HF_HUB_DISABLE_XET": "1",
    }
    argv = [sys.executable, "-m", "rgpu_tui", "push", str(run), "--repo", REPO, "--settle", "0.05"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not hub.puts:  # the checkpoint reached the Hub, which holds the answer
            assert proc.poll() is None, "the push ended before its upload"
            assert time.monotonic() < deadline, "the upload never started"
            time.sleep(0.02)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_push_killed_by_sigterm_records_interrupted_and_the_next_completes(hub, tmp_path) -> None:
    """`rgpu-tui push` gets SIGTERM while the Hub holds its upload: one complete record
    "interrupted by SIGTERM", its staging copy removed, nothing committed, exit 143; the
    next push completes."""
    run = make_hub_run(tmp_path / "runs", size=2_000_000)
    hub.stall_put_s = 60
    with uploading_push(hub, run, tmp_path / "home") as proc:
        assert any(f".{proc.pid}." in n for n in staging_files(run))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.decode() == "rgpu-tui: push interrupted by SIGTERM (recorded)\n"
    [record] = records(run)
    assert (record["outcome"], record["error"]) == ("error", "interrupted by SIGTERM")
    assert record["file"] == "best.pt" and record["sha256"]
    assert staging_files(run) == []
    assert hub.commits(REPO) == []

    hub.stall_put_s = 0
    result = push(
        PushRequest(str(run), "best.pt"), Settings(hub_repo=REPO), endpoint=hub.url,
        token=WRITE_TOKEN, settle_s=0.02, timeout=10,
    )  # fmt: skip
    assert result.ok and not result.skipped_unchanged, result.error
    assert hub.file_bytes(REPO, "exp1/best.pt") == (run / "weights" / "best.pt").read_bytes()
    assert [r["outcome"] for r in records(run)] == ["error", "ok"]
    assert staging_files(run) == []


def test_a_push_interrupted_by_ctrl_c_is_recorded_without_a_traceback(hub, tmp_path) -> None:
    run = make_hub_run(tmp_path / "runs", size=2_000_000)
    hub.stall_put_s = 60
    with uploading_push(hub, run, tmp_path / "home") as proc:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT
    assert err.decode() == "rgpu-tui: push interrupted by SIGINT (recorded)\n"
    [record] = records(run)
    assert record["error"] == "interrupted by SIGINT"
    assert staging_files(run) == []
