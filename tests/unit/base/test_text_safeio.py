"""core.base.text.printable and core.base.safeio: the two primitives every output and every run-file
reader goes through."""

from __future__ import annotations

import os
import threading
import unicodedata

import pytest

from rgpu_tui.core.base.safeio import NotRegularFile, open_regular, read_regular
from rgpu_tui.core.base.text import is_printable, printable


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("\x1b]0;PWNED\x07", "^[]0;PWNED^G"),
        ("\x1b]52;c;ZWNobyBwd25lZA==\x07", "^[]52;c;ZWNobyBwd25lZA==^G"),
        ("a\x1b[2Jb\x1b[6n", "a^[[2Jb^[[6n"),
        ("del\x7f", "del^?"),
        ("csi\x9b2J", "csi\\x9b2J"),
        ("two\nlines", "two^Jlines"),
        ("cr\rline", "cr^Mline"),
        ("tab\tstop", "tab     stop"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("bad\udcffname", "bad\\xffname"),
        # the invisible class: zero-width, joiners, separators, marks, BOM, tags, fillers
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("a\u2028line\u2029para", "a\\u2028line\\u2029para"),
        ("join\u200c\u200d\u2060", "join\\u200c\\u200d\\u2060"),
        ("mark\u200e\u200f\u061c", "mark\\u200e\\u200f\\u061c"),
        ("iso\u2066x\u2069", "iso\\u2066x\\u2069"),
        ("bom\ufeff", "bom\\ufeff"),
        ("soft\u00adhyphen", "soft\\xadhyphen"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("fill\u3164\u115f", "fill\\u3164\\u115f"),
        ("nel\x85", "nel\\x85"),
        ("plain é ✓ 漢字", "plain é ✓ 漢字"),
        ("", ""),
    ],
)
def test_printable(raw, shown):
    out = printable(raw)
    assert out == shown
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)
    out.encode("utf-8")  # no lone surrogate left
    assert is_printable(out)


def test_printable_escapes_every_format_and_separator_character():
    # the whole class, as the running Python's Unicode database has it: every format
    # character (Cf), line and paragraph separator (Zl, Zp) and control (Cc) is escaped
    kept = [
        f"U+{c:04X}"
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp", "Cc")
        and chr(c) not in "\t\n"  # a tab becomes spaces, a newline ^J (tested above)
        and printable(chr(c)) == chr(c)
    ]
    assert kept == []


def test_printable_keeps_newlines_when_asked():
    assert printable("a\x1b\nb\tc", newlines=True) == "a^[\nb       c"


def test_printable_of_non_strings():
    assert printable(None) == ""
    assert printable(12) == "12"


def test_open_regular_reads_a_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular(str(path), 4) == b"xxxxx"
    assert read_regular(str(path), 100) == b"x" * 10


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "status.json"
    os.mkfifo(fifo)
    result: list = []

    def attempt():
        try:
            open_regular(str(fifo))
        except OSError as exc:
            result.append(exc)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "open_regular blocked on a FIFO"
    assert isinstance(result[0], NotRegularFile)
    assert "not a regular file" in str(result[0])


def test_a_directory_and_a_device_are_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        open_regular(str(tmp_path))
    with pytest.raises(NotRegularFile):
        read_regular("/dev/zero", 10)


def test_a_symlink_is_refused_without_follow(tmp_path):
    target = tmp_path / "t"
    target.write_text("x")
    link = tmp_path / "l"
    link.symlink_to(target)
    os.close(open_regular(str(link)))
    with pytest.raises(OSError):
        open_regular(str(link), follow_symlinks=False)
