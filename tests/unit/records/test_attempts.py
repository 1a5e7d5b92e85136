"""A run's attempts (core.records.attempts): put together from status.json, the metrics rows
and the launch records, each refresh, as a pure function of them."""

from __future__ import annotations

import pytest

from rgpu_tui.core.records.attempts import (
    RecordSpan,
    Rows,
    StatusSide,
    current_rows,
    mean_epoch_seconds,
    run_attempts,
    total_seconds,
)

T = 1_800_000_000.0


def rows_of(*spans: tuple[int, int], seconds: float = 2.0) -> Rows:
    """Rows for epochs lo..hi of each span in turn, each epoch taking `seconds`."""
    epochs, cum, timed, repeats = [], [], [], []
    for lo, hi in spans:
        for epoch in range(lo, hi + 1):
            if epochs and epoch <= epochs[-1]:
                repeats.append(len(epochs))
            epochs.append(epoch)
            cum.append((cum[-1] if cum else 0.0) + seconds)
            timed.append(len(timed) + 1)
    return Rows(epochs, cum, timed, repeats)


def status(
    state: str = "completed",
    *,
    started_at: float | None = T + 100,
    pid: int | None = 200,
    start_epoch: int | None = 21,
    completed: int | None = 10,
    elapsed: float | None = 26.0,
    updated: float | None = None,
    status_state: str | None = None,
) -> StatusSide:
    return StatusSide(
        started_at=started_at,
        pid=pid,
        updated=updated,
        state=state,
        status_state=status_state or ("running" if state in ("dead", "stalled") else state),
        start_epoch=start_epoch,
        completed=completed,
        elapsed=elapsed,
    )


def test_a_launch_killed_and_resumed_from_an_earlier_epoch_is_two_attempts():
    """A run launched, 22 epochs in ~53 s, SIGKILLed; resumed from epoch_20.pt
    (epochs 21, 22 written again), completed 30/30 in 26 s. Time and epochs are the sums."""
    launch = RecordSpan(T, 100, T + 53.0, "console log", False)
    resume = RecordSpan(T + 98.0, 200, T + 127.0, "exit record", False)
    got = run_attempts(status(), rows_of((1, 22), (21, 30)), [launch, resume], now=T + 999)
    first, second = got
    assert (first.started_at, first.ended_at, first.epochs, first.ended) == (T, T + 53, 22, True)
    assert first.seconds == 53.0 and first.known_by == "launch record, console log"
    # from the resume's launch (setup before status.json's start counts) to libreyolo's end
    assert (second.started_at, second.ended_at, second.epochs) == (T + 98, T + 126, 10)
    assert second.seconds == 28.0 and second.known_by == "launch record, status.json"
    assert total_seconds(got) == 81.0


def test_without_records_an_earlier_attempt_is_known_by_its_epoch_times():
    """Trained and resumed outside rgpu-tui: the first attempt's start is lost with its
    status.json, its 22 epochs of 2.5 s remain (55 s, a lower bound)."""
    got = run_attempts(status(), rows_of((1, 22), (21, 30), seconds=2.5), [], now=T + 999)
    first, second = got
    assert (first.started_at, first.ended_at, first.epochs) == (None, None, 22)
    assert first.seconds == pytest.approx(55.0) and first.known_by == "metrics.jsonl epoch times"
    assert (second.started_at, second.seconds, second.known_by) == (T + 100, 26.0, "status.json")
    assert total_seconds(got) == pytest.approx(81.0)


def test_a_resume_from_the_last_epoch_splits_the_rows_at_start_epoch():
    """Resumed from last.pt of epoch 22: no epoch comes again; start_epoch 23 splits."""
    launch = RecordSpan(T, 100, None, None, False)  # its end not known: until the resume
    resume = RecordSpan(T + 90.0, 200, None, None, True)
    side = status("running", start_epoch=23, completed=25, elapsed=None)
    got = run_attempts(side, rows_of((1, 25)), [launch, resume], now=T + 200)
    assert [(a.epochs, a.ended) for a in got] == [(22, True), (3, False)]
    assert (
        got[0].ended_at == T + 90 and got[0].known_by == "launch record, the next attempt's start"
    )
    assert got[1].seconds == 110.0  # now - the resume's launch


def test_a_resume_from_an_earlier_checkpoint_before_its_first_row():
    """Resumed from epoch 20 (start_epoch 21, completed 20 at its start): rows 21 and 22
    are the killed attempt's until the resume writes its own 21."""
    side = status("running", start_epoch=21, completed=20, elapsed=None)
    rows = rows_of((1, 22))
    assert current_rows(rows, side) == 22
    got = run_attempts(side, rows, [], now=T + 130)
    assert [(a.epochs, a.known_by) for a in got] == [
        (22, "metrics.jsonl epoch times"),
        (0, "status.json"),
    ]
    # its first row written, status.json not yet rewritten (libreyolo appends first)
    assert current_rows(rows_of((1, 22), (21, 21)), side) == 22
    rows = rows_of((1, 20), (21, 21))  # resumed from epoch 20 of 20 rows: no repeat
    assert current_rows(rows, side) == 20


