"""The security review's checkable parts: no shell, no listening socket, private files."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import psutil

SRC = Path(__file__).resolve().parents[2] / "src"


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def test_no_subprocess_goes_through_a_shell() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for call in _calls(tree):
            func = ast.unparse(call.func)
            if func in (
                "os.system",
                "os.popen",
                "subprocess.getoutput",
                "subprocess.getstatusoutput",
            ):
                offenders.append(f"{path.name}:{call.lineno} {func}")
            for kw in call.keywords:
                if kw.arg == "shell" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False
                ):
                    offenders.append(f"{path.name}:{call.lineno} shell=")
    assert offenders == []


async def test_the_app_opens_no_listening_socket(tmp_path) -> None:
    from rgpu_tui.tui.app import RgpuApp

    me = psutil.Process()
    before = {c.laddr for c in me.net_connections(kind="all") if c.status == psutil.CONN_LISTEN}
    app = RgpuApp(root=str(tmp_path), interval=0.05, fake_gpus=2)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(10):
            await pilot.pause(0.05)
        during = {c.laddr for c in me.net_connections(kind="all") if c.status == psutil.CONN_LISTEN}
    assert during - before == set()


def test_records_and_staging_are_private(tmp_path) -> None:
    from rgpu_tui.core.hub.push import append_push_record
    from rgpu_tui.core.launch.launch import _open_console_log
    from rgpu_tui.core.records.push_records import pushes_path

    append_push_record(str(tmp_path), {"outcome": "ok"})
    assert stat.S_IMODE(os.stat(pushes_path(str(tmp_path))).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(pushes_path(str(tmp_path)))).st_mode) & 0o077 == 0
    fd, path = _open_console_log(str(tmp_path), "exp", 0.0)
    os.close(fd)
    assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0
