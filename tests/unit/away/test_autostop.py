"""core.away.autostop with a fake clock: the command (a real process that records its argv) runs
once per idle stretch, only when every run's newest weights match their last push; held
otherwise (autostop_held at most hourly); what a restarted watcher knows from the record.

The Hub is a stand-in function here (tests/e2e/test_autostop.py asks the local Hub server);
everything else is real: files, hashes, the command, the record and plan files, the flock.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.run_dir import make_run as build_run

from rgpu_tui.core.away.autostop import HELD_REPEAT_S, Autostop
from rgpu_tui.core.away.events import EventEngine
from rgpu_tui.core.base.config import Settings
from rgpu_tui.core.hub.weights_safety import HubCheck, HubFile, WeightsChecker
from rgpu_tui.core.machine.setup_procs import SetupWatcher
from rgpu_tui.core.model.snapshot import CostView, RunInfo, Snapshot
from rgpu_tui.core.picture.collect import Collector
from rgpu_tui.core.records.autostop_files import AutostopFiles, Hold, someone_holds

NOW = 1_800_000_000.0
LIMIT_MIN = 10.0
# appends its arguments as one JSON line to the file named first
RECORD = (
    "import json, sys\n"
    "with open(sys.argv[1], 'a') as f:\n"
    "    f.write(json.dumps(sys.argv[2:]) + '\\n')\n"
)


def run_info(run_dir: Path, activity: float = NOW - 7200, state: str = "completed") -> RunInfo:
    return RunInfo(
        run_dir=str(run_dir),
        name=run_dir.name,
        state=state,
        status_state=state,
        current_epoch=10,
        total_epochs=10,
        progress=1.0,
        activity=activity,
    )


def make_run(root: Path, name: str, weights: dict[str, bytes] | None = None) -> Path:
    """A run with only its weights, each settled long ago (by the fake clock)."""
    run = build_run(root, name, weights=weights)
    (run / "weights").mkdir(exist_ok=True)
    for file in weights or {}:
        os.utime(run / "weights" / file, (NOW - 3600, NOW - 3600))
    return run


def record_push(run: Path, file: str, data: bytes, outcome: str = "ok", **extra) -> None:
    rec = {
        "time": "2027-01-15T07:00:00Z",
        "file": file,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "repo": "alice/ckpts",
        "path": f"{run.name}/{file}",
        "endpoint": "https://hub.invalid",
        "outcome": outcome,
        "error": None,
        **extra,
    }
    (run / ".rgpu").mkdir(exist_ok=True)
    with open(run / ".rgpu" / "pushes.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


class StandInHub:
    """What lookup_on_hub would say: every file confirmed, unless told otherwise."""

    def __init__(self) -> None:
        self.asked = 0
        self.status = "confirmed"
        self.unreachable: str | None = None

    def __call__(self, weights) -> HubCheck:
        self.asked += 1
        if self.unreachable:
            files = tuple(HubFile(w, "unchecked", "") for w in weights)
            return HubCheck(0.0, files, self.unreachable)
        detail = "alice/ckpts: x" + ("" if self.status == "confirmed" else " is another file")
        return HubCheck(0.0, tuple(HubFile(w, self.status, detail) for w in weights), None)


class Rig:
    """An Autostop over tmp_path/runs with a fake clock; `look(t)` is one refresh at t with
    the machine idle since `idle_since` (or busy when None)."""

    def __init__(self, tmp_path: Path, *, command=None, environ=None, **settings) -> None:
        self.tmp = tmp_path
        self.root = tmp_path / "runs"
        self.root.mkdir(exist_ok=True)
        self.out = tmp_path / "ran.jsonl"
        self.environ = {"PATH": os.environ.get("PATH", ""), "POD": "pod-42"}
        if environ is not None:
            self.environ = environ
        self.command = command or (sys.executable, "-c", RECORD, str(self.out), "stop", "$POD")
        settings.setdefault("autostop_idle_minutes", LIMIT_MIN)
        self.settings = Settings(autostop_command=self.command, **settings)
        state = {"XDG_STATE_HOME": str(tmp_path / "st")}
        self.files = AutostopFiles.for_root(str(self.root), state)
        self.hub = StandInHub()
        self.events: list = []
        self.said: list[str] = []
        self.engine_state: dict | None = None
        self.runs: list[RunInfo] = []
        self.idle_since: float | None = NOW
        self.start()

    token: str | None = None

    def start(self, machine_started_at: float = NOW - 86400) -> Autostop:
        self.engine = EventEngine(self.settings, self.engine_state, pushes=False)
        self.checker = WeightsChecker(hub_lookup=self.hub)
        self.autostop = Autostop(
            self.settings,
            str(self.root),
            self.events.append,
            engine=self.engine,
            files=self.files,
            checker=self.checker,
            environ=self.environ,
            say=self.said.append,
            machine_started_at=machine_started_at,
            token=self.token,
        )
        return self.autostop

    def restart(self, **kw) -> Autostop:
        self.autostop.close()
        self.engine_state = self.engine.state()
        return self.start(**kw)

    def look(self, t: float) -> str:
        stretch = None if self.idle_since is None else max(t - self.idle_since, 0.0)
        snap = Snapshot(
            generated_at=t,
            root=str(self.root),
            root_exists=True,
            runs=tuple(self.runs),
            selected=None,
            cost=CostView(configured=False, idle_now_seconds=stretch),
        )
        self.autostop.step(snap)
        return self.autostop.phase

    def settle(self, t: float) -> str:
        """Looks at t until hashing, the Hub and the command are done."""
        for _ in range(50):
            phase = self.look(t)
            if phase not in ("checking", "running"):
                return phase
            self.checker.wait_idle(10)
            assert self.autostop.wait_command(30)
        raise AssertionError(f"still {phase}")

    def ran(self) -> list[list[str]]:
        try:
            return [json.loads(line) for line in self.out.read_text().splitlines()]
        except FileNotFoundError:
            return []

    def named(self, name: str) -> list:
        return [e for e in self.events if e.event == name]

    def close(self) -> None:
        self.autostop.close()


@pytest.fixture
def rig(short_tmp: Path):
    """rig(**settings): a Rig under a short temp folder (its events name paths and are cut at
    400 characters: a long --basetemp would cut what the tests read)."""
    made: list[Rig] = []

    def make(**kw) -> Rig:
        r = Rig(short_tmp, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


DUE = NOW + LIMIT_MIN * 60


# -- held, and told at most hourly ---------------------------------------------------------


def test_held_while_best_pt_is_not_pushed_told_at_most_hourly_and_runs_once_pushed(rig) -> None:
    r = rig()
    data = b"weights v1" * 1000
    run = make_run(r.root, "exp1", {"best.pt": data, "last.pt": b"older"})
    r.runs = [run_info(run)]
    assert r.look(NOW + 60) == "counting"  # not due yet: nothing told
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert "exp1: best.pt was never pushed" in held.message
    assert f"`rgpu-tui push {run}`" in held.message and "`p` in the app" in held.message
    for t in (DUE + 60, DUE + 1800, DUE + HELD_REPEAT_S - 1):
        assert r.settle(t) == "held"
    assert len(r.named("autostop_held")) == 1  # not every refresh
    r.settle(DUE + HELD_REPEAT_S + 1)
    assert len(r.named("autostop_held")) == 2  # an hour later, again
    assert r.ran() == []

    record_push(run, "best.pt", data)
    assert r.settle(DUE + HELD_REPEAT_S + 10) == "ran"
    assert r.ran() == [["stop", "pod-42"]]  # $POD filled in from the environment
    [fired] = r.named("autostop")
    assert "all weights on the Hub (exp1 best.pt), checked on the Hub" in fired.message
    assert "running autostop_command" in fired.message and "$POD" in fired.message
    # once: later looks in the same idle stretch run nothing
    for t in (DUE + HELD_REPEAT_S + 20, DUE + 3 * HELD_REPEAT_S):
        assert r.settle(t) == "ran"
    assert r.ran() == [["stop", "pod-42"]]
    assert [e.event for e in r.events].count("autostop") == 1


def test_best_pt_changed_since_its_push_holds(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": b"new weights"})
    record_push(run, "best.pt", b"old weights", epoch=7)
    r.runs = [run_info(run)]
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert "exp1: best.pt changed since its last push (epoch 7)" in held.message


def test_last_pt_counts_when_there_is_no_best_pt(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"last.pt": b"last weights"})
    r.runs = [run_info(run)]
    assert r.settle(DUE) == "held"
    assert "exp1: last.pt was never pushed" in r.named("autostop_held")[0].message
    record_push(run, "last.pt", b"last weights")
    assert r.settle(DUE + 5) == "ran"


def test_a_run_with_no_weights_never_holds(rig) -> None:
    r = rig()
    bare = make_run(r.root, "no_weights")
    fifo_run = make_run(r.root, "fifo_weights")
    os.mkfifo(fifo_run / "weights" / "best.pt")  # not weights: nothing to lose, never read
    r.runs = [run_info(bare), run_info(fifo_run)]
    assert r.settle(DUE) == "ran"
    assert r.named("autostop_held") == []
    assert f"no weights under {r.root} (2 runs found, none with weights)" in (
        r.named("autostop")[0].message
    )
    assert r.ran() == [["stop", "pod-42"]]


def test_a_file_still_being_written_is_not_safe_yet(rig) -> None:
    r = rig()
    data = b"weights" * 100
    run = make_run(r.root, "exp1", {"best.pt": data})
    record_push(run, "best.pt", data)
    os.utime(run / "weights" / "best.pt", (DUE - 2, DUE - 2))  # written 2 s before
    r.runs = [run_info(run)]
    for _ in range(3):
        assert r.look(DUE) == "checking"
        r.checker.wait_idle(10)
    assert r.checker.hashed == 0 and r.ran() == []
    assert r.settle(DUE + 10) == "ran"


def test_the_hub_disagreeing_holds_and_an_unreachable_hub_holds_unless_trusted(rig) -> None:
    r = rig()
    data = b"weights" * 100
    run = make_run(r.root, "exp1", {"best.pt": data})
    record_push(run, "best.pt", data)
    r.runs = [run_info(run)]
    r.hub.status = "different"
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert "the Hub disagrees: exp1 best.pt: alice/ckpts: x is another file" in held.message
    assert f"rgpu-tui push {run} --force" in held.message

    r2 = rig()  # the same files, a Hub that cannot be reached: held
    r2.events.clear()
    r2.runs = [run_info(run)]
    r2.hub.unreachable = "cannot reach the Hub at https://hub.invalid: connection refused"
    assert r2.settle(DUE) == "held"
    [held] = r2.named("autostop_held")
    assert held.message.startswith(
        "autostop held: cannot confirm on the Hub: cannot reach the Hub at https://hub.invalid"
    )
    assert "autostop_trust_records = true" in held.message and r2.ran() == []

    r3 = rig(autostop_trust_records=True)  # the old behaviour, asked for
    r3.events.clear()
    r3.runs = [run_info(run)]
    r3.hub.unreachable = "cannot reach the Hub at https://hub.invalid: connection refused"
    assert r3.settle(DUE) == "ran"
    [fired] = r3.named("autostop")
    assert "the Hub could not be asked (cannot reach the Hub" in fired.message
    assert "pushes.jsonl trusted (autostop_trust_records)" in fired.message


# -- once per idle stretch, and what a restart knows ---------------------------------------


def test_busy_then_idle_again_is_a_new_stretch(rig) -> None:
    r = rig()
    assert r.settle(DUE) == "ran"
    r.idle_since = None
    assert r.look(DUE + 100) == "busy"
    r.idle_since = DUE + 200
    assert r.settle(DUE + 200 + 60) == "counting"
    assert r.settle(DUE + 200 + LIMIT_MIN * 60) == "ran"
    assert len(r.ran()) == 2
    kinds = [rec["event"] for rec in r.files.records()]
    assert kinds == ["started", "finished", "rearmed", "started", "finished"]
    assert os.stat(r.files.record).st_mode & 0o777 == 0o600


def test_a_run_appearing_while_the_watcher_looks_is_no_new_stretch(rig) -> None:
    """Only a refresh that is not idle ends the stretch for a watcher that saw it all (a
    pulled run's fresh files are not a busy machine)."""
    r = rig()
    assert r.settle(DUE) == "ran"
    r.runs = [run_info(make_run(r.root, "pulled"), activity=DUE + 50)]
    assert r.settle(DUE + 100) == "ran"
    assert r.settle(DUE + 100 + 2 * LIMIT_MIN * 60) == "ran"
    assert len(r.ran()) == 1


def test_a_restarted_watcher_does_not_run_it_again_in_the_same_stretch(rig) -> None:
    r = rig()
    assert r.settle(DUE) == "ran"
    r.restart()
    r.idle_since = DUE + 30  # the new watcher's idle clock starts again
    assert r.settle(DUE + 30 + 2 * LIMIT_MIN * 60) == "ran"
    assert len(r.ran()) == 1
    # a run that changed while nobody looked: the machine was busy, a new stretch
    later = make_run(r.root, "exp_new")
    r.runs = [run_info(later, activity=DUE + 3000)]
    r.restart()
    assert r.settle(DUE + 4000) == "ran"
    assert len(r.ran()) == 2


def test_a_command_that_killed_its_watcher_counts_as_run_but_a_machine_restart_rearms(
    rig,
) -> None:
    r = rig()
    r.files.append({"at": "2027-01-15T08:10:00+00:00", "event": "started", "command": ["x"]})
    r.restart()  # `shutdown -h now` took the watcher down before "finished" was written
    assert r.settle(DUE + 600) == "ran" and r.ran() == []
    r.restart(machine_started_at=NOW + 1000)  # the machine was started again since
    assert r.settle(DUE + 700) == "ran" and len(r.ran()) == 1
    assert "the machine was started again" in json.dumps(r.files.records())


def test_a_failing_command_is_told_with_its_status_and_output_and_a_restart_tries_again(
    rig,
) -> None:
    code = "import sys; print('vastai: 401 Unauthorized: bad api key'); sys.exit(3)"
    r = rig(command=(sys.executable, "-c", code))
    assert r.settle(DUE) == "failed"
    [failed] = r.named("autostop_failed")
    assert "autostop_command failed: exit status 3: vastai: 401 Unauthorized" in failed.message
    assert "the machine is still up" in failed.message
    assert r.settle(DUE + 600) == "failed"  # not again in this stretch, by this watcher
    assert len(r.named("autostop")) == 1
    r.restart()
    r.settle(DUE + 700)
    assert len(r.named("autostop")) == 2  # a restarted watcher (maybe fixed) tries again


def test_an_unset_variable_is_said_once_and_nothing_runs(rig) -> None:
    r = rig(environ={"PATH": os.environ.get("PATH", "")})
    assert r.autostop.warnings() == [
        "autostop_command needs $POD, not set here: autostop would fail"
    ]
    assert r.settle(DUE) == "failed"
    assert r.settle(DUE + 60) == "failed"
    [failed] = r.named("autostop_failed")
    assert "autostop_command not run: $POD is not set" in failed.message
    assert r.ran() == [] and r.named("autostop") == []


# -- the app's hold ------------------------------------------------------------------------


def test_an_app_holding_autostop_holds_it_and_letting_go_counts_the_idle_time_again(
    rig,
) -> None:
    r = rig()
    hold = Hold(r.files.hold)
    hold.take()
    try:
        assert someone_holds(r.files.hold)
        assert r.settle(DUE) == "held_by_app"
        assert "held by an open rgpu-tui app" in r.named("autostop_held")[0].message
    finally:
        hold.release()
    assert not someone_holds(r.files.hold)
    assert r.settle(DUE + 60) == "counting"  # counted from when the app let go
    assert r.settle(DUE + 60 + LIMIT_MIN * 60) == "ran"


def test_the_plan_says_what_the_watcher_does_for_the_app(rig) -> None:
    r = rig()
    data = b"w" * 10
    run = make_run(r.root, "exp1", {"best.pt": data})
    record_push(run, "best.pt", data)
    r.runs = [run_info(run)]
    r.look(NOW + 30)
    r.checker.wait_idle(10)
    r.look(NOW + 31)
    plan = r.files.read_plan()
    assert plan["phase"] == "counting" and plan["pid"] == os.getpid()
    assert plan["fires_at"] == round(DUE)
    assert plan["message"] == "all weights on the Hub"
    assert os.stat(r.files.plan).st_mode & 0o777 == 0o600
    doc = json.loads(Path(r.files.plan).read_text())
    doc["pid_started"] = 1.0  # a watcher that is gone (its pid reused, or dead)
    Path(r.files.plan).write_text(json.dumps(doc))
    assert r.files.read_plan() is None


# -- hashing, off the loop, once per version -------------------------------------------------


def test_each_version_is_hashed_once(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run = make_run(root, "exp1", {"best.pt": b"v1" * 1000})
    checker = WeightsChecker(hub_lookup=StandInHub())
    try:
        [w] = checker.check([run_info(run)], NOW)
        assert w.verdict == "hashing"
        checker.wait_idle(10)
        for t in range(5):
            [w] = checker.check([run_info(run)], NOW + t)
            assert w.verdict == "not_pushed"
            assert w.sha256 == hashlib.sha256(b"v1" * 1000).hexdigest()
        assert checker.hashed == 1
        path = run / "weights" / "best.pt"
        path.write_bytes(b"v2" * 1000)
        os.utime(path, (NOW - 60, NOW - 60))
        checker.check([run_info(run)], NOW + 10)
        checker.wait_idle(10)
        [w] = checker.check([run_info(run)], NOW + 11)
        assert checker.hashed == 2 and w.sha256 == hashlib.sha256(b"v2" * 1000).hexdigest()
    finally:
        checker.close()


def test_the_token_reaches_no_record_plan_or_message(rig, tmp_path: Path) -> None:
    token = "hf_" + "T" * 34
    r = rig()
    r.command = (sys.executable, "-c", RECORD, str(r.out), f"--header=Bearer {token}")
    r.settings = Settings(autostop_command=r.command, autostop_idle_minutes=LIMIT_MIN)
    r.token = token
    r.restart()
    assert r.settle(DUE) == "ran"
    assert r.ran() == [[f"--header=Bearer {token}"]]  # the command itself gets what it asks
    said = json.dumps([e.to_json() for e in r.events])
    assert token not in said  # (a message is cut at 400 characters: the root's path is long)
    for text in (Path(r.files.record).read_text(), Path(r.files.plan).read_text()):
        assert token not in text and "***" in text


def test_a_training_setting_up_keeps_autostop_waiting(rig, tmp_path: Path) -> None:
    """`libreyolo train` started by hand, still caching its dataset (no
    status.json, GPUs at 0%), is a real process here; the Collector's snapshots read busy and
    autostop waits; once it is gone the machine idles and autostop runs after its minutes."""
    r = rig()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "libreyolo").write_text(
        f"#!{sys.executable}\nimport time\nprint('ready', flush=True)\ntime.sleep(600)\n"
    )
    (bin_dir / "libreyolo").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    train = subprocess.Popen(
        ["libreyolo", "train", "data=coco8.yaml"], env=env, stdout=subprocess.PIPE, text=True
    )
    collector = Collector(str(r.root), fake_gpus=1, setup=SetupWatcher(rescan_s=0))

    def step(t: float) -> str:
        r.autostop.step(collector.refresh(now=t))
        return r.autostop.phase

    try:
        assert train.stdout.readline().strip() == "ready"
        assert [step(NOW + t) for t in range(0, 1260, 60)] == ["busy"] * 21  # 20 min
        assert r.ran() == [] and r.named("autostop") == []
        train.kill()
        train.wait(10)
        # the idle clock counts at most 120 s a gap: a look a minute, as a watcher does
        assert [step(NOW + 1260 + t) for t in range(0, 600, 60)] == ["counting"] * 10
        t = NOW + 1260 + LIMIT_MIN * 60
        for _ in range(50):
            phase = step(t)
            if phase not in ("checking", "running"):
                break
            r.checker.wait_idle(10)
            assert r.autostop.wait_command(30)
        assert phase == "ran" and r.ran() == [["stop", "pod-42"]]
    finally:
        if train.poll() is None:
            train.kill()
        train.wait(10)
        train.stdout.close()
        collector.close()
