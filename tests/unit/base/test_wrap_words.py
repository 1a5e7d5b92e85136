"""wrap_words and shorten_middle: text broken between words, never mid-word, never with a
row that ends in a space; a word too long for its row shortened in its middle."""

from __future__ import annotations

import pytest

from rgpu_tui.core.base.text import shorten_middle, wrap_words

MESSAGE = (
    "No runs under /srv/x/runs yet: a run appears here when "
    "`libreyolo train ... project=/srv/x/runs` writes its status.json."
)


@pytest.mark.parametrize("width", range(12, 90))
def test_rows_break_between_words_wherever_the_spaces_fall(width):
    rows = wrap_words(MESSAGE, width)
    assert all(len(r) <= width for r in rows)
    assert all(r == r.strip() for r in rows)  # no row starts or ends with a space
    words = [shorten_middle(w, width) for w in MESSAGE.split()]
    assert " ".join(rows).split(" ") == words  # one space between words, none lost


def test_continuation_rows_keep_their_indent():
    rows = wrap_words("mark the highlighted run to compare (its colour; up to 6)", 24, indent=4)
    assert rows == ["mark the highlighted run", "    to compare (its", "    colour; up to 6)"]


def test_a_path_wider_than_the_row_is_shortened_in_its_middle_keeping_its_file_name():
    path = "/home/someone/runs/exp1/weights/best.pt"
    assert shorten_middle(path, 24) == "/home/someone/r…/best.pt"
    assert shorten_middle(path, len(path)) == path
    rows = wrap_words(f"Pushed {path} to alice/ckpts", 24)
    assert rows == ["Pushed", "/home/someone/r…/best.pt", "to alice/ckpts"]


def test_newlines_start_rows_and_blank_lines_stay():
    assert wrap_words("one two\n\nthree", 40) == ["one two", "", "three"]
