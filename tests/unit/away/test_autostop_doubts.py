"""Autostop holds on every doubt. Each test drives `Autostop` itself with a fake clock, as
`rgpu-tui watch` does, over real files; the Hub is the stand-in of test_autostop.py (a
function saying what lookup_on_hub would: tests/faults/test_autostop_hub_verdicts.py asks
the local Hub server).

The command is a real process that records its argv: "ran" means the machine would have
been stopped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rgpu_tui.core.records.autostop_files import Hold
from rgpu_tui.core.run import weights_finder

from .test_autostop import DUE, LIMIT_MIN, NOW, Rig, make_run, record_push, run_info

DATA = b"weights v1" * 1000


@pytest.fixture
def rig(short_tmp: Path):
    """rig(**settings): test_autostop's Rig (an Autostop over a short temp folder's runs/, a
    fake clock): its events name paths and are cut at 400 characters."""
    made: list[Rig] = []

    def make(**kw) -> Rig:
        r = Rig(short_tmp, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def never_pushed(root: Path, where: str) -> Path:
    """A run folder at `where` under root with a best.pt that was never pushed."""
    run = root / where
    (run / "weights").mkdir(parents=True)
    path = run / "weights" / "best.pt"
    path.write_bytes(DATA)
    os.utime(path, (NOW - 3600, NOW - 3600))
    return run


# -- item 1: weights the run finder does not list -------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        ".archive/exp",  # a dot-folder
        ".exp",
        "weights/exp",  # a folder the run finder skips by name
        "a/b/c/d/e/f/g/h/i/exp",  # 9 folders deep: below the run finder's 8 levels
        "exp/.rgpu/old",  # under rgpu-tui's own folder
        "node_modules/exp",
    ],
)
def test_weights_the_run_finder_does_not_list_hold_it(rig, where: str) -> None:
    """A failed run's never-pushed best.pt in any of these: autostop ran, "no run has
    weights to lose". The runs list (snap.runs) is empty, as the finder leaves them out."""
    r = rig()
    run = never_pushed(r.root, where)
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert f"{where}: best.pt was never pushed" in held.message
    assert f"`rgpu-tui push {run}`" in held.message
    assert r.ran() == []


def test_a_run_folder_reached_through_a_symlink_holds_it(rig, tmp_path: Path) -> None:
    r = rig()
    elsewhere = never_pushed(tmp_path / "data", "exp")
    (r.root / "linked").symlink_to(elsewhere)
    (r.root / "loop").symlink_to(r.root)  # a loop of links ends
    assert r.settle(DUE) == "held"
    assert "linked: best.pt was never pushed" in r.named("autostop_held")[0].message
    assert r.ran() == []


def pushed_run(r) -> None:
    """A run beside the doubtful folder whose best.pt is on the Hub: weights were found,
    and every one found is safe; the doubt alone must hold it."""
    run = make_run(r.root, "exp1", {"best.pt": DATA})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run)]


def test_folders_too_deep_or_too_many_to_search_hold_it_naming_them(rig, monkeypatch) -> None:
    r = rig()
    pushed_run(r)
    deep = r.root / "deep"
    deep.joinpath(*["d"] * (weights_finder.MAX_DEPTH + 2)).mkdir(parents=True)
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert held.message.startswith(f"autostop held: cannot check everything under {r.root}")
    assert f"1 folder deeper than {weights_finder.MAX_DEPTH} levels not searched" in held.message
    assert r.ran() == []

    r2 = rig()  # the same root: the pushed exp1 is there
    r2.runs = r.runs
    for i in range(30):
        (r2.root / f"f{i}").mkdir(exist_ok=True)
    monkeypatch.setattr(weights_finder, "MAX_DIRS", 20)
    r2.restart()  # a new checker: a new finder with the bound
    assert r2.settle(DUE) == "held"
    assert "more than 20 folders under" in r2.named("autostop_held")[-1].message


# -- item 2: a root that does not exist or holds nothing -----------------------------------


