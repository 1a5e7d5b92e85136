#!/usr/bin/env bash
# gpu_check.sh: check rgpu-tui's GPU data on a machine with NVIDIA GPUs.
#
#   scripts/gpu_check.sh            (from any directory; needs nvidia-smi and python3)
#   RGPU_SKIP_INSTALL=1 scripts/gpu_check.sh   (reuse an installed .venv)
#
# 1. installs the project into .venv (python3 -m venv .venv; pip install -e '.[train]');
# 2. prints `rgpu-tui snapshot --json`'s GPUs next to nvidia-smi's and fails when a
#    name or a total memory differs;
# 3. runs a ~20 s torch matmul load on cuda:0 and checks that device 0's util_percent
#    in `rgpu-tui snapshot --json` climbs above 30% within 10 s of the load starting;
# 4. host pids: the load writes a run's status.json with its own pid; compares the pid NVML
#    gives for it with its pid here (they differ inside a container: "host pids"), checks
#    that rgpu-tui's pid_namespace says the same and that GPU 0 is that run's
#    (runs[].gpu_indices), and prints which /dev/nvidia* the torch process holds open and
#    maps (whether CUDA opens every GPU's node, which container attribution relies on).
# Prints one PASS/FAIL line per check; exits 0 only when every check passed.
# The whole run is capped at under 5 minutes.
set -euo pipefail

TOTAL_LIMIT_S=290
if [[ -z "${RGPU_GPU_CHECK_CAPPED:-}" ]]; then
    export RGPU_GPU_CHECK_CAPPED=1
    exec timeout --kill-after=10 "$TOTAL_LIMIT_S" bash "${BASH_SOURCE[0]}" "$@"
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."

INSTALL_LIMIT_S=180
SNAPSHOT_LIMIT_S=30
LOAD_SECONDS=20
LOAD_START_LIMIT_S=60 # torch import and CUDA start-up, before the 10 s count
RISE_WITHIN_S=10
RISE_ABOVE=30

failures=0
load_pid=""
work="$(mktemp -d)"

