"""End to end in a real tmux: the `rgpu-tui` console script in a private tmux server, at
80x24 and 200x50, on live runs with simulated GPUs, driven with the keys a user presses.

* a run replayed at a set pace by bench/replay.py (libreyolo's file formats): the epoch
  advances, the log moves, the sparklines change; j/k + enter switch the header; `c` the
  cost view; `?` the help; `p` pushes best.pt to a local Hub server; `q` exits 0;
* a real libreyolo CPU training (tests/support/training.py) watched at both sizes at once;
* a run launched from the app's form (`n`, ctrl+l) that survives `tmux kill-server`
  and completes.

The screen is read with `tmux capture-pane -p`, polled against deadlines (no fixed
sleeps). The app's exit status lands in a file (support.tmux.Tmux.start_app). The tmux
servers, the replayer, the Hub server and every trainer are killed on teardown.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from support.checkpoints import checkpoint_bytes
from support.hub_server import HubServer
from support.readme_example import PRICE_FLAGS
from support.tmux import Tmux, tmux_executable
from support.training import Training
from support.waiting import wait_until

from e2e.test_hub_push import WRITE_TOKEN, make_run
from rgpu_tui.core.records.launch_records import read_launches
from rgpu_tui.core.records.launch_runs import launch_alive

REPO = Path(__file__).resolve().parents[2]
RGPU_TUI = Path(sys.executable).parent / "rgpu-tui"
REPLAY = REPO / "bench" / "replay.py"
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((200, 50), id="200x50")]
TRAIN_TIMEOUT = 180.0  # a 3-epoch CPU run takes ~30 s here; generous for a loaded CI box
UI_TIMEOUT = 20.0
TRAIN_ENV = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}

HEADER_RE = re.compile(
    r"(?:^|\s)(RUN|DONE|FAIL|DEAD|STAL|NEW|\?)\s+(\S+)\s+(?:\S+\s+)?epoch (\d+|\?)/(\d+|\?)"
)
FOCUSED_BORDER = "▊▔▔"  # a focused launch-form Input drawn as the top of a tall border
SPARK_RE = re.compile(r"train/loss\s+([▁▂▃▄▅▆▇█]+)")


def _need_tmux() -> None:
    if tmux_executable() is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("tmux is not installed -- in CI the tmux tests must run", pytrace=False)
    pytest.skip("tmux is not installed")


# -- reading the screen --------------------------------------------------------------


def header(screen: str) -> tuple[str, str, int | None] | None:
    """(state, run name, epoch) of the run header: its first line says
    `STATE  name  model  epoch x/N` (the runs list and the log have no `epoch x/N`)."""
    for line in screen.splitlines():
        m = HEADER_RE.search(line)
        if m:
            epoch = int(m[3]) if m[3].isdigit() else None
            return m[1], m[2], epoch
    return None


def header_is(state: str | None, name: str, min_epoch: int = 0) -> Callable[[str], bool]:
    def check(screen: str) -> bool:
        h = header(screen)
        if h is None or h[1] != name or (state is not None and h[0] != state):
            return False
        return min_epoch == 0 or (h[2] is not None and h[2] >= min_epoch)

    return check


def log_box(screen: str) -> str:
    """The log pane's text: the rows under its `─ log` title row, from its column, down
    to the footer."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        col = line.find("─ log")
        if col < 0:
            continue
        rows = []
        for row in lines[i + 1 :]:
            if row.startswith(" q Quit"):
                break
            rows.append(row[col:])
        return "\n".join(rows)
    return ""


def sparkline(screen: str) -> str | None:
    m = SPARK_RE.search(screen)
    return m[1] if m else None


def no_dialog(screen: str) -> bool:
    """The main screen is back: the header and the footer, no dialog border on top."""
    return header(screen) is not None and " q Quit" in screen and "esc: " not in screen


# -- fixtures --------------------------------------------------------------------------