def test_a_missing_root_holds_from_the_first_refresh_and_says_so_at_start(rig) -> None:
    r = rig()
    r.root.rmdir()
    assert r.autostop.warnings()[0] == (
        f"autostop not armed: {r.root} does not exist (a typo, or started from another "
        "folder?): autostop holds until it does"
    )
    r.idle_since = None  # busy: still said at once
    assert r.look(NOW) == "held"
    [held] = r.named("autostop_held")
    assert held.message.startswith(f"autostop held: {r.root} does not exist")
    r.idle_since = NOW
    assert r.settle(DUE + 3600) == "held" and r.ran() == []
    r.root.mkdir()  # it appears: armed again, and what it holds is said
    assert r.settle(DUE + 3700) == "ran"
    assert f"no runs and no weights under {r.root}" in r.named("autostop")[0].message


def test_an_empty_root_is_never_nothing_to_lose_unsaid(rig) -> None:
    r = rig()
    assert r.look(NOW + 60) == "counting"
    plan = r.files.read_plan()
    assert plan["message"] == (
        f"no runs and no weights under {r.root} (is that the folder that holds them?)"
    )
    assert r.settle(DUE) == "ran"
    [fired] = r.named("autostop")
    assert f"no runs and no weights under {r.root}" in fired.message


# -- item 4: looked at again after the notification went out ---------------------------------


class Gate:
    """The notifier's queue: not drained until opened."""

    def __init__(self) -> None:
        self.open = False

    def __call__(self) -> bool:
        return self.open


def notifying(rig, **kw):
    """A rig whose autostop told `autostop` and waits for its notification to go out."""
    r = rig(**kw)
    gate = Gate()
    r.autostop.drained = gate
    run = make_run(r.root, "exp1", {"best.pt": DATA})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run)]
    assert r.settle(DUE) == "notifying"
    assert len(r.named("autostop")) == 1 and r.autostop.wake_in() == 0.5
    return r, gate, run


def cancelled(r) -> str:
    [said] = [e for e in r.named("autostop_held") if "cancelled" in e.message]
    assert r.ran() == [] and r.autostop.wake_in() is None
    return said.message


def test_the_command_runs_once_the_notification_went_out_and_nothing_changed(rig) -> None:
    r, gate, _run = notifying(rig)
    assert r.settle(DUE + 5) == "notifying" and r.ran() == []
    gate.open = True
    assert r.settle(DUE + 6) == "ran" and r.ran() == [["stop", "pod-42"]]


def test_a_notifier_that_never_drains_waits_15_s_at_most(rig) -> None:
    r, _gate, _run = notifying(rig)
    assert r.settle(DUE + 14) == "notifying"
    assert r.settle(DUE + 15) == "ran"


def test_the_machine_busy_in_that_window_cancels(rig) -> None:
    r, gate, _run = notifying(rig)
    r.idle_since = None  # a run started
    assert r.look(DUE + 3) == "busy"
    assert "autostop cancelled before its command ran: the machine became busy" in cancelled(r)
    gate.open = True
    r.idle_since = DUE + 10
    assert r.settle(DUE + 20) == "counting"  # a new stretch


def test_weights_written_in_that_window_cancel(rig) -> None:
    r, gate, run = notifying(rig)
    best = run / "weights" / "best.pt"
    best.write_bytes(b"epoch 31 weights")
    os.utime(best, (DUE - 60, DUE - 60))
    gate.open = True
    assert r.look(DUE + 3) in ("checking", "counting")
    assert "exp1 best.pt changed or appeared" in cancelled(r)
    assert r.settle(DUE + 30) == "counting"  # re-armed: the idle time counts from then
    assert r.settle(DUE + 3 + LIMIT_MIN * 60) == "held"  # the new best.pt is not on the Hub


def test_a_new_run_with_weights_in_that_window_cancels(rig) -> None:
    r, gate, _run = notifying(rig)
    never_pushed(r.root, "exp2")
    gate.open = True
    r.look(DUE + 3)
    assert "exp2 best.pt changed or appeared" in cancelled(r)


