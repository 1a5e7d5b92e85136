"""The chart view end to end: a real libreyolo CPU training (tests/support/training.py)
watched by the `rgpu-tui` console script in a private tmux at 120x40, `v` pressed; the
chart gains a point each epoch (the first panel's title names the newest epoch, and the
curve has more dots). Then `rgpu-tui chart --json` on the finished run gives back its
metrics.jsonl rows, and `t` compares it with a copy whose config was edited.

The screen is read with `tmux capture-pane -p`, polled against deadlines (no sleeps).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys

from support.training import Training

from e2e.test_tmux import RGPU_TUI, TRAIN_ENV, TRAIN_TIMEOUT, header_is, home, terminals  # noqa: F401

TITLE_RE = re.compile(r"box_loss\s+\S+ @ep(\d+)")
BRAILLE = re.compile("[\u2801-\u28ff]")


def chart_epoch(screen: str) -> int | None:
    m = TITLE_RE.search(screen)
    return int(m[1]) if m else None


def dots(screen: str) -> int:
    """Raised braille dots on the screen (a curve with more points has more)."""
    return sum(bin(ord(ch) - 0x2800).count("1") for ch in BRAILLE.findall(screen))


def test_the_chart_gains_a_point_each_epoch(terminals, home, trained_dataset, tmp_path):  # noqa: F811
    training = Training(trained_dataset, tmp_path / "runs", name="live", epochs=3)
    training.start()
    try:
        term = terminals(120, 40)
        env = {**home, **TRAIN_ENV}
        argv = [str(RGPU_TUI), str(training.project), "--fake-gpus", "2"]
        term.start_app(argv, tmp_path / "rc", env=env, cwd=tmp_path)

        def details() -> str:
            return training.failure_message("(the app did not show it)")

        term.wait_for(header_is("RUN", "live", 1), "RUN epoch 1/3", TRAIN_TIMEOUT, details=details)
        term.send("v")
        seen = {}
        for epoch in (1, 2, 3):
            screen = term.wait_for(
                lambda s, e=epoch: (chart_epoch(s) or 0) >= e,
                f"the chart's point of epoch {epoch}",
                TRAIN_TIMEOUT,
                details=details,
            )
            seen[chart_epoch(screen)] = dots(screen)
            assert "┤" in screen and "└" in screen  # a y-axis and an x-axis
        assert min(seen) < max(seen) == 3  # seen growing, polled every 0.15 s
        assert seen[max(seen)] > seen[min(seen)]  # more points, more dots
        training.wait_ok(TRAIN_TIMEOUT)
        done = term.wait_for(header_is("DONE", "live", 3), "DONE 3/3", details=details)
        assert "✧" in done or "✦" in done  # the best epoch is marked

        # the same run, once more, with two hyperparameters edited: marked and compared
        copy = training.project / "edited"
        shutil.copytree(training.run_dir, copy, ignore=shutil.ignore_patterns("weights"))
        config = (copy / "train_config.yaml").read_text()
        config = re.sub(r"(?m)^epochs: \d+$", "epochs: 9", config)
        config = re.sub(r"(?m)^warmup_epochs: \S+$", "warmup_epochs: 0", config)
        (copy / "train_config.yaml").write_text(config)
        term.wait_for(lambda s: "edited" in s, "the copied run in the list")
        term.send("Space")
        term.wait_for(lambda s: "◉" in s, "the first mark")
        term.send("j")
        term.send("Space")
        screen = term.wait_for(lambda s: s.count("━━") >= 2, "two runs overlaid")
        term.send("t")
        table = term.wait_for(lambda s: "warmup_epochs" in s, "the compare table")
        assert "epochs" in table and "hyperparameters that differ" in table
        term.send("t")
        term.send("q")
        assert term.wait_exit() == 0
    finally:
        training.cleanup()

    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "chart", str(training.run_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**home, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(proc.stdout)["runs"]
    rows = [
        json.loads(line) for line in (training.run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    assert run["epochs"] == [r["epoch"] for r in rows]
    for name, series in run["metrics"].items():
        want = []
        for r in rows:
            v = r.get(name)
            finite = isinstance(v, float) and math.isfinite(v) and v != -1.0
            want.append(v if finite and r.get("validated", True) else None)
        assert series["raw"] == want, name
