"""Reading `<run>/.rgpu/pushes.jsonl`: what was pushed to the Hub, and when.

The push (core.hub.push) appends one record per attempt; this module only reads them, for the
push itself (is this file unchanged since its last push?), auto-push, and the header's
"pushed best.pt ep37 4m ago" (`push_info`). Torn or malformed lines are skipped
(core.records.records). The records are run files, so untrusted: the URL and the error
`push_info` passes on lose any `user:password@` and anything shaped like a Hugging Face
token (the app's own records never hold one; another writer's might).
"""

from __future__ import annotations

import os

from ..base.urls import strip_userinfo
from ..base.values import EPOCHS, checked, parse_time
from ..model.snapshot import PushInfo
from ..run.tail import redact
from .records import read_json_lines

RECORDS = "pushes.jsonl"


def pushes_path(run_dir: str) -> str:
    return os.path.join(run_dir, ".rgpu", RECORDS)


def read_pushes(run_dir: str) -> list[dict]:
    """Every complete record, oldest first; a torn or malformed line is skipped."""
    return read_json_lines(pushes_path(run_dir))


def last_push(run_dir: str, file: str | None = None, *, ok_only: bool = False) -> dict | None:
    """The newest record (for `file` when given; only outcome "ok" when ok_only)."""
    for record in reversed(read_pushes(run_dir)):
        if file is not None and record.get("file") != file:
            continue
        if ok_only and record.get("outcome") != "ok":
            continue
        return record
    return None


def _no_secret(value):
    """A text from a record with no credentials in its URLs and no token-shaped word."""
    return redact(strip_userinfo(value)) if isinstance(value, str) else value


def push_info(records: list[dict], best_size: int | None, best_mtime: float | None) -> PushInfo:
    """The summary the run header shows, from the records and best.pt's size and mtime on
    disk now (None when there is no best.pt): the newest successful push, the newest
    attempt's outcome, and whether best.pt changed since it was last pushed (its size
    differs, or it is more than a second newer than that push: records keep whole
    seconds)."""
    ok = [r for r in records if r.get("outcome") in ("ok", "skipped")]
    last = records[-1] if records else {}
    good = ok[-1] if ok else {}
    best_changed = None
    best_ok = [r for r in ok if r.get("file") == "best.pt"]
    if best_ok and best_size is not None:
        pushed = best_ok[-1]
        at = parse_time(pushed.get("time"))
        size_differs = pushed.get("size") != best_size
        newer = at is not None and best_mtime is not None and best_mtime > at + 1.0
        best_changed = bool(size_differs or newer)
    return PushInfo(
        last_ok_file=good.get("file"),
        last_ok_epoch=checked(good.get("epoch"), EPOCHS, integer=True)[0],
        last_ok_at=parse_time(good.get("time")),
        last_ok_url=_no_secret(good.get("commit_url")),
        last_outcome=last.get("outcome"),
        last_error=_no_secret(last.get("error")),
        best_changed=best_changed,
        attempts=len(records),
    )