cleanup() {
    if [[ -n "$load_pid" ]] && kill -0 "$load_pid" 2>/dev/null; then
        kill "$load_pid" 2>/dev/null || true
        wait "$load_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'printf "FAIL gpu_check: stopped (over the %s s limit?)\n" "$TOTAL_LIMIT_S"; exit 124' TERM INT

pass() { printf 'PASS %s\n' "$*"; }
fail() {
    printf 'FAIL %s\n' "$*"
    failures=$((failures + 1))
}

# real NVML only, whatever the caller's environment says
unset RGPU_FAKE_GPUS RGPU_FAKE_GPU_LOSE

runs="$work/runs"
mkdir -p "$runs"

snapshot() { # snapshot OUT_FILE: rgpu-tui snapshot --json of an empty runs root
    timeout "$SNAPSHOT_LIMIT_S" .venv/bin/rgpu-tui snapshot "$runs" --json >"$1"
}

# -- 0. a GPU to check ---------------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1; then
    fail "nvidia-smi not found: this check needs a machine with NVIDIA GPUs"
    exit 1
fi

# -- 1. install ------------------------------------------------------------------------
if [[ -n "${RGPU_SKIP_INSTALL:-}" && -x .venv/bin/rgpu-tui ]]; then
    pass "install (skipped: RGPU_SKIP_INSTALL set, .venv present)"
else
    if [[ ! -x .venv/bin/python ]]; then
        python3 -m venv .venv
    fi
    if timeout "$INSTALL_LIMIT_S" .venv/bin/pip install -q -e '.[train]' >"$work/pip.log" 2>&1; then
        pass "install: .venv/bin/pip install -e '.[train]'"
    else
        tail -n 20 "$work/pip.log" >&2 || true
        fail "install: pip install -e '.[train]' failed or took over ${INSTALL_LIMIT_S} s"
        exit 1
    fi
fi

# -- 2. rgpu-tui vs nvidia-smi ------------------------------------------------------------
if ! snapshot "$work/snap.json"; then
    fail "rgpu-tui snapshot --json failed"
    exit 1
fi
if ! timeout "$SNAPSHOT_LIMIT_S" nvidia-smi \
    --query-gpu=index,name,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw \
    --format=csv,noheader,nounits >"$work/smi.csv"; then
    fail "nvidia-smi --query-gpu failed"
    exit 1
fi

if .venv/bin/python - "$work/snap.json" "$work/smi.csv" <<'PY'; then
import csv
import json
import sys

snap_path, smi_path = sys.argv[1:3]
with open(snap_path) as f:
    gpus = json.load(f).get("gpus") or {}
if not gpus.get("available"):
    print(f"  rgpu-tui sees no GPU: {gpus.get('reason')}")
    sys.exit(1)
ours = {d["index"]: d for d in gpus.get("devices", [])}
with open(smi_path) as f:
    rows = [[c.strip() for c in row] for row in csv.reader(f) if row]
smi = {int(r[0]): r for r in rows}


def num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def show(v):
    return "N/A" if v is None else (f"{v:.0f}" if isinstance(v, float) else str(v))


print("  idx  source      name                             total MiB  used MiB  util%  temp C  power W")
bad = []
for i in sorted(set(ours) | set(smi)):
    d, r = ours.get(i), smi.get(i)
    if d is not None:
        print(
            f"  {i:>3}  rgpu-tui    {show(d.get('name')):<32} {show(d.get('mem_total_mib')):>9}"
            f"  {show(d.get('mem_used_mib')):>8}  {show(d.get('util_percent')):>5}"
            f"  {show(d.get('temperature_c')):>6}  {show(d.get('power_w')):>7}"
        )
    if r is not None:
        print(
            f"  {i:>3}  nvidia-smi  {r[1]:<32} {r[2]:>9}  {r[3]:>8}  {r[4]:>5}  {r[5]:>6}  {r[6]:>7}"
        )
    if d is None or r is None:
        bad.append(f"GPU {i} is seen by {'nvidia-smi' if d is None else 'rgpu-tui'} only")
        continue
    if d.get("state") != "ok":
        bad.append(f"GPU {i} is {d.get('state')} in rgpu-tui")
    if d.get("name") != r[1]:
        bad.append(f"GPU {i} name: rgpu-tui {d.get('name')!r} vs nvidia-smi {r[1]!r}")
    ours_total, smi_total = d.get("mem_total_mib"), num(r[2])
    if ours_total is None or smi_total is None or abs(ours_total - smi_total) > 1.0:
        bad.append(f"GPU {i} total memory: rgpu-tui {ours_total} vs nvidia-smi {r[2]} MiB")
for line in bad:
    print(f"  {line}")
sys.exit(1 if bad else 0)
PY
    pass "rgpu-tui and nvidia-smi agree on every GPU's name and total memory"
else
    fail "rgpu-tui and nvidia-smi disagree (see above)"
fi

# -- 3. a load on cuda:0 shows up -------------------------------------------------------------
started="$work/load-started"
timeout $((LOAD_SECONDS + LOAD_START_LIMIT_S)) .venv/bin/python -c '
import json, os, sys, time
from datetime import datetime, timezone
import torch

a = torch.randn(8192, 8192, device="cuda:0")
b = torch.randn(8192, 8192, device="cuda:0")
(a @ b).sum().item()  # CUDA is up and the kernels are loaded
run = sys.argv[3]  # a run of this process, as libreyolo writes it
os.makedirs(run, exist_ok=True)
now = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
status = {"schema_version": 1, "pid": os.getpid(), "state": "running", "started_at": now,
          "updated_at": now, "total_epochs": 1, "completed_epochs": 0, "current_epoch": 1}
with open(run + "/.status.json.tmp", "w") as f:
    json.dump(status, f)
os.replace(run + "/.status.json.tmp", run + "/status.json")
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(8):
        c = a @ b
    torch.cuda.synchronize()
' "$started" "$LOAD_SECONDS" "$runs/gpucheck" >"$work/load.log" 2>&1 &
load_pid=$!

waited=0
while [[ ! -e "$started" ]] && kill -0 "$load_pid" 2>/dev/null && ((waited < LOAD_START_LIMIT_S * 10)); do
    sleep 0.1
    waited=$((waited + 1))
done

if [[ ! -e "$started" ]]; then
    tail -n 20 "$work/load.log" >&2 || true
    fail "the torch load on cuda:0 did not start within ${LOAD_START_LIMIT_S} s"
else
    best="none"
    rose=""
    deadline=$((SECONDS + RISE_WITHIN_S))
    while ((SECONDS < deadline)); do
        if snapshot "$work/poll.json"; then
            util="$(.venv/bin/python - "$work/poll.json" <<'PY'
import json
import sys

with open(sys.argv[1]) as f:
    gpus = json.load(f).get("gpus") or {}
dev0 = [d for d in gpus.get("devices", []) if d.get("index") == 0]
u = dev0[0].get("util_percent") if dev0 else None
print("none" if u is None else f"{u:.0f}")
PY
            )"
            printf '  after %2d s: device 0 util %s%%\n' $((SECONDS - deadline + RISE_WITHIN_S)) "$util"
            if [[ "$util" != "none" ]]; then
                best="$util"
                if ((util > RISE_ABOVE)); then
                    rose="yes"
                    break
                fi
            fi
        fi
        sleep 1
    done
    if [[ -n "$rose" ]]; then
        pass "device 0 util_percent rose to ${best}% (> ${RISE_ABOVE}%) within ${RISE_WITHIN_S} s of the load"
    else
        fail "device 0 util_percent stayed at ${best}% (not > ${RISE_ABOVE}%) for ${RISE_WITHIN_S} s under load"
    fi

    # -- 4. host pids ------------------------------------------------------------------
    local_pid="$(cat "$started")"
    printf '  the torch process here: pid %s; its /dev/nvidia* descriptors and mappings:\n' "$local_pid"
    ls -l "/proc/$local_pid/fd" 2>/dev/null | grep -o '/dev/nvidia[^ ]*' | sort | uniq -c | sed 's/^/    fd  /' || true
    grep -o '/dev/nvidia[^ ]*' "/proc/$local_pid/maps" 2>/dev/null | sort | uniq -c | sed 's/^/    map /' || true
    if snapshot "$work/pids.json" && .venv/bin/python - "$work/pids.json" "$local_pid" <<'PY'; then