def test_a_weights_file_gone_in_that_window_cancels(rig) -> None:
    """One of two pushed runs loses its best.pt while the notification goes out (moved,
    deleted, a cleanup script): what was judged safe is not what is there, though nothing
    new appeared."""
    r = rig()
    gate = Gate()
    r.autostop.drained = gate
    runs = [make_run(r.root, name, {"best.pt": DATA}) for name in ("exp1", "exp2")]
    for run in runs:
        record_push(run, "best.pt", DATA)
    r.runs = [run_info(run) for run in runs]
    assert r.settle(DUE) == "notifying"
    (runs[1] / "weights" / "best.pt").unlink()
    gate.open = True
    assert r.look(DUE + 3) == "counting"
    assert "exp2 best.pt is gone or changed" in cancelled(r)


def test_a_pressed_in_the_app_in_that_window_cancels(rig) -> None:
    r, gate, _run = notifying(rig)
    hold = Hold(r.files.hold)
    hold.take()
    try:
        gate.open = True
        assert r.look(DUE + 3) == "held_by_app"
        assert "an rgpu-tui app cancelled it" in cancelled(r)
    finally:
        hold.release()


def test_the_root_gone_in_that_window_cancels(rig) -> None:
    r, gate, _run = notifying(rig)
    moved = r.root.with_name("moved")
    r.root.rename(moved)
    gate.open = True
    assert r.look(DUE + 3) == "held"
    assert "is gone" in cancelled(r)


# -- item 6: each attempt asks the Hub -------------------------------------------------------


def test_each_attempt_asks_the_hub_again(rig) -> None:
    """A confirmed answer, a command that failed, a busy/idle cycle (2 min idle) while another
    machine replaced the file on the Hub: the answer, kept up to 10 min, let it run again."""
    r = rig(command=(sys.executable, "-c", "import sys; sys.exit(3)"), autostop_idle_minutes=2)
    run = make_run(r.root, "exp1", {"best.pt": DATA})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run)]
    assert r.settle(NOW + 120) == "failed" and r.hub.asked == 1
    r.idle_since = None
    r.look(NOW + 180)
    r.idle_since = NOW + 240
    r.hub.status = "different"  # replaced on the Hub meanwhile
    assert r.settle(NOW + 360) == "held"  # 4 min after the first answer
    assert r.hub.asked == 2
    assert "the Hub disagrees" in r.named("autostop_held")[-1].message
    assert len(r.named("autostop")) == 1


# -- item 7: rewritten in place, same size, mtime put back -----------------------------------


