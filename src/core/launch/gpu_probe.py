"""The GPU preflight: can torch in the training environment use every GPU?

It runs a small script in a subprocess with the training environment's
Python, the one that runs `libreyolo` (core.launch.training_env): a wedged driver
cannot hang the app, and a crash is the child's. The script reports torch's
version, whether CUDA is available, each device's name, and one 2000x2000
matmul per device. A wheel built for other GPU architectures reports CUDA
available and then fails on the first kernel ("no kernel image is available
for execution on the device"); the verdict says so plainly.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from .launch_spec import INSTALL_EXTRA, libreyolo_executable
from .training_env import training_python

MATMUL_N = 2000
PREFLIGHT_TIMEOUT_S = 120.0
NO_KERNEL = "no kernel image is available"

# One JSON object per line, flushed, so a crash halfway still tells how far it got.
PROBE_SCRIPT = f"""
import json, sys, time
def emit(**kw):
    print(json.dumps(kw), flush=True)
def first_line(exc):
    text = str(exc).strip().splitlines()
    return type(exc).__name__ + ": " + (text[0] if text else "")
try:
    import torch
except Exception as exc:
    emit(event="no_torch", error=first_line(exc))
    sys.exit(0)
info = dict(event="torch", version=str(torch.__version__),
            cuda=getattr(torch.version, "cuda", None))
try:
    info["available"] = bool(torch.cuda.is_available())
except Exception as exc:
    info["available"] = False
    info["error"] = first_line(exc)
if not info["available"] and info.get("cuda") and "error" not in info:
    try:
        torch.cuda.init()
    except Exception as exc:
        info["error"] = first_line(exc)
info["count"] = torch.cuda.device_count() if info["available"] else 0
try:
    info["arch_list"] = list(torch.cuda.get_arch_list()) if info["available"] else []
except Exception:
    info["arch_list"] = []
emit(**info)
for i in range(info["count"]):
    d = dict(event="device", index=i, ok=False)
    try:
        d["name"] = torch.cuda.get_device_name(i)
        major, minor = torch.cuda.get_device_capability(i)
        d["capability"] = "sm_%d%d" % (major, minor)
        dev = torch.device("cuda", i)
        a = torch.randn({MATMUL_N}, {MATMUL_N}, device=dev)
        (a @ a).sum().item()
        torch.cuda.synchronize(dev)
        t = time.perf_counter()
        b = a @ a
        torch.cuda.synchronize(dev)
        d["ms"] = (time.perf_counter() - t) * 1000.0
        d["ok"] = bool(torch.isfinite(b).all().item())
        if not d["ok"]:
            d["error"] = "the matmul gave NaN or inf"
    except Exception as exc:
        d["error"] = first_line(exc)
    emit(**d)
