"""Which run directory each launch became: a pure function of the launch records and the
runs found on disk (core.records.launch_runs), so a refresh can work it out every time and write
nothing. Liveness and ancestry are passed in; real processes are in test_launch_unit.py
and test_read_path.py."""

from __future__ import annotations

from pathlib import Path

from rgpu_tui.core.records.launch_records import LaunchRecord
from rgpu_tui.core.records.launch_runs import RunOnDisk, candidates, match_launches, pick_run_dir

T = 1_800_000_000.0


def record(project: Path, rid: str, pid: int, at: float, name: str = "exp", **kw) -> LaunchRecord:
    return LaunchRecord(
        id=rid,
        time=at,
        pid=pid,
        create_time=at,
        argv=(),
        command="",
        cwd="/",
        project=str(project),
        name=name,
        console_log=str(project / ".rgpu" / "console" / f"{rid}.log"),
        **kw,
    )


def run(project: Path, name: str, pid: int | None, started: float | None) -> RunOnDisk:
    return RunOnDisk(str(project / name), pid, started)


def never(pid: int, ancestor: int) -> bool:
    return False


def dead(record: LaunchRecord) -> bool:
    return False


def test_candidates_are_the_name_family_in_libreyolos_order(tmp_path: Path) -> None:
    runs = [
        run(tmp_path, n, 1, T)
        for n in ("exp10", "exp", "exp3", "exp2", "expx", "exp1", "other", ".rgpu")
    ]
    runs.append(RunOnDisk(str(tmp_path / "deeper" / "exp4"), 1, T))  # not directly under
    got = [Path(r.run_dir).name for r in candidates(runs, str(tmp_path), "exp")]
    assert got == ["exp", "exp2", "exp3", "exp10"]  # exp1 is never made, expx is not NAME+N
    every = [Path(r.run_dir).name for r in candidates(runs, str(tmp_path), None)]
    assert every == sorted(n for n in every) and ".rgpu" not in every and "other" in every


def test_pick_the_launched_pid_then_a_descendant(tmp_path: Path) -> None:
    runs = [
        run(tmp_path, "exp", 111, T - 3600),  # an older run with a reused pid
        run(tmp_path, "exp2", 500, T + 20),  # rank 0 under the launched 222
        run(tmp_path, "exp3", 222, T + 30),
    ]
    project = str(tmp_path)
    assert pick_run_dir(222, "exp", project, runs, started_after=T) == str(tmp_path / "exp3")
    tree = {(500, 333)}

    def descends(pid: int, ancestor: int) -> bool:
        return (pid, ancestor) in tree

    got = pick_run_dir(333, "exp", project, runs, started_after=T, descends=descends)
    assert got == str(tmp_path / "exp2")
    assert pick_run_dir(111, "exp", project, runs, started_after=T, descends=never) is None
    assert pick_run_dir(111, "exp", project, runs, descends=never) == str(tmp_path / "exp")


def test_a_recorded_run_dir_wins_and_nothing_else_is_asked(tmp_path: Path) -> None:
    recorded = record(tmp_path, "a", 222, T, run_dir="/elsewhere/exp")

    def ask(*args) -> bool:
        raise AssertionError("a recorded launch needs no process check")

    runs = [run(tmp_path, "exp", 999, T + 5)]
    assert match_launches([recorded], runs, str(tmp_path), descends=ask, alive=ask) == {
        "a": "/elsewhere/exp"
    }


def test_match_by_pid_and_by_descendant_for_a_live_launch(tmp_path: Path) -> None:
    single = record(tmp_path, "single", 222, T)
    ddp = record(tmp_path, "ddp", 333, T + 1)
    waiting = record(tmp_path, "waiting", 444, T + 2)
    runs = [run(tmp_path, "exp", 222, T + 10), run(tmp_path, "exp2", 501, T + 12)]
    got = match_launches(
        [single, ddp, waiting],
        runs,
        str(tmp_path),
        descends=lambda pid, ancestor: (pid, ancestor) == (501, 333),
        alive=lambda r: True,
    )
    assert got == {"single": str(tmp_path / "exp"), "ddp": str(tmp_path / "exp2")}


def test_an_ended_launch_takes_the_first_run_started_after_it(tmp_path: Path) -> None:
    """A multi-GPU run that has ended: rank 0's pid is in status.json and descends from
    nothing any more. The runs of its name started after it are its candidates."""
    first = record(tmp_path, "first", 333, T)
    second = record(tmp_path, "second", 444, T + 600)
    runs = [
        run(tmp_path, "exp", 900, T - 7200),  # before the launch: not it
        run(tmp_path, "exp2", 501, T + 30),  # the first launch's rank 0
        run(tmp_path, "exp3", 601, T + 640),  # the second launch's rank 0
    ]
    got = match_launches([first, second], runs, str(tmp_path), descends=never, alive=dead)
    assert got == {"first": str(tmp_path / "exp2"), "second": str(tmp_path / "exp3")}


def test_an_ended_launch_takes_no_run_of_a_later_launch(tmp_path: Path) -> None:
    """A launch that died before writing status.json keeps its death: the run after it
    belongs to the next launch of that name, or started after it exited."""
    died = record(tmp_path, "died", 333, T, returncode=1, exited_at=T + 3)
    again = record(tmp_path, "again", 444, T + 60)
    runs = [run(tmp_path, "exp", 444, T + 70)]
    got = match_launches([died, again], runs, str(tmp_path), descends=never, alive=dead)
    assert got == {"again": str(tmp_path / "exp")}
    # nothing recorded the relaunch, but the launcher recorded when the first one exited
    lone = record(tmp_path, "lone", 333, T, returncode=1, exited_at=T + 3)
    by_hand = [run(tmp_path, "exp", 777, T + 70)]  # a later run started by hand
    assert match_launches([lone], by_hand, str(tmp_path), descends=never, alive=dead) == {}
    # a recorded death is final
    gone = record(tmp_path, "gone", 333, T, died_error="exited with status 1")
    assert match_launches([gone], by_hand, str(tmp_path), descends=never, alive=dead) == {}


def test_a_live_launch_never_takes_a_run_by_time(tmp_path: Path) -> None:
    """While the launched process lives, only its pid tree says which run is its own."""
    live = record(tmp_path, "live", 333, T)
    runs = [run(tmp_path, "exp", 777, T + 30)]  # someone else's run of the same name
    assert match_launches([live], runs, str(tmp_path), descends=never, alive=lambda r: True) == {}


def test_each_run_goes_to_one_launch(tmp_path: Path) -> None:
    by_pid = record(tmp_path, "by_pid", 222, T + 5)
    ended = record(tmp_path, "ended", 333, T)
    runs = [run(tmp_path, "exp", 222, T + 10)]  # started after both launches
    got = match_launches([ended, by_pid], runs, str(tmp_path), descends=never, alive=dead)
    assert got == {"by_pid": str(tmp_path / "exp")}  # the pid match is not given away
