"""`libreyolo doctor` on a dataset before a launch: run it, parse its JSON.

The doctor runs as `libreyolo doctor DATA --json --quiet`: exit 0 (maybe with
warnings), 1 (errors found), 3 (the data.yaml cannot be found or parsed: one
JSON object with `error` and `message`), 2 (bad usage). Errors block a launch;
warnings are the user's call.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass

from ..base.values import parse_json, value_text
from .launch_spec import libreyolo_executable, libreyolo_missing

DOCTOR_TIMEOUT_S = 900.0
PATHS_SHOWN = 3
TEXT_MAX = 300  # characters of any one value of the doctor's JSON (core.base.values.value_text)


@dataclass(frozen=True)
class DoctorReport:
    ok: bool  # no errors (warnings may remain)
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    output: str = ""  # the report, as text for a screen
    infos: tuple[str, ...] = ()
    exit_code: int | None = None

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def doctor_argv(data: str, imgsz=None, fast: bool = False, executable: str | None = None):
    exe = executable or libreyolo_executable() or "libreyolo"
    argv = [exe, "doctor", data, "--json", "--quiet"]
    size = _doctor_imgsz(imgsz)
    if size is not None:
        argv += ["--imgsz", str(size)]
    if fast:
        argv.append("--fast")
    return argv


def _doctor_imgsz(imgsz) -> int | None:
    """doctor takes one int: the larger side of 480x640."""
    if imgsz is None:
        return None
    try:
        return max(int(part) for part in str(imgsz).lower().split("x"))
    except ValueError:
        return None


def run_doctor(
    data: str,
    imgsz=None,
    *,
    fast: bool = False,
    timeout: float = DOCTOR_TIMEOUT_S,
    executable: str | None = None,
    env=None,
) -> DoctorReport:
    """`libreyolo doctor DATA`, parsed. Never raises; problems running it are errors."""
    exe = executable or libreyolo_executable()
    if exe is None:
        return _doctor_failed(libreyolo_missing())
    argv = doctor_argv(data, imgsz, fast, exe)
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return _doctor_failed(
            f"libreyolo doctor did not finish in {timeout:.0f} s (a huge dataset? launch "
            "without the check, or run `libreyolo doctor --fast` yourself)"
        )
    except OSError as exc:
        return _doctor_failed(f"cannot run libreyolo doctor: {exc.strerror or exc}")
    return parse_doctor(proc.returncode, proc.stdout, proc.stderr)


def _doctor_failed(message: str, exit_code: int | None = None) -> DoctorReport:
    return DoctorReport(False, (message,), output=message, exit_code=exit_code)


def _text(raw) -> str:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return raw or ""


def _t(value) -> str:
    """Any value of the doctor's JSON as text, at most TEXT_MAX characters."""
    return value_text(value, TEXT_MAX)


def _finding_line(f: dict) -> str:
    split = f" [{_t(f['split'])}]" if f.get("split") else ""
    line = f"{_t(f.get('check_id') or '?')}{split}: {_t(f.get('message') or '')}".strip()
    paths = [value_text(p, TEXT_MAX) for p in f.get("paths") or [] if p]
    if paths:
        more = f" (+{len(paths) - PATHS_SHOWN} more)" if len(paths) > PATHS_SHOWN else ""
        line += " " + ", ".join(paths[:PATHS_SHOWN]) + more
    return line


def parse_doctor(returncode: int, stdout, stderr=b"") -> DoctorReport:
    """The doctor's JSON (stdout) as a DoctorReport; stderr only when stdout is not JSON."""
    out, err = _text(stdout), _text(stderr)
    doc = None
    for candidate in (out.strip(), out.strip().splitlines()[-1] if out.strip() else ""):
        try:
            doc = parse_json(candidate)
            break
        except ValueError:
            continue
    if not isinstance(doc, dict):
        tail = " ".join((err.strip() or out.strip()).splitlines()[-3:])[:500]
        return _doctor_failed(
            f"libreyolo doctor failed (exit {returncode})" + (f": {tail}" if tail else ""),
            returncode,
        )
    if "findings" not in doc and doc.get("error"):  # exit 3: cannot read the dataset
        message = " ".join(value_text(doc.get("message") or doc["error"], TEXT_MAX).split())
        suggestion = doc.get("suggestion")
        if suggestion:
            message += f" ({_t(suggestion)})"
        return _doctor_failed(f"{_t(doc['error'])}: {message}", returncode)
    by = {"error": [], "warning": [], "info": []}
    for f in doc.get("findings") or []:
        if isinstance(f, dict) and f.get("severity") in by:
            by[f["severity"]].append(_finding_line(f))
    errors, warnings, infos = by["error"], by["warning"], by["info"]
    if returncode not in (0, 1) and not errors:
        errors.append(f"libreyolo doctor exited with status {returncode}")
    if returncode == 1 and not errors:
        errors.append("libreyolo doctor reported errors (exit 1) but listed none")
    lines = [f"libreyolo doctor {_t(doc.get('data') or '')}".rstrip()]
    stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else {}
    for split, s in (stats.get("splits") or {}).items():
        if isinstance(s, dict):
            lines.append(
                f"  {_t(split)}: {_t(s.get('images', '?'))} images, "
                f"{_t(s.get('instances', '?'))} instances"
            )
    for title, items, mark in (("ERRORS", errors, "E"), ("WARNINGS", warnings, "W")):
        if items:
            lines.append(f"{title} ({len(items)})")
            lines += [f"  {mark} {item}" for item in items]
    if infos:
        lines.append(f"INFO ({len(infos)})")
        lines += [f"  i {item}" for item in infos]
    lines.append(f"{len(errors)} error(s), {len(warnings)} warning(s), {len(infos)} info(s).")
    return DoctorReport(
        ok=not errors,
        errors=tuple(errors),
        warnings=tuple(warnings),
        output="\n".join(lines),
        infos=tuple(infos),
        exit_code=returncode,
    )