def test_a_file_rewritten_in_place_with_its_mtime_put_back_is_hashed_again(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": DATA})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run)]
    best = run / "weights" / "best.pt"
    r.look(NOW + 60)
    r.checker.wait_idle(10)
    st = best.stat()
    with open(best, "r+b") as f:  # same size, other bytes
        f.write(b"W" * 10)
    os.utime(best, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert best.stat().st_size == st.st_size and best.stat().st_mtime_ns == st.st_mtime_ns
    assert r.settle(DUE) == "held"
    assert "exp1: best.pt changed since its last push" in r.named("autostop_held")[0].message


# -- item 8: each file on its own; last.pt of a run that did not complete ---------------------


def test_a_fifo_named_best_pt_hides_no_real_last_pt(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"last.pt": DATA})
    os.mkfifo(run / "weights" / "best.pt")
    r.runs = [run_info(run)]
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert "exp1: last.pt was never pushed" in held.message
    assert f"`rgpu-tui push {run} --file last`" in held.message


@pytest.mark.parametrize("state", ["failed", "dead", "stalled", "unknown", "running"])
def test_last_pt_of_a_run_that_did_not_complete_counts(rig, state: str) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": DATA, "last.pt": b"resume from here"})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run, state=state)]
    assert r.settle(DUE) == "held"
    assert "exp1: last.pt was never pushed" in r.named("autostop_held")[0].message


def test_last_pt_of_a_completed_run_need_not_be_pushed(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": DATA, "last.pt": b"the final epoch"})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run, state="completed")]
    assert r.settle(DUE) == "ran"


def test_a_folder_with_only_epoch_files_keeps_the_newest(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"epoch_3.pt": b"3", "epoch_12.pt": b"12", "epoch_7.pt": b"7"})
    r.runs = [run_info(run, state="failed")]
    assert r.settle(DUE) == "held"
    assert "exp1: epoch_12.pt was never pushed" in r.named("autostop_held")[0].message


# -- a best.pt symlinked out of the run ------------------------------------


def test_a_best_pt_symlinked_out_of_the_run_holds(rig, tmp_path: Path) -> None:
    r = rig()
    secret = tmp_path / "elsewhere.pt"
    secret.write_bytes(DATA)
    run = make_run(r.root, "exp1")
    (run / "weights" / "best.pt").symlink_to(secret)
    record_push(run, "best.pt", DATA)  # even a record that matches its bytes
    r.runs = [run_info(run, state="completed")]
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert f"exp1: best.pt resolves to {secret}, outside the run directory" in held.message
    assert r.ran() == []


# -- a held autostop looks again when a push lands --------------------------


def test_a_push_that_lands_is_looked_at_within_one_refresh(rig) -> None:
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": DATA})
    r.runs = [run_info(run)]
    assert r.settle(DUE) == "held"
    record_push(run, "best.pt", DATA)
    assert r.look(DUE + 2) != "held"  # the next refresh: asking the Hub, not held
    assert "never pushed" not in r.files.read_plan()["message"]
    assert r.settle(DUE + 4) == "ran"


def test_a_push_force_after_the_hub_disagreed_asks_the_hub_again_at_once(rig) -> None:
    """`push --force` of the same file (same sha256) after the Hub lost it: the old answer
    ("missing") stayed for up to 10 min; a new push record asks again."""
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": DATA})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run)]
    r.hub.status = "missing"
    assert r.settle(DUE) == "held" and r.hub.asked == 1
    assert r.settle(DUE + 60) == "held" and r.hub.asked == 1  # the same question: not again
    r.hub.status = "confirmed"
    record_push(run, "best.pt", DATA, time="2027-01-15T08:11:00Z", commit_url="c2")
    assert r.look(DUE + 62) == "checking"  # within one refresh
    assert r.settle(DUE + 64) == "ran" and r.hub.asked == 2


def test_a_weights_file_of_another_name_counts_with_its_own_push_command(rig) -> None:
    """A `final.pt` beside a pushed best.pt: nothing else holds what it holds."""
    r = rig()
    run = make_run(r.root, "exp1", {"best.pt": DATA, "final.pt": b"exported", "epoch_3.pt": b"3"})
    record_push(run, "best.pt", DATA)
    r.runs = [run_info(run, state="completed")]
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert "exp1: final.pt was never pushed" in held.message
    assert f"`rgpu-tui push {run} --file {run / 'weights' / 'final.pt'}`" in held.message
    assert "epoch_3" not in held.message  # an epoch_N.pt beside best.pt is not needed


def test_a_root_that_is_a_file_holds(rig) -> None:
    r = rig()
    r.root.rmdir()
    r.root.write_text("not a folder")
    assert r.look(NOW) == "held"
    assert r.named("autostop_held")[0].message == (
        f"autostop held: {r.root} is not a folder: nothing is stopped until it is one"
    )


# -- a torn checkpoint (the one validity check, used by autostop too) -------------


@pytest.mark.parametrize("torn", [b"", b"PK\x03\x04" + b"cut short" * 100])
def test_a_torn_last_pt_holds_and_says_it_is_torn(rig, torn: bytes) -> None:
    """A SIGKILL while libreyolo rewrote last.pt in place leaves it empty or a zip cut
    short: no push can take it, so autostop does not offer to push it (nor auto-push it);
    it holds and says what to do."""
    r = rig(auto_push="best")
    run = make_run(r.root, "exp1", {"last.pt": torn})
    assert r.settle(DUE) == "held"
    [held] = r.named("autostop_held")
    assert "exp1: last.pt" in held.message and "it cannot be pushed" in held.message
    assert "empty" in held.message if not torn else "not a complete" in held.message
    assert f"`rgpu-tui resume {run}` sets a torn checkpoint aside" in held.message
    assert "pushing" not in " ".join(r.said) and r.ran() == []
