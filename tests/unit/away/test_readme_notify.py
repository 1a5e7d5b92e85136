"""The notify_command examples of docs/away.md are valid settings, and the ntfy and Telegram ones,
run for real by the notifier with curl against a local HTTP server standing in for the
service, send what they should."""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from support.docs import doc
from support.waiting import wait_until

from rgpu_tui.core.away.events import Event
from rgpu_tui.core.away.notify import Notifier
from rgpu_tui.core.base.config import load_settings

MESSAGE = "exp7 is DEAD at epoch 37/100: process 81234 is gone; status.json still says running"


def examples() -> dict[str, str]:
    """The notify_command lines of docs/away.md, by the service they name."""
    lines = re.findall(r"^notify_command = \[.*\]$", doc("away.md"), re.MULTILINE)
    out = {}
    for line in lines:
        key = "ntfy" if "ntfy.sh" in line else "telegram" if "telegram" in line else "mail"
        out[key] = line
    assert set(out) == {"ntfy", "telegram", "mail"}, lines
    return out


def argv_of(line: str, tmp_path: Path) -> tuple[str, ...]:
    config = tmp_path / "config.toml"
    config.write_text(line + "\n")
    return load_settings(str(config), environ={"HOME": str(tmp_path)}).notify_command


def test_every_example_is_a_valid_setting(tmp_path: Path) -> None:
    for line in examples().values():
        argv = argv_of(line, tmp_path)
        assert any("{message}" in arg for arg in argv)


class Service:
    """A local HTTP server that records each request (path, headers, body)."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[str, dict, bytes]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.requests.append((self.path, dict(self.headers), body))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}')

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service():
    s = Service()
    yield s
    s.close()


def send(argv: list[str]) -> list[Event]:
    failures: list[Event] = []
    n = Notifier(argv, failures.append, host="gpu-box-1", timeout=30)
    n.submit(Event(at=0.0, event="run_dead", run="/root/runs/exp7", message=MESSAGE))
    n.close(wait=30)
    return failures


needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


@needs_curl
def test_the_ntfy_example_posts_the_message(tmp_path: Path, service: Service) -> None:
    argv = [
        a.replace("https://ntfy.sh", service.url) for a in argv_of(examples()["ntfy"], tmp_path)
    ]
    assert send(argv) == []
    [(path, headers, body)] = service.requests
    assert path == "/my-rgpu-topic"
    assert headers["Title"] == "rgpu-tui gpu-box-1: run_dead"
    assert body.decode() == MESSAGE


@needs_curl
def test_the_telegram_example_sends_the_text(tmp_path: Path, service: Service) -> None:
    line = examples()["telegram"]
    argv = [a.replace("https://api.telegram.org", service.url) for a in argv_of(line, tmp_path)]
    assert send(argv) == []
    [(path, _headers, body)] = service.requests
    assert re.fullmatch(r"/bot[^/]+/sendMessage", path)
    form = parse_qs(body.decode())
    assert form == {"chat_id": ["123456789"], "text": [f"gpu-box-1 run_dead: {MESSAGE}"]}


@needs_curl
def test_an_http_error_is_a_failure_thanks_to_fail(tmp_path: Path) -> None:
    """--fail makes curl exit 22 on an HTTP error, so notify_failed says so."""
    service = Service(status=403)
    try:
        ntfy = argv_of(examples()["ntfy"], tmp_path)
        argv = [a.replace("https://ntfy.sh", service.url) for a in ntfy]
        [failed] = send(argv)
    finally:
        service.close()
    assert failed.event == "notify_failed"
    assert "exit status 22: curl: (22)" in failed.message and "403" in failed.message


def test_the_mail_example_puts_the_message_in_the_subject(tmp_path: Path) -> None:
    argv = list(argv_of(examples()["mail"], tmp_path))
    # a stand-in `mail` that records its arguments
    out = tmp_path / "mail.txt"
    code = f"import json, sys; open({str(out)!r}, 'w').write(json.dumps(sys.argv[1:]))"
    argv[0:1] = [sys.executable, "-c", code]
    assert send(argv) == []
    wait_until(out.exists, "the stand-in mail")
    assert json.loads(out.read_text()) == [
        "-s",
        f"rgpu-tui gpu-box-1 run_dead: {MESSAGE}",
        "you@example.com",
    ]
