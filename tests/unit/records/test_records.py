"""core.records.records: appended JSON lines survive a torn line and a full disk."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rgpu_tui.core.records import records
from rgpu_tui.core.records.records import append_json_line, read_json_lines


def test_a_record_after_a_torn_line_starts_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "r" / "x.jsonl"
    append_json_line(str(path), {"a": 1})
    with open(path, "ab") as f:
        f.write(b'{"torn": ')  # a writer died mid-line
    append_json_line(str(path), {"b": 2})
    assert read_json_lines(str(path)) == [{"a": 1}, {"b": 2}]


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "x.jsonl"
    append_json_line(str(path), {"a": 1})
    before = path.read_bytes()
    real_write = os.write
    calls = []

    def half_then_enospc(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records.os, "write", half_then_enospc)
    with pytest.raises(OSError):
        append_json_line(str(path), {"b": "x" * 100})
    monkeypatch.undo()
    assert path.read_bytes() == before
    append_json_line(str(path), {"c": 3})
    assert read_json_lines(str(path)) == [{"a": 1}, {"c": 3}]


def test_read_keeps_only_the_newest_bytes_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    for i in range(100):
        append_json_line(str(path), {"i": i})
    tail = read_json_lines(str(path), max_bytes=60)
    assert tail and tail[-1] == {"i": 99} and all(r["i"] > 80 for r in tail)
