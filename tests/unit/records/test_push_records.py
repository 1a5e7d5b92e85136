"""core.records.push_records: what the snapshot passes on of a run's push records."""

from __future__ import annotations

from rgpu_tui.core.records.push_records import push_info

TOKEN = "hf" + "_" + "RecordedTokenOfAnotherWriter0123456"


def test_a_token_in_a_push_record_goes_no_further() -> None:
    """A record written by another tool (or by hand): the commit URL with credentials in
    it and an error quoting the token. Neither reaches the snapshot (the screen, `snapshot
    --json`, a fleet's link)."""
    records = [
        {"time": "2026-01-01T00:00:00+00:00", "file": "best.pt", "outcome": "ok", "size": 5,
         "commit_url": f"http://user:{TOKEN}@hub.example/alice/x/commit/1"},
        {"time": "2026-01-01T00:01:00+00:00", "file": "best.pt", "outcome": "error",
         "error": f"401 Unauthorized for token {TOKEN} at http://u:{TOKEN}@hub.example/api"},
    ]  # fmt: skip
    info = push_info(records, None, None)
    assert info.last_ok_url == "http://hub.example/alice/x/commit/1"
    assert info.last_error == "401 Unauthorized for token hf_*** at http://hub.example/api"
    assert TOKEN not in repr(info)
    assert info.attempts == 2 and info.last_outcome == "error"
