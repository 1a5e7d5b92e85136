"""A host whose agent sends charts that do not hold together: run as `rgpu-tui` on that
host's PATH (the real one is RGPU_REAL), it starts the real agent, keeps its document
(applying each delta) and sends every document whole, each chart altered as
HOSTILE_CHART says (core.fleet.host_ranges.whole_chart is what the fleet holds against)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rgpu_tui.core.fleet.delta import apply


def _series(chart: dict, n: int) -> None:
    for s in chart["series"]:
        s["values"] = (s["values"] * n)[:n] if s["values"] else [1.0] * n


ALTER = {
    "series_longer": lambda c: _series(c, len(c["epochs"]) + 2),
    "series_shorter": lambda c: _series(c, max(len(c["epochs"]) - 2, 1)),
    "stride_0": lambda c: c.update(stride=0, rows=-5),
    "columns": lambda c: c.update(columns=[f"m/{i}" for i in range(20_000)], saved=[10**18]),
}


def main() -> int:
    alter = ALTER[os.environ["HOSTILE_CHART"]]
    agent = subprocess.Popen([os.environ["RGPU_REAL"], *sys.argv[1:]], stdout=subprocess.PIPE)
    doc = None
    for line in agent.stdout:
        obj = json.loads(line)
        if "snapshot" in obj or "delta" in obj:
            doc = obj["snapshot"] if "snapshot" in obj else apply(doc, obj["delta"])
            sent = json.loads(json.dumps(doc))
            for chart in sent.get("charts") or []:
                alter(chart)
            line = json.dumps({"seq": obj["seq"], "snapshot": sent}).encode() + b"\n"
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return agent.wait()


if __name__ == "__main__":
    sys.exit(main())
