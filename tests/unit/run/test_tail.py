"""tail.IncrementalFile, LineSplitter and LogTail."""

from __future__ import annotations

import errno
import os
import tracemalloc
from pathlib import Path

import pytest

from rgpu_tui.core.run.tail import (
    LOG_BURST_MAX,
    LOG_FIRST_READ,
    MAX_LOG_LINE,
    IncrementalFile,
    LineSplitter,
    LogTail,
    redact,
)

TOKEN = "hf_" + "Ab3dEf6hIj9kLm2oPq5sTu8wXy"  # 26 alphanumerics after hf_


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def deny_open(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Make os.open raise EACCES for `path` (the tests run as root, so chmod 000 won't do)."""
    real_open = os.open
    target = os.fspath(path)

    def fake_open(p, flags, *args, **kwargs):
        if os.fspath(p) == target:
            raise PermissionError(errno.EACCES, "Permission denied", target)
        return real_open(p, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


# -- IncrementalFile -----------------------------------------------------------


def test_incremental_file_reads_only_appended_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"a" * 100)
    f = IncrementalFile(str(path))
    first = f.read_new()
    assert first.data == b"a" * 100
    assert (first.reset, first.problem, first.skipped_head) == (False, None, False)
    assert f.bytes_read == 100 and f.offset == 100

    append(path, b"b" * 37)
    second = f.read_new()
    assert second.data == b"b" * 37
    assert f.bytes_read == 137 and f.offset == 137

    third = f.read_new()
    assert third.data == b"" and not third.reset
    assert f.bytes_read == 137


def test_incremental_file_limit_reads_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"0123456789abcdef")
    f = IncrementalFile(str(path))
    assert f.read_new(limit=10).data == b"0123456789"
    assert f.read_new(limit=10).data == b"abcdef"
    assert f.read_new(limit=10).data == b""
    assert f.bytes_read == 16


def test_incremental_file_truncation_restarts_from_start(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"x" * 100)
    f = IncrementalFile(str(path))
    f.read_new()
    path.write_bytes(b"fresh")  # same inode, truncated
    result = f.read_new()
    assert result.reset is True
    assert result.data == b"fresh"
    assert f.offset == 5


def test_incremental_file_replaced_file_restarts_even_when_larger(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_bytes(b"old\n" * 10)
    f = IncrementalFile(str(path))
    f.read_new()
    tmp = tmp_path / "f.tmp"
    new = b"new\n" * 50  # larger than the old offset: only the inode tells
    tmp.write_bytes(new)
    os.replace(tmp, path)
    result = f.read_new()
    assert result.reset is True
    assert result.data == new


def test_incremental_file_first_read_max_takes_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    data = os.urandom(1000) * 1000  # 1 MB
    path.write_bytes(data)
    f = IncrementalFile(str(path), first_read_max=4096)
    result = f.read_new()
    assert result.skipped_head is True
    assert result.data == data[-4096:]
    assert f.bytes_read == 4096


def test_incremental_file_missing_then_created(tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    f = IncrementalFile(str(path))
    result = f.read_new()
    assert result.problem == "missing" and result.data == b""
    path.write_bytes(b"hello")
    result = f.read_new()
    assert result.problem is None and result.data == b"hello"


def test_incremental_file_permission_denied(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "secret.log"
    path.write_bytes(b"data")
    deny_open(monkeypatch, path)
    result = IncrementalFile(str(path)).read_new()
    assert result.problem == "unreadable: permission denied"
    assert result.data == b""


def test_incremental_file_directory_in_place_of_file(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.mkdir()
    result = IncrementalFile(str(path)).read_new()
    assert result.problem is not None and result.problem.startswith("unreadable")
    assert "directory" in result.problem


# -- LineSplitter ---------------------------------------------------------------


def test_line_splitter_keeps_unfinished_line_until_newline() -> None:
    s = LineSplitter(max_line=100)
    assert s.feed(b"one\ntw") == [b"one"]
    assert s.pending == b"tw"
    assert s.feed(b"o") == []
    assert s.feed(b"\nthree\n") == [b"two", b"three"]
    assert s.pending == b""


def test_line_splitter_cuts_long_line_and_stays_bounded() -> None:
    s = LineSplitter(max_line=10)
    out = []
    for _ in range(1000):  # 1000 chunks of a single never-ending line
        out += s.feed(b"z" * 1000)
        assert len(s.pending) <= 10
    assert out == []
    assert s.overflowing
    out += s.feed(b"z\nnext\n")
    assert out == [b"z" * 10, b"next"]
    assert s.cut_lines == 1
    assert not s.overflowing


def test_line_splitter_cut_line_complete_in_one_chunk() -> None:
    s = LineSplitter(max_line=4)
    assert s.feed(b"abcdefgh\nij\n") == [b"abcd", b"ij"]
    assert s.cut_lines == 1


def test_line_splitter_discard_partial_drops_up_to_newline() -> None:
    s = LineSplitter(max_line=100)
    s.discard_partial()
    assert s.feed(b"tail of a line\nwhole\n") == [b"whole"]


# -- LogTail -------------------------------------------------------------------


def test_log_tail_reads_only_new_bytes(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"line 1\nline 2\n")
    tail = LogTail(str(path))
    assert tail.poll() is True
    assert tail.lines() == ("line 1", "line 2")
    assert tail.bytes_read == 14

    extra = b"line 3\n"
    append(path, extra)
    before = tail.bytes_read
    assert tail.poll() is True
    assert tail.bytes_read - before == len(extra)
    assert tail.lines() == ("line 1", "line 2", "line 3")

    gen = tail.generation
    assert tail.poll() is False
    assert tail.generation == gen
    assert tail.bytes_read - before == len(extra)


def test_log_tail_unfinished_line_is_shown_as_partial_then_completed(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"done\nEpoch 3 - Aver")
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines() == ("done", "Epoch 3 - Aver")
    append(path, b"age loss: 1.5\nnext\n")
    tail.poll()
    assert tail.lines() == ("done", "Epoch 3 - Average loss: 1.5", "next")


def test_log_tail_lines_n_and_keep(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"".join(b"l%d\n" % i for i in range(100)))
    tail = LogTail(str(path), keep=10)
    tail.poll()
    assert tail.lines() == tuple(f"l{i}" for i in range(90, 100))
    assert tail.lines(3) == ("l97", "l98", "l99")


def test_log_tail_truncation_restarts(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"old 1\nold 2\nold 3\n")
    tail = LogTail(str(path))
    tail.poll()
    path.write_bytes(b"new 1\n")  # truncated in place
    assert tail.poll() is True
    assert tail.lines() == ("new 1",)


def test_log_tail_replaced_file_restarts(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"old\n")
    tail = LogTail(str(path))
    tail.poll()
    tmp = tmp_path / "new.log"
    tmp.write_bytes(b"new a\nnew b\nnew c\n")
    os.replace(tmp, path)
    assert tail.poll() is True
    assert tail.lines() == ("new a", "new b", "new c")


def test_log_tail_first_read_of_big_log_takes_last_256k(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    width = 99  # bytes per line with its newline; LOG_FIRST_READ is not a multiple
    lines = [f"{i:08d} ".encode() + b"." * (width - 10) for i in range(20_000)]
    data = b"\n".join(lines) + b"\n"
    assert len(data) > 4 * LOG_FIRST_READ
    path.write_bytes(data)
    start = len(data) - LOG_FIRST_READ
    assert start % width != 0  # the window begins mid-line

    tail = LogTail(str(path), keep=100_000)
    tail.poll()
    assert tail.bytes_read <= 256 * 1024
    shown = tail.lines()
    first_whole = start // width + 1  # the line cut by the window is dropped
    assert shown[0] == lines[first_whole].decode()
    assert shown[-1] == lines[-1].decode()
    assert len(shown) == len(lines) - first_whole


def test_log_tail_non_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"caf\xe9 \xff\xfe ok\n")
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines() == ("caf\ufffd \ufffd\ufffd ok",)


def test_log_tail_huge_line_is_cut_and_next_line_intact(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"before\n")
    tail = LogTail(str(path))
    tail.poll()

    huge = 10 * 1024 * 1024
    append(path, b"Q" * huge)  # no newline yet
    tracemalloc.start()
    try:
        tail.poll()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tail._lines.pending) <= MAX_LOG_LINE + 64
    assert tail.lines() == ("before",)  # a cut unfinished line is not shown
    assert peak < 4 * 1024 * 1024, f"poll held {peak} bytes for a {huge}-byte line"

    append(path, b"QQQ\nafter\n")
    tail.poll()
    assert tail.lines() == ("before", "Q" * MAX_LOG_LINE, "after")


def test_log_tail_carriage_return_keeps_text_after_last_cr(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"ep 1:  10%|#\rep 1:  50%|#####\rep 1: 100%|##########\nnext\n")
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines() == ("ep 1: 100%|##########", "next")


def test_log_tail_unfinished_progress_line_shows_latest_redraw(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"head\n\rep 2:  10%")
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines() == ("head", "ep 2:  10%")
    append(path, b"\rep 2:  60%")
    tail.poll()
    assert tail.lines() == ("head", "ep 2:  60%")


def test_log_tail_crlf_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"one\r\ntwo\r\n")
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines() == ("one", "two")


def test_redact_hf_token() -> None:
    assert redact(f"login with {TOKEN} now") == "login with hf_*** now"
    assert redact("hf_" + "a" * 19) == "hf_" + "a" * 19  # too short to be a token
    assert redact("hf_" + "a" * 20) == "hf_***"


def test_log_tail_redacts_tokens(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(f"HF_TOKEN={TOKEN} push\nsecond {TOKEN} and {TOKEN}\n".encode())
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines() == ("HF_TOKEN=hf_*** push", "second hf_*** and hf_***")
    assert TOKEN[3:10] not in "".join(tail.lines())


@pytest.mark.parametrize("start", [4070, 4090, 4093, 4096, 4100, 4130, 4150, 4157, 4158])
def test_log_tail_redacts_token_straddling_the_cut(tmp_path: Path, start: int) -> None:
    path = tmp_path / "train.log"
    token = "hf_" + "Zq7" * 30  # 90 alphanumerics
    line = "a" * start + token + " trailing text"
    path.write_bytes(line.encode() + b"\nafter\n")
    tail = LogTail(str(path))
    tail.poll()
    shown = tail.lines()
    assert shown[-1] == "after"
    text = shown[0]
    assert len(text) <= MAX_LOG_LINE
    assert "Zq7" not in text
    assert text.startswith("a" * min(start, MAX_LOG_LINE))


def test_log_tail_redacts_token_in_unfinished_line(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"ok\nlogin hf_Ab3dEf6hIj")  # the token is still being written
    tail = LogTail(str(path))
    tail.poll()
    assert tail.lines()[0] == "ok"
    assert "Ab3dEf6hIj" not in tail.lines()[-1]
    append(path, TOKEN[13:].encode() + b" done\n")
    tail.poll()
    assert tail.lines() == ("ok", "login hf_*** done")


def test_log_tail_permission_denied(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"line\n")
    tail = LogTail(str(path))
    with monkeypatch.context() as m:
        deny_open(m, path)
        assert tail.poll() is True
        assert tail.problem is not None and "permission denied" in tail.problem
        assert tail.lines() == ()
    assert tail.poll() is True  # readable again
    assert tail.problem is None
    assert tail.lines() == ("line",)


def test_log_tail_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    tail = LogTail(str(path))
    assert tail.poll() is True
    assert tail.problem == "missing"
    assert tail.lines() == ()
    assert tail.poll() is False  # still missing: nothing changed

    path.write_bytes(b"started\n")
    tail.poll()
    assert tail.problem is None
    assert tail.lines() == ("started",)

    path.unlink()
    assert tail.poll() is True
    assert tail.problem == "missing"
    assert tail.lines() == ()


def test_log_tail_burst_larger_than_the_limit_jumps_to_the_end(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"start\n")
    tail = LogTail(str(path), keep=5000)  # room for the whole window
    tail.poll()
    read_before = tail.bytes_read
    line = b"x" * 99 + b"\n"
    burst = line * (LOG_BURST_MAX // len(line) + 1000)  # just over the limit
    append(path, burst + b"the newest line\n")
    tail.poll()
    # only the last window was read, and the gap is said, not hidden
    assert tail.bytes_read - read_before == LOG_FIRST_READ
    lines = tail.lines()
    assert lines[0] == "start"
    assert lines[1].startswith("[… ") and "bytes skipped" in lines[1]
    assert lines[-1] == "the newest line"
    assert set(lines[2:-1]) == {"x" * 99}