@pytest.fixture
def terminals() -> Iterator[Callable[[int, int], Tmux]]:
    """Make private tmux servers; every one is killed on teardown."""
    _need_tmux()
    made: list[Tmux] = []

    def make(width: int, height: int) -> Tmux:
        term = Tmux(width, height)
        made.append(term)
        return term

    try:
        yield make
    finally:
        for term in made:
            term.kill()


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The app's environment: a private HOME, so no real config or Hub cache is read."""
    h = tmp_path / "home"
    (h / ".config").mkdir(parents=True)
    return {
        "HOME": str(h),
        "XDG_CONFIG_HOME": str(h / ".config"),
        "HF_HOME": str(h / "hf"),
        "TMPDIR": str(tmp_path),
    }


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubServer]:
    server = HubServer(str(tmp_path / "hub-storage"))
    server.add_token(WRITE_TOKEN, "alice")
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Replay:
    """bench/replay.py in a child process (its pid is the run's pid: the run is alive)."""

    def __init__(self, run_dir: Path, epoch_seconds: float) -> None:
        self.run_dir = run_dir
        argv = [sys.executable, str(REPLAY), str(run_dir), "--epoch-seconds", str(epoch_seconds)]
        argv += ["--log-lines-per-second", "10", "--epochs", "1000", "--duration", "150"]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the replayer marks the run completed and exits
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def replayed(tmp_path: Path) -> Iterator[tuple[Path, Path, bytes]]:
    """A runs root with a completed run `older` and a live replayed run `replayed` (with
    a weights/best.pt to push); yields (root, replayed run dir, best.pt bytes)."""
    root = tmp_path / "runs"
    make_run(root, "older")
    run = root / "replayed"
    (run / "weights").mkdir(parents=True)
    best = checkpoint_bytes(200_000, seed=3)
    (run / "weights" / "best.pt").write_bytes(best)
    replay = Replay(run, epoch_seconds=1.0)
    try:
        yield root, run, best
    finally:
        replay.stop()


def _app_argv(root: Path, *extra: str) -> list[str]:
    return [str(RGPU_TUI), str(root), "--fake-gpus", "2", *extra]


# -- the replayed run -------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_replayed_run_keys_and_push(size, terminals, home, hub, replayed, tmp_path) -> None:
    root, run, best = replayed
    term = terminals(*size)
    env = {
        **home,
        "HF_ENDPOINT": hub.url,
        "HF_TOKEN": WRITE_TOKEN,
        "HF_HUB_DISABLE_XET": "1",
    }
    argv = _app_argv(root, "--interval", "0.5", "--hub-repo", "alice/ckpts", *PRICE_FLAGS)
    term.start_app(argv, tmp_path / "rc", env=env, cwd=tmp_path)
    screens: list[str] = []

    def seen(screen: str) -> str:
        screens.append(screen)
        return screen

    # the newest run is selected; its epoch advances, its log moves, its sparklines change
    first = seen(term.wait_for(header_is("RUN", "replayed", 2), "epoch 2/ of replayed", 30))
    e1 = header(first)[2]
    later = seen(term.wait_for(header_is("RUN", "replayed", e1 + 1), f"epoch {e1 + 1}/", 30))
    assert "/1000" in later and "simulated" in later
    log0, spark0 = log_box(first), sparkline(first)
    assert "Epoch" in log0, first
    seen(term.wait_for(lambda s: log_box(s) != log0, "the log to move"))
    seen(term.wait_for(lambda s: sparkline(s) not in (None, spark0), "the sparkline to change"))

    # j + enter: the other run in the header; k + enter: back
    term.send("j", "Enter")
    seen(term.wait_for(header_is("DONE", "older"), "the header to show older"))
    term.send("k", "Enter")
    seen(term.wait_for(header_is("RUN", "replayed"), "the header to show replayed again"))

    # c: the cost view with the stop-or-destroy advice; escape (alone) closes it
    term.send("c")
    cost = seen(term.wait_for(lambda s: "─ cost ─" in s and "destroy" in s, "the cost view"))
    assert "14.4" in cost and "$3.48/h" in cost, cost
    term.send("Escape")
    seen(term.wait_for(no_dialog, "the cost view to close"))

    # ?: the help; escape closes it
    term.send("?")
    seen(term.wait_for("supervise LibreYOLO training runs", "the help"))
    term.send("Escape")
    seen(term.wait_for(no_dialog, "the help to close"))

    # p: confirm, enter: pushed to the local Hub; the header says so
    term.send("p")
    confirm = seen(term.wait_for("enter: push", "the push dialog"))
    assert "alice/ckpts: replayed/best.pt" in confirm, confirm
    term.send("Enter")
    seen(term.wait_for("pushed best.pt", "the header's 'pushed best.pt'", 60))
    assert hub.file_bytes("alice/ckpts", "replayed/best.pt") == best
    assert len(hub.commits("alice/ckpts")) == 1

    term.send("q")
    assert term.wait_exit() == 0
    assert all(WRITE_TOKEN not in s for s in screens)


