"""A 522-byte train_config.yaml whose aliases nest nine deep ("billion laughs": 9^9 items
once expanded; PyYAML's safe loader shares them) through every reader of it: `compare`,
the app's `v` and `t` under Pilot, and a fleet agent's `chart` command. Each runs in its
own process under a memory limit (RLIMIT_AS) and a deadline: before values became text by
core.base.values.value_text (bounded while it walks), flattening each value with
json.dumps took 5 GB and minutes (the memory limit turns that into a failure here)."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from support.cli_env import RGPU_TUI, clean_env

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
MEMORY_LIMIT = 1536 * 1024 * 1024  # address space: the app needs a few hundred MB
DEADLINE_S = 90


def billion_laughs() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def limited() -> None:  # in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def two_runs(root: Path) -> tuple[Path, Path]:
    """Two copies of a real run; b's train_config.yaml is the hostile one."""
    a, b = root / "a", root / "b"
    for run in (a, b):
        shutil.copytree(FIXTURE, run, ignore=shutil.ignore_patterns("weights", "val"))
    (b / "train_config.yaml").write_text(billion_laughs())
    return a, b


def test_the_file_is_small_and_expands():
    import yaml

    doc = yaml.safe_load(billion_laughs())
    assert len(billion_laughs()) < 600
    assert len(doc["a9"]) == 9 and doc["a9"][0] is doc["a9"][1]  # shared, 9^9 once written


def test_compare_reads_it_within_the_limit(tmp_path):
    a, b = two_runs(tmp_path / "runs")
    proc = subprocess.run(
        [str(RGPU_TUI), "compare", str(a), str(b), "--json"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=clean_env(tmp_path),
        preexec_fn=limited,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    config = doc["runs"][1]["config"]
    assert config["a9"].startswith('[[[[[[[[[["x", "x"') and config["a9"].endswith("…")
    assert len(config["a9"]) == 120
    assert "a9" in doc["differs"] and "epochs" in doc["differs"]


def pair_value(doc, key: str) -> str | None:
    """The text of the first [key, text] pair anywhere in a JSON document."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, list) and len(item) == 2 and item[0] == key:
            return item[1]
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def test_an_agents_chart_command_answers_with_it(tmp_path):
    a, b = two_runs(tmp_path / "runs")
    proc = subprocess.Popen(
        [str(RGPU_TUI), "agent", str(tmp_path / "runs"), "--fake-gpus", "0", "--interval", "0.2"],
        env=clean_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limited,
    )
    try:
        assert json.loads(proc.stdout.readline())["agent"] == "rgpu-tui"
        cmd = {"cmd": "chart", "runs": [str(a), str(b)], "id": "c"}
        proc.stdin.write(json.dumps(cmd).encode() + b"\n")
        proc.stdin.flush()
        answer, a9 = None, None
        # the answer, and the charts in a delta (each line a JSON document)
        for _ in range(50):
            line = proc.stdout.readline()
            assert line, proc.stderr.read()[-2000:]
            doc = json.loads(line)
            if doc.get("result") == "c":
                answer = doc
            a9 = a9 or pair_value(doc, "a9")
            if answer and a9:
                break
        assert answer["ok"] is True
        assert a9 is not None and a9.startswith('[[[[[[[[[["x", "x"') and len(a9) == 120
        proc.stdin.close()
        assert proc.wait(DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


PILOT = textwrap.dedent(
    """
    import asyncio, sys
    from rgpu_tui.tui.app import RgpuApp
    from rgpu_tui.tui.screens.charts import CompareScreen

    async def main(root):
        app = RgpuApp(root=root, interval=3600.0, fake_gpus=1)
        async with app.run_test(size=(120, 40)) as pilot:
            async def until(ok):
                for _ in range(400):
                    if ok():
                        return
                    await pilot.pause(0.05)
                raise SystemExit("timed out")

            await until(lambda: app.snapshot is not None and len(app.snapshot.runs) == 2)
            await pilot.press("v")
            await until(lambda: app.snapshot.charts and app.view.chart_view.runs)
            await pilot.press("space", "j", "space")
            await until(lambda: len(app.view.chart_view.runs) == 2)
            await pilot.press("t")
            await until(lambda: isinstance(app.screen, CompareScreen))
            body = app.screen.query_one("#body")
            await until(lambda: "a9" in str(body.render()))
            print(str(body.render()))
            await pilot.press("t", "q")
            await until(lambda: not app.is_running)
        print("QUIT", app.return_code)

    asyncio.run(main(sys.argv[1]))
    """
)


def test_the_app_opens_v_and_t_and_quits_on_q(tmp_path):
    two_runs(tmp_path / "runs")
    proc = subprocess.run(
        [sys.executable, "-c", PILOT, str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=clean_env(tmp_path),
        preexec_fn=limited,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[[[[[[[[[[" in proc.stdout and "a9" in proc.stdout
    assert proc.stdout.rstrip().endswith("QUIT 0") or "QUIT None" in proc.stdout
