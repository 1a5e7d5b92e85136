"""A runs root written by a hostile trainer: terminal control sequences in every string
rgpu-tui shows (run directory names, status.json's error, model and task, metric names
in metrics.jsonl and results.csv, train.log lines), and a directory name that is not
UTF-8 and holds a newline.

Each sequence sits right after a plain marker ("clear", "ask", ...), so a test can look
for the exact bytes in what a program wrote to its terminal: Textual writes ESC[2J and
friends itself, never "clear" followed by ESC[2J.
"""

from __future__ import annotations

import json
import os
import shutil
import unicodedata
from pathlib import Path

SAMPLE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run_completed"

TITLE = "\x1b]0;PWNED\x07"  # OSC 0: sets the window (tmux pane) title
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: writes the clipboard
CLEAR = "clear\x1b[2J"  # erases the screen
QUERY = "ask\x1b[6n"  # asks for the cursor position: the answer is typed as input
C1 = "c1\x9b31m"  # CSI as one C1 character
BIDI = "rtl\u202eevil"  # reads backwards

# what the app or a command must never write: the sequences as the run files hold them
RAW_SEQUENCES = (
    b"\x1b]0;PWNED",
    b"\x1b]52;",
    b"clear\x1b[2J",
    b"ask\x1b[6n",
    "c1\x9b".encode(),
    b"c1\x9b",
)

HOSTILE_NAME = "evil" + TITLE  # the failed run's directory
CSV_NAME = "csv" + QUERY  # a run with only results.csv
METRIC = "metrics/mAP" + TITLE  # the optimised metric's column name
ERROR_TYPE = "Boom" + CLIPBOARD
ERROR_MESSAGE = f"{CLEAR} {QUERY} {C1}"
MODEL = ("yolo" + CLIPBOARD, "t" + QUERY)
LOG_LINES = (TITLE, CLIPBOARD, CLEAR, QUERY, C1, BIDI, "tab\there")
CSV_METRIC = "loss\x1b[2J"  # short: a metric label shows 14 columns
# a directory name os.listdir gives surrogate-escaped (b"\xff"), with a newline in it
BAD_BYTES_NAME = b"bad\xffname\nsecond line"


def _copy_sample(dst: Path) -> None:
    dst.mkdir(parents=True)
    for name in ("train.log", "metrics.jsonl", "status.json"):
        shutil.copy(SAMPLE_RUN / name, dst / name)


def make_hostile_run(root: Path) -> Path:
    """The failed run HOSTILE_NAME: every string field of its files holds control sequences."""
    run = root / HOSTILE_NAME
    _copy_sample(run)
    status = json.loads((run / "status.json").read_text())
    status.update(
        state="failed",
        error={"type": ERROR_TYPE, "message": ERROR_MESSAGE},
        model_family=MODEL[0],
        model_size=MODEL[1],
        task="detect" + QUERY,
        best_metric_name=METRIC,
        save_dir=str(run),
    )
    (run / "status.json").write_text(json.dumps(status))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    with open(run / "metrics.jsonl", "w") as f:
        for row in rows:
            row[METRIC] = row.pop("metrics/mAP50-95")
            row["best_metric_name"] = row["current_metric_name"] = METRIC
            f.write(json.dumps(row) + "\n")
    with open(run / "train.log", "a") as f:
        f.write("".join(line + "\n" for line in LOG_LINES))
    return run


def make_csv_run(root: Path) -> Path:
    """CSV_NAME: results.csv only, whose header names a column CSV_METRIC."""
    run = root / CSV_NAME
    run.mkdir(parents=True)
    (run / "results.csv").write_text(f"epoch,{CSV_METRIC}\n1,2.5\n2,2.0\n")
    return run


def make_bad_bytes_run(root: Path) -> str:
    """A completed run whose directory name is BAD_BYTES_NAME; returns its path as
    os.listdir spells it (surrogate-escaped)."""
    path = os.path.join(os.fsencode(root), BAD_BYTES_NAME)
    os.makedirs(path)
    shutil.copy(SAMPLE_RUN / "status.json", os.path.join(path, b"status.json"))
    shutil.copy(SAMPLE_RUN / "metrics.jsonl", os.path.join(path, b"metrics.jsonl"))
    return os.fsdecode(path)


def make_hostile_root(root: Path) -> Path:
    """All of the above under `root`; the hostile run is the newest (selected by default)."""
    root.mkdir(parents=True, exist_ok=True)
    make_csv_run(root)
    make_bad_bytes_run(root)
    run = make_hostile_run(root)
    newest = max(os.stat(p).st_mtime for p in root.iterdir()) + 10
    for p in run.iterdir():
        os.utime(p, (newest, newest))
    return root


def unsafe_chars(text: str) -> list[str]:
    """The characters of `text` a terminal could act on or that show nothing: C0 but
    newline, DEL, C1, lone surrogates, format characters (Cf: zero-width, bidi controls,
    ...) and the line and paragraph separators (Zl, Zp) that printable escapes."""
    return [
        c
        for c in text
        if (ord(c) < 0x20 and c != "\n")
        or 0x7F <= ord(c) <= 0x9F
        or 0xD800 <= ord(c) <= 0xDFFF
        or unicodedata.category(c) in ("Cf", "Zl", "Zp")
    ]


def unsafe_bytes(data: bytes) -> list[int]:
    """Bytes of a command's UTF-8 output a terminal could act on (C0 but newline, DEL),
    and C1 controls encoded as UTF-8 (C2 80..C2 9F)."""
    bad = [b for b in data if (b < 0x20 and b != 0x0A) or b == 0x7F]
    text = data.decode("utf-8", errors="strict")
    return bad + [ord(c) for c in text if 0x80 <= ord(c) <= 0x9F]