def test_a_record_that_ended_before_status_json_started_is_an_earlier_attempt():
    """The current status.json was written by a resume made outside rgpu-tui: the launch
    that ended long before is the first attempt, not the current one."""
    launch = RecordSpan(T - 500, 100, T - 400, "exit record", False)
    got = run_attempts(status(), rows_of((1, 10), (11, 30)), [launch], now=T + 999)
    assert [(a.started_at, a.seconds) for a in got] == [(T - 500, 100.0), (T + 100, 26.0)]


def test_a_resume_not_yet_in_status_json_is_starting_or_ended_with_no_epoch():
    dead = status("dead", start_epoch=1, completed=22, elapsed=None, updated=T + 150)
    launch = RecordSpan(T + 99, 200, None, None, False)
    starting = RecordSpan(T + 300, 300, None, None, True)
    got = run_attempts(dead, rows_of((1, 22)), [launch, starting], now=T + 310)
    assert [a.known_by for a in got] == ["launch record, status.json", "launch record (starting)"]
    assert got[0].seconds == 51.0  # to its last status update
    assert (got[1].ended, got[1].seconds, got[1].epochs) == (False, 10.0, 0)
    died = RecordSpan(T + 300, 300, T + 304, "exit record", False)
    got = run_attempts(dead, rows_of((1, 22)), [launch, died], now=T + 310)
    assert (got[1].ended, got[1].seconds, got[1].epochs) == (True, 4.0, 0)


def test_no_status_and_no_record_is_its_rows_and_the_mean_covers_every_row():
    assert run_attempts(status(started_at=None), Rows([], [], []), [], now=T) == ()
    # rows only (no started_at, no launch record): its stretches, by their epoch times,
    # so every view (compare included) gives the run the same time
    got = run_attempts(status(started_at=None), rows_of((1, 3), (2, 4)), [], now=T)
    assert [(a.epochs, a.seconds, a.known_by) for a in got] == [
        (3, 6.0, "metrics.jsonl epoch times"),
        (3, 6.0, "metrics.jsonl epoch times"),
    ]
    rows = rows_of((1, 4), (3, 5), seconds=3.0)
    assert mean_epoch_seconds(rows) == 3.0
    assert mean_epoch_seconds(Rows([1], [0.0], [0])) is None
    assert total_seconds(()) is None


def test_a_launch_record_written_just_after_started_at_is_the_current_attempt():
    """rgpu-tui writes its launch record once the process started;
    libreyolo can write started_at first (0.6 s before the record). That record started
    status.json's attempt: one attempt, counted once, not a second one "starting"."""
    record = RecordSpan(T + 100.6, 200, None, None, True)
    side = status("running", start_epoch=1, completed=3, elapsed=None)
    got = run_attempts(side, rows_of((1, 3)), [record], now=T + 160)
    assert [(a.started_at, a.epochs, a.ended, a.known_by) for a in got] == [
        (T + 100, 3, False, "status.json")
    ]
    assert total_seconds(got) == 60.0


def test_an_earlier_attempt_stops_at_the_next_attempts_start():
    """The killed launch's console log was written after the resume
    began (the dying process flushed late): its seconds stop at the resume's start, never
    counted twice with the resume's."""
    launch = RecordSpan(T, 100, T + 95.0, "console log", False)  # last write after the resume
    resume = RecordSpan(T + 90.0, 200, T + 127.0, "exit record", False)
    got = run_attempts(status(), rows_of((1, 22), (21, 30)), [launch, resume], now=T + 999)
    first, second = got
    assert (first.started_at, first.ended_at, first.seconds) == (T, T + 90, 90.0)
    assert first.known_by == "launch record, the next attempt's start"
    assert (second.started_at, second.seconds) == (T + 90, 36.0)
    assert total_seconds(got) == 126.0


def test_the_mean_epoch_time_is_over_the_rows_with_a_time_only():
    """Rows with no `time` (an older libreyolo, a row cut short) are not
    0-second epochs: 3 rows of 3 s and 2 rows with none is a mean of 3 s, not 1.8 s; an
    earlier attempt known by its epoch times counts the timed rows only."""
    rows = Rows([1, 2, 3, 4, 5], [3.0, 3.0, 6.0, 6.0, 9.0], [1, 1, 2, 2, 3])
    assert mean_epoch_seconds(rows) == 3.0
    assert mean_epoch_seconds(Rows([1, 2], [0.0, 0.0], [0, 0])) is None  # no row timed