# -- a real training --------------------------------------------------------------------


@pytest.mark.training
def test_real_training_watched_at_both_sizes(terminals, home, trained_dataset, tmp_path) -> None:
    """One real 3-epoch CPU run, watched by two apps at once: 80x24 and 200x50."""
    training = Training(trained_dataset, tmp_path / "runs", name="live", epochs=3)
    training.start()
    try:
        terms = [terminals(80, 24), terminals(200, 50)]
        for i, term in enumerate(terms):
            env = {**home, **TRAIN_ENV}
            term.start_app(_app_argv(training.project), tmp_path / f"rc{i}", env=env, cwd=tmp_path)

        def details() -> str:
            return training.failure_message("(the app did not show it)")

        # epoch 1 lasts seconds: both apps show it RUN, then the epoch advances on both
        firsts = [
            term.wait_for(
                header_is("RUN", "live", 1), "RUN epoch 1/3", TRAIN_TIMEOUT, details=details
            )
            for term in terms
        ]
        for term in terms:
            screen = term.wait_for(
                header_is(None, "live", 2), "epoch 2/3", TRAIN_TIMEOUT, details=details
            )
            assert "/3" in screen and "simulated" in screen
        for term, first in zip(terms, firsts, strict=True):
            term.wait_for(header_is(None, "live", 3), "epoch 3/3", TRAIN_TIMEOUT, details=details)
            term.wait_for(lambda s, f=first: log_box(s) != log_box(f), "the log to move")
            term.wait_for(
                lambda s, f=first: sparkline(s) not in (None, sparkline(f)),
                "the sparkline to change",
            )
        training.wait_ok(TRAIN_TIMEOUT)
        for term in terms:
            done = term.wait_for(header_is("DONE", "live", 3), "DONE 3/3", details=details)
            assert "100%" in done
            term.send("q")
        for term in terms:
            assert term.wait_exit() == 0
    finally:
        training.cleanup()


# -- a run launched from the app -----------------------------------------------------------


