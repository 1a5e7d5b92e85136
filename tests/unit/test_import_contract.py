"""The core never imports textual (DESIGN.md: rules of the house)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import rgpu_tui.core

CORE_DIR = Path(rgpu_tui.core.__file__).parent


def core_modules() -> list[str]:
    names = []
    for path in sorted(CORE_DIR.rglob("*.py")):
        rel = path.relative_to(CORE_DIR).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        names.append(".".join(["rgpu_tui", "core", *parts]))
    return names


def test_core_modules_do_not_import_textual() -> None:
    modules = core_modules()
    for expected in ("tail", "metrics", "status", "discovery", "snapshot", "watch"):
        assert f"rgpu_tui.core.{expected}" in modules
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.split('.')[0] == 'textual' or m.startswith('rgpu_tui.tui'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


ACTING = (
    "launch",
    "push",
    "push_queue",
    "stop",
    "stop_target",
    "staging",
    "auto_push",
    "autostop",
    "command",
    "notify",
)


def test_the_read_path_imports_nothing_that_acts() -> None:
    """A refresh (watch, collect and what they call: the GPU, system and cost modules) only
    reads: launching, pushing and stopping stay out of it (issue 14, item 1)."""
    code = (
        "import json, sys\n"
        "import rgpu_tui.core.watch, rgpu_tui.core.collect\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rgpu_tui.'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    for expected in ("watch", "collect", "gpu", "system", "cost", "idle", "launch_runs"):
        assert f"rgpu_tui.core.{expected}" in loaded  # the read path itself is there
    assert sorted(loaded & {f"rgpu_tui.core.{name}" for name in ACTING}) == []
