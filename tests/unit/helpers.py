"""Plain helpers shared by the unit tests (fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

# a real run directory written by libreyolo 1.6.0 (weights left out)
SAMPLE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"
