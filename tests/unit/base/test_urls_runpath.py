"""core.base.urls (no credentials in a recorded or shown URL) and core.run.runpath (is a run's file
really inside the run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rgpu_tui.core.base.urls import strip_userinfo
from rgpu_tui.core.hub.hub_errors import describe_error, scrub
from rgpu_tui.core.run.runpath import fd_outside_run, outside_run


@pytest.mark.parametrize(
    "text, expected",
    [
        ("http://user:hf_abcdefghijklmnopqrstuvwxyz@hub:8080/x", "http://hub:8080/x"),
        ("https://u:p%40ss@h.example", "https://h.example"),
        ("https://u:p@ss@h.example/a?b=c@d", "https://h.example/a?b=c@d"),  # a raw @ in it
        ("HTTPS://USER@H/", "HTTPS://H/"),
        (
            "cannot reach the Hub at http://a:b@10.0.0.1:9: refused (see https://c:d@e/f)",
            "cannot reach the Hub at http://10.0.0.1:9: refused (see https://e/f)",
        ),
        ("http://host/path@not-userinfo", "http://host/path@not-userinfo"),
        ("mail me at a@b.c", "mail me at a@b.c"),
        ("http://[::1]:5000/x", "http://[::1]:5000/x"),
    ],
)
def test_strip_userinfo(text: str, expected: str) -> None:
    assert strip_userinfo(text) == expected


def test_error_messages_lose_the_userinfo_of_the_endpoint() -> None:
    import httpx2

    endpoint = "http://someone:pw-secret@127.0.0.1:9"
    exc = httpx2.ConnectError(f"connection refused for {endpoint}/api/repos/create")
    message = scrub(describe_error(exc, repo="a/b", endpoint=endpoint, timeout=5), None)
    assert "pw-secret" not in message and "someone" not in message
    assert message.startswith("cannot reach the Hub at http://127.0.0.1:9: ")


def test_outside_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "exp"
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "epoch_3.pt").write_bytes(b"x")
    (run / "weights" / "best.pt").symlink_to("epoch_3.pt")
    (run / "up").symlink_to("..")
    (tmp_path / "runs" / "exp-evil").mkdir()  # a sibling whose name starts like the run
    (run / "sibling").symlink_to(tmp_path / "runs" / "exp-evil")
    assert outside_run(str(run), str(run / "weights" / "best.pt")) is None
    assert outside_run(str(run), str(run / "metrics.jsonl")) is None  # missing: inside
    assert outside_run(str(run), "/etc/passwd") == "/etc/passwd"
    assert outside_run(str(run), str(run / "up" / "other")) == str(tmp_path / "runs" / "other")
    assert outside_run(str(run), str(run / "sibling" / "x")) == str(
        tmp_path / "runs" / "exp-evil" / "x"
    )
    # the run itself reached through a symlink: its files are still inside it
    (tmp_path / "link").symlink_to(run)
    assert outside_run(str(tmp_path / "link"), str(tmp_path / "link" / "weights")) is None


def test_fd_outside_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "a").write_bytes(b"x")
    (tmp_path / "out").write_bytes(b"y")
    for name, expected in (("a", None), ("../out", str(tmp_path / "out"))):
        fd = os.open(run / name, os.O_RDONLY)
        try:
            assert fd_outside_run(str(run), fd) == expected
        finally:
            os.close(fd)
