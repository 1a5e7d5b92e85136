"""`rgpu-tui preflight`: can torch use every GPU (core.launch.gpu_probe does the check)."""

from __future__ import annotations

import json
import sys

from .numbers import OneLineParser, number

PREFLIGHT_TIMEOUT_RANGE = (5.0, 3600.0)  # seconds


def cmd_preflight(argv: list[str]) -> int:
    p = OneLineParser(
        prog="rgpu-tui preflight",
        description="Check that torch in the training environment (the Python that runs the "
        "libreyolo on PATH, else this one) can use every GPU: version, CUDA availability, and "
        "one 2000x2000 matmul per GPU. Exit 1 when it cannot.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--timeout",
        type=number(*PREFLIGHT_TIMEOUT_RANGE),
        default=120.0,
        metavar="S",
        help="seconds the check may take, 5 to 3600 (default 120)",
    )
    args = p.parse_args(argv)
    from ..core.launch.gpu_probe import gpu_preflight, preflight_to_text

    report = gpu_preflight(timeout=args.timeout)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(preflight_to_text(report))
    return 0 if report.ok else 1