import json
import sys

with open(sys.argv[1]) as f:
    data = json.load(f)
local = int(sys.argv[2])
gpus = data.get("gpus") or {}
dev0 = [d for d in gpus.get("devices", []) if d.get("index") == 0]
nvml_pids = [p["pid"] for p in dev0[0]["processes"]] if dev0 else []
print(f"  NVML's pids on GPU 0: {nvml_pids}; rgpu-tui's pid_namespace: {gpus.get('pid_namespace')}")
if local in nvml_pids:
    seen = "local"
    print("  NVML gives this machine's pids (the torch process's pid is among them)")
elif nvml_pids:
    seen = "host"
    print("  host pids: NVML's pid for the torch process differs from its pid here (a container)")
else:
    print("  NVML lists no process on GPU 0 under load")
    sys.exit(1)
for p in dev0[0]["processes"]:
    print(f"  process {p['pid']}: kind {p['kind']}, local_pid {p.get('local_pid')}, "
          f"run {p.get('run_dir')}, candidates {p.get('local_candidates')}")
runs = [r for r in data.get("runs", []) if r["run_dir"].endswith("/gpucheck")]
indices = runs[0].get("gpu_indices") if runs else None
print(f"  the torch process's run: state {runs[0]['state'] if runs else None}, gpu_indices {indices}")
ok = gpus.get("pid_namespace") == seen and indices is not None and 0 in indices
sys.exit(0 if ok else 1)
PY
        pass "pids: rgpu-tui reads NVML's pids right (local or host) and GPU 0 is the torch process's run's"
    else
        fail "pids: rgpu-tui's pid_namespace or the run's gpu_indices is wrong (see above)"
    fi
fi

if ((failures)); then
    printf 'FAIL gpu_check: %d check(s) failed\n' "$failures"
    exit 1
fi
printf 'PASS gpu_check: every check passed\n'
