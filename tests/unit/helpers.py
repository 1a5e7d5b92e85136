"""Plain helpers shared by the unit tests (fixtures live in conftest.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

# a real run directory written by libreyolo 1.6.0 (weights left out)
SAMPLE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"


def iso_utc(ts: float) -> str:
    """ISO-8601 with an offset, one-second precision, as libreyolo writes it."""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).isoformat()