def _kill_launched(project: Path) -> None:
    for record in read_launches(str(project)):
        if launch_alive(record):
            try:
                os.killpg(record.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _row_of(screen: str, label: str) -> int | None:
    for i, line in enumerate(screen.splitlines()):
        if line.startswith(f"│ {label} "):
            return i
    return None


def _flat(screen: str) -> str:
    """The screen's text without whitespace and box sides: a wrapped command joins up."""
    return re.sub(r"[\s│]", "", screen)


def _wait_focus(term: Tmux, label: str) -> None:
    """Wait until the field labelled `label` has the focus.

    Textual hands a key to the widget focused when the key is read and moves the focus
    later, so keys typed right after a tab (or before the form's first field has the
    focus) land elsewhere. What the screen shows once the focus is there: the cursor,
    which Textual puts in the focused Input, on the field's row; or, while the focused
    Input is drawn as its border only (`▊▔▔▔`, an app bug), that border on the row.
    """

    def arrived(screen: str) -> bool:
        row = _row_of(screen, label)
        if row is None:
            return False
        if FOCUSED_BORDER in screen:
            return FOCUSED_BORDER in screen.splitlines()[row]
        return term.cursor()[1] == row

    term.wait_for(arrived, f"the focus on {label!r}")


def _move_focus(term: Tmux, key: str, label: str) -> None:
    """Press tab or shift+tab and wait until the field labelled `label` has the focus."""
    term.send(key)
    _wait_focus(term, label)


def _set_field(term: Tmux, text: str, shows: str) -> None:
    """Type text into the focused Input and wait until the form's command line shows
    `shows` (whitespace ignored).

    An Input selects its text when it gets the focus, so typing replaces it. No ctrl+a /
    ctrl+k / ctrl+u: Textual runs those as bindings once the key has bubbled up to the
    app, after printable keys read later have been inserted (see the report).
    """
    term.type(text)
    want = re.sub(r"\s", "", shows)
    term.wait_for(lambda s: want in _flat(s), f"the command to show {shows!r}")


@pytest.mark.training
def test_launched_run_survives_kill_server(terminals, home, trained_dataset, tmp_path) -> None:
    project = tmp_path / "runs"
    project.mkdir()
    term = terminals(80, 24)
    try:
        term.start_app(_app_argv(project), tmp_path / "rc", env={**home, **TRAIN_ENV}, cwd=tmp_path)
        term.wait_for(" q Quit", "the app")
        term.send("n")
        term.wait_for("launch a training run", "the launch form")
        # focus starts in data (the command shows once data is set); shift+tab goes back
        # to model, then tab through the rest
        _wait_focus(term, "data.yaml")
        _set_field(term, str(trained_dataset), f"data={trained_dataset}")
        _move_focus(term, "BTab", "model")
        _set_field(term, "yolo9-t", "model=yolo9-t")
        _move_focus(term, "Tab", "data.yaml")
        for label, value in (("epochs", "3"), ("batch", "4"), ("imgsz", "128"), ("device", "cpu")):
            _move_focus(term, "Tab", label)
            _set_field(term, value, f"{label}={value}")
        _move_focus(term, "Tab", "project")  # keeps its default: the runs root
        _move_focus(term, "Tab", "name")
        _set_field(term, "tmuxrun", "name=tmuxrun")
        _move_focus(term, "Tab", "extra")
        _set_field(term, "pretrained=False workers=0 amp=False", "pretrained=False workers=0")
        command = (
            f"$ libreyolo train model=yolo9-t data={trained_dataset} "
            f"epochs=3 batch=4 imgsz=128 device=cpu project={project} name=tmuxrun "
            "pretrained=False workers=0 amp=False"
        )
        term.wait_for(lambda s: _flat(command) in _flat(s), "the whole command")
        term.send("C-l")

        # the doctor warns about the tiny dataset: ctrl+l again launches anyway (at 80x24
        # the line that says so is below the fold: only "dataset warnings:" shows)
        def launched_or_warned(screen: str) -> bool:
            if "dataset errors:" in screen or "launch failed:" in screen:
                term.fail("the form refused to launch", screen)
            return "launch a training run" not in screen or "dataset warnings:" in screen

        screen = term.wait_for(launched_or_warned, "the launch or the doctor's warnings", 120)
        if "dataset warnings:" in screen:
            term.send("C-l")
        term.wait_for(lambda s: "launch a training run" not in s, "the form to close", 120)
        screen = term.wait_for(
            header_is("RUN", "tmuxrun"), "the launched run in the header", TRAIN_TIMEOUT
        )
        [record] = read_launches(str(project))
        run_dir = project / "tmuxrun"
        assert _status(run_dir).get("pid") == record.pid

        wrapper = psutil.Process(term.pane_pid())
        app = wrapper.children()  # the rgpu-tui process, the trainer's parent
        assert len(app) == 1 and record.pid in {c.pid for c in app[0].children()}, app
        term.kill()  # tmux kill-server: the app goes, the run stays
        assert not term.server_running()
        _, alive = psutil.wait_procs([wrapper, *app], timeout=UI_TIMEOUT)
        assert not alive, f"the app outlived tmux kill-server: {alive}"
        proc = psutil.Process(record.pid)
        assert proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
        assert launch_alive(record)

        def console() -> str:
            try:
                return Path(record.console_log).read_text(errors="replace")[-3000:]
            except OSError as exc:
                return f"<console log unreadable: {exc}>"

        wait_until(
            lambda: _status(run_dir).get("state") == "completed",
            "status.json to say completed",
            TRAIN_TIMEOUT,
            console,
        )
        status = _status(run_dir)
        assert status.get("completed_epochs") == 3, status
        wait_until(lambda: not launch_alive(record), "the trainer to exit", 60, console)
    finally:
        term.kill()
        _kill_launched(project)