emit(event="done")
"""


@dataclass(frozen=True)
class DeviceCheck:
    index: int
    name: str | None
    ok: bool
    error: str | None = None
    ms: float | None = None
    capability: str | None = None


@dataclass(frozen=True)
class PreflightReport:
    ok: bool
    torch_version: str | None
    cuda_available: bool
    devices: tuple[DeviceCheck, ...] = ()
    verdict: str = ""  # one line
    error: str | None = None
    cuda_version: str | None = None  # what the torch wheel was built for
    arch_list: tuple[str, ...] = ()
    python: str = field(default_factory=lambda: sys.executable)

    def to_json(self) -> dict:
        data = asdict(self)
        data["devices"] = [asdict(d) for d in self.devices]
        data["arch_list"] = list(self.arch_list)
        return data


def probe_argv(python: str | None = None) -> list[str]:
    return [python or sys.executable, "-c", PROBE_SCRIPT]


def gpu_preflight(
    timeout: float = PREFLIGHT_TIMEOUT_S, python: str | None = None, env=None
) -> PreflightReport:
    """Run the probe with `python` (default: the training environment's, which the report
    names); never raises."""
    # no libreyolo anywhere: the probe falls back to rgpu-tui's own Python, whose missing
    # torch is no fault of the monitor's venv (docs: keep training apart)
    own = python is None and libreyolo_executable() is None
    python = python or training_python()
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        msg = f"the GPU check needs a finite timeout above 0 s, got {timeout!r}"
        return PreflightReport(False, None, False, verdict=msg, error=msg, python=python)
    try:
        proc = subprocess.run(
            probe_argv(python),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        out, err = exc.stdout or b"", exc.stderr or b""
        return parse_probe(None, out, err, python, timeout=timeout, own_python=own)
    except OSError as exc:
        msg = f"cannot run {python}: {exc.strerror or exc}"
        return PreflightReport(False, None, False, verdict=msg, error=msg, python=python)
    return parse_probe(proc.returncode, proc.stdout, proc.stderr, python, own_python=own)


def _events(stdout: str) -> list[dict]:
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event"), str):
            out.append(obj)
    return out


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _first_sentence(error: str | None) -> str | None:
    """'RuntimeError: Found no NVIDIA driver on your system. Please check...' -> the finding."""
    if not error:
        return None
    text = re.sub(r"^[A-Za-z_.]*(Error|Exception|Warning): ", "", error.strip())
    return re.split(r"(?<=[a-z0-9)])\. ", text, maxsplit=1)[0].rstrip(".")


def _text(raw) -> str:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return raw or ""


def _ms(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def parse_probe(
    returncode: int | None,
    stdout,
    stderr=b"",
    python: str | None = None,
    timeout: float | None = None,
    own_python: bool = False,
) -> PreflightReport:
    """The probe's output as a PreflightReport (returncode None: it timed out). own_python:
    `python` is rgpu-tui's own, for want of a libreyolo (then no torch is to be installed
    there: the training environment is elsewhere)."""
    python = python or sys.executable
    out, err = _text(stdout), _text(stderr)
    events = _events(out)
    kinds = {e["event"]: e for e in events}
    devices = tuple(
        DeviceCheck(
            index=int(e.get("index", i)),
            name=e.get("name") if isinstance(e.get("name"), str) else None,
            ok=e.get("ok") is True,
            error=e.get("error") if isinstance(e.get("error"), str) else None,
            ms=_ms(e.get("ms")),
            capability=e.get("capability") if isinstance(e.get("capability"), str) else None,
        )
        for i, e in enumerate(e for e in events if e["event"] == "device")
    )

    def report(ok: bool, verdict: str, error: str | None = None) -> PreflightReport:
        t = kinds.get("torch") or {}
        return PreflightReport(
            ok=ok,
            torch_version=t.get("version") if isinstance(t.get("version"), str) else None,
            cuda_available=t.get("available") is True,
            devices=devices,
            verdict=verdict,
            error=error,
            cuda_version=t.get("cuda") if isinstance(t.get("cuda"), str) else None,
            arch_list=tuple(str(a) for a in t.get("arch_list") or ()),
            python=python,
        )

    if "no_torch" in kinds and own_python:
        verdict = (
            f"torch is not installed for {python}, rgpu-tui's own Python (no `libreyolo` "
            "beside it or on PATH): activate the training environment, or put its bin/ folder "
            "on PATH, and check again; the monitor's venv needs no torch (no training "
            f"environment yet: a venv of its own with pip install '{INSTALL_EXTRA}')"
        )
        return report(False, verdict, kinds["no_torch"].get("error"))
    if "no_torch" in kinds:
        verdict = (
            f"torch is not installed for {python}: "
            f"install it with `{python} -m pip install '{INSTALL_EXTRA}'`"
        )
        return report(False, verdict, kinds["no_torch"].get("error"))

    t = kinds.get("torch")
    if t is None:  # crashed or hung before torch said anything
        if returncode is None:
            verdict = f"the GPU check did not finish in {timeout or 0:.0f} s (importing torch hung)"
            return report(False, verdict, verdict)
        why = _last_line(err) or _last_line(out) or "no output"
        verdict = f"the GPU check crashed (exit {returncode}) before torch loaded: {why}"
        return report(False, verdict, why)

    version = t.get("version") or "?"
    if not t.get("available"):
        if not t.get("cuda"):
            verdict = (
                f"CUDA is not available: torch {version} is a CPU-only build; install a CUDA "
                "build of torch for this machine's driver"
            )
        else:
            why = _first_sentence(t.get("error")) or "torch.cuda.is_available() is False"
            verdict = f"CUDA is not available: {why} (torch {version}, built for CUDA {t['cuda']})"
        return report(False, verdict, t.get("error"))

    count = t.get("count") or 0
    if count == 0:
        return report(False, f"torch {version} says CUDA is available but sees no GPU")

    no_kernel = [d for d in devices if d.error and NO_KERNEL in d.error.lower()]
    if no_kernel:
        d = no_kernel[0]
        cap = f", {d.capability}" if d.capability else ""
        built = " ".join(t.get("arch_list") or []) or "other architectures"
        verdict = (
            f"torch {version} cannot run on GPU {d.index} ({d.name or '?'}{cap}): no kernel "
            f"image is available for execution on the device; this wheel was built for "
            f"{built}: install a torch build that supports this GPU"
        )
        return report(False, verdict, d.error)

    failed = [d for d in devices if not d.ok]
    if failed:
        d = failed[0]
        verdict = (
            f"GPU {d.index} ({d.name or '?'}) failed a {MATMUL_N}x{MATMUL_N} matmul: "
            f"{d.error or 'unknown error'}"
        )
        return report(False, verdict, d.error)

    missing = count - len(devices)
    if missing > 0 or "done" not in kinds:
        where = f"GPU {len(devices)}" if missing > 0 else "the end"
        if returncode is None:
            verdict = f"the GPU check hung at {where} (no answer in {timeout or 0:.0f} s)"
        else:
            why = _last_line(err) or "no error output"
            verdict = f"the GPU check crashed (exit {returncode}) at {where}: {why}"
        return report(False, verdict, verdict)

    times = ", ".join(f"{d.ms:.1f} ms" for d in devices if d.ms is not None)
    names = sorted({d.name or "?" for d in devices})
    verdict = (
        f"OK: torch {version} (CUDA {t.get('cuda') or '?'}) ran a {MATMUL_N}x{MATMUL_N} matmul "
        f"on {len(devices)} GPU(s) ({', '.join(names)}; {times})"
    )
    return report(True, verdict)


def preflight_to_text(report: PreflightReport) -> str:
    lines = [report.verdict, f"  python: {report.python}"]
    if report.torch_version:
        cuda = f", built for CUDA {report.cuda_version}" if report.cuda_version else ", CPU only"
        lines.append(f"  torch: {report.torch_version}{cuda}")
        lines.append(f"  CUDA available: {'yes' if report.cuda_available else 'no'}")
    for d in report.devices:
        cap = f" ({d.capability})" if d.capability else ""
        if d.ok:
            ms = f"{d.ms:.1f} ms" if d.ms is not None else "?"
            lines.append(f"  GPU {d.index}: {d.name or '?'}{cap}: matmul {ms}")
        else:
            lines.append(f"  GPU {d.index}: {d.name or '?'}{cap}: FAILED: {d.error}")
    return "\n".join(lines)
