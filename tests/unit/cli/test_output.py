"""output.InertStream and run_guarded: the sub-commands' one output boundary: hostile
text reaches no terminal raw and a closed or odd output channel breaks no command."""

from __future__ import annotations

import io
import json
import os
import sys

from rgpu_tui.cli.output import InertStream, run_guarded


def _text_stream(encoding: str) -> tuple[io.BytesIO, io.TextIOWrapper]:
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding=encoding, errors="strict", newline="\n")


def test_writes_printable_text_keeping_newlines() -> None:
    raw, text = _text_stream("utf-8")
    out = InertStream(text)
    print("run evil\x1b]0;PWNED\x07 failed\nnext\tline", file=out)
    print("bad\udcffname é", file=out)  # a surrogate-escaped byte: strict utf-8 would raise
    out.flush()
    assert raw.getvalue().decode() == (
        "run evil^[]0;PWNED^G failed\nnext    line\nbad\\xffname é\n"
    )


def test_an_ascii_stream_gets_backslash_escapes_instead_of_an_error() -> None:
    raw, text = _text_stream("ascii")
    out = InertStream(text)
    print("ETA 3h05m … done é", file=out)
    out.flush()
    assert raw.getvalue() == b"ETA 3h05m \\u2026 done \\xe9\n"


def test_json_passes_unchanged() -> None:
    raw, text = _text_stream("utf-8")
    out = InertStream(text)
    data = {"name": "evil\x1b]0;PWNED\x07", "dir": "bad\udcffname\nx", "tab": "a\tb"}
    json.dump(data, out, indent=2)
    out.flush()
    assert raw.getvalue().decode() == json.dumps(data, indent=2)
    assert json.loads(raw.getvalue()) == data


def test_a_closed_pipe_silences_the_stream_without_raising() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = os.fdopen(write_end, "w")
    out = InertStream(stream)
    try:
        for _ in range(4):
            out.write("x" * 100_000)  # more than any pipe buffer: EPIPE at once
            out.flush()
        assert out.gone
        # the descriptor now writes to /dev/null: the exit-time flush cannot fail
        assert os.readlink(f"/proc/self/fd/{write_end}") == os.devnull
    finally:
        stream.close()


def test_run_guarded_keeps_the_status_and_puts_the_streams_back(capsys) -> None:
    saved = sys.stdout, sys.stderr

    @run_guarded
    def command(code: int) -> int:
        assert isinstance(sys.stdout, InertStream) and isinstance(sys.stderr, InertStream)
        print("name\x1b[6n")
        print("err\x9b", file=sys.stderr)
        return code

    assert command(3) == 3
    assert (sys.stdout, sys.stderr) == saved
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("name^[[6n\n", "err\\x9b\n")


def test_run_guarded_ends_quietly_when_a_write_past_it_breaks_the_pipe() -> None:
    @run_guarded
    def command() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert command() == 1
