#!/usr/bin/env python
"""What the real app costs: CPU, bytes to the terminal, start time, snapshot time, memory.

Runs the real console script (``.venv/bin/rgpu-tui ROOT --fake-gpus 8``) in a
pseudo-terminal (``pty.fork``, TERM=xterm-256color, the window size set with
TIOCSWINSZ before exec) against a runs root that holds one live run, replayed by
``bench/replay.py`` (one epoch every 2 s, 10 train.log lines a second, 200
epochs of history already written) and the completed fixture run. The pty
master is drained continuously and every byte is counted.

For each size (default 120x40 and 80x24): after a warm-up (10 s) it measures,
over ``--seconds`` (60), the app's CPU (``psutil`` user+system time of the
process, all its threads, over wall time, in % of one core) and the bytes
written to the terminal per second; then it sends ``q`` (SIGTERM, then SIGKILL,
only if that fails) and records the exit. Also:

* start to first frame: spawn until the output stream (escape sequences
  stripped) holds ``runs (``, the runs pane's title once the first Snapshot is
  shown (median of ``--start-samples`` short starts at 120x40);
* ``rgpu-tui snapshot --json ROOT --fake-gpus 8`` wall time (median of 5);
* memory after one hour of history for 8 GPUs: in a child process, a simulated
  clock drives the replayer and 3600 refreshes, one per simulated second
  (which fills the 10-minute ring buffers and every cache); measured for the
  Collector alone and for the whole app (RgpuApp, prefilled the same way, then
  run headless at 120x40 for a few seconds); plus the pty app's RSS at the end.
* ``--tmux``: the same measurement with the app inside a private tmux server
  (``-L rgpu-bench``; tmux's client runs in the pty), so the bytes counted are
  what tmux sends its client, i.e. what crosses the SSH link in real use.
* ``--rows-report``: which screen rows the bytes went to (cursor-position
  escapes in the stream), mapped to the panes of a headless layout.

It asserts nothing; it prints a table against the budget, or ``--json``.

    .venv/bin/python bench/bench_app.py                     # about 4 minutes on 2 cores
    .venv/bin/python bench/bench_app.py --seconds 20 --warmup 5 --no-memory --json
    .venv/bin/python bench/bench_app.py --tmux --rows-report --repeat 3   # about 13 minutes
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import benchlib
import psutil
from benchlib import log

REPO = Path(__file__).resolve().parents[1]
FIXTURE_RUN = REPO / "tests" / "fixtures" / "run_completed"
DEFAULT_APP = REPO / ".venv" / "bin" / "rgpu-tui"
REPLAY = Path(__file__).resolve().parent / "replay.py"
LIVE_RUN = "yolo9t-live"
DONE_RUN = "yolo9t-done"
PRICE = "3.4828"  # the seed guide's rate
TMUX_SOCKET = "rgpu-bench"
FIRST_FRAME = b"runs ("

BUDGET = {
    "cpu_120x40": 1.0,  # % of one core
    "cpu_80x24": 1.0,
    "bytes_120x40": 4096.0,  # bytes/s to the terminal
    "first_frame_s": 1.0,
    "snapshot_s": 0.6,
    "rss_mb": 120.0,
}

# CSI, OSC and two-byte escapes: what the terminal interprets, not text
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CUP = re.compile(rb"\x1b\[(\d+);(\d+)H")


def machine() -> dict:
    return {
        **benchlib.machine(),
        "textual": benchlib.package_version("textual"),
        "loadavg_start": list(os.getloadavg()),
    }


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# -- the runs root ----------------------------------------------------------------


def make_root(base: Path) -> Path:
    root = base / "runs"
    root.mkdir(parents=True)
    shutil.copytree(FIXTURE_RUN, root / DONE_RUN)
    return root


def start_replayer(
    run_dir: Path, prefill: int, epochs: int, lines_per_s: float = 10.0
) -> subprocess.Popen:
    argv = [
        sys.executable,
        str(REPLAY),
        str(run_dir),
        "--epoch-seconds",
        "2",
        "--log-lines-per-second",
        str(lines_per_s),
        "--epochs",
        str(epochs),
        "--prefill-epochs",
        str(prefill),
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (run_dir / "status.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the replayer did not start")
        time.sleep(0.05)
    return proc


def stop_replayer(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def app_env(base: Path, colorterm: str | None) -> dict:
    """The user's environment without rgpu-tui/Textual settings, a clean config dir."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RGPU_", "TEXTUAL", "TMUX")) and k not in ("COLORTERM", "NO_COLOR")
    }
    config = base / "config"
    config.mkdir(exist_ok=True)
    env["XDG_CONFIG_HOME"] = str(config)
    env["TERM"] = "xterm-256color"
    env.setdefault("LANG", "C.UTF-8")
    if colorterm:
        env["COLORTERM"] = colorterm
    return env


def app_argv(args, root: Path) -> list[str]:
    argv = [str(args.app), str(root), "--fake-gpus", str(args.gpus)]
    if args.price:
        argv += ["--price-per-hour", PRICE]
    if args.theme:
        argv += ["--theme", args.theme]
    return argv


# -- a program in a pseudo-terminal ---------------------------------------------------


class Recorder:
    """Drains the pty master in a thread; keeps every chunk with its arrival time."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.chunks: list[tuple[float, bytes]] = []
        self.total = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO: the other side is closed
                break
            if not data:
                break
            with self.lock:
                self.chunks.append((time.monotonic(), data))
                self.total += len(data)

    def bytes_now(self) -> int:
        with self.lock:
            return self.total

    def first_time(self, needle: bytes, since: float) -> float | None:
        """Seconds from `since` until the (escape-stripped) stream first holds `needle`."""
        with self.lock:
            chunks = list(self.chunks)
        raw = b""
        for t, data in chunks:
            raw += data
            if needle in _ESCAPES.sub(b"", raw):
                return t - since
        return None

    def window(self, t0: float, t1: float) -> list[tuple[float, bytes]]:
        with self.lock:
            return [(t, d) for t, d in self.chunks if t0 <= t < t1]


def spawn_in_pty(argv: list[str], env: dict, cols: int, rows: int) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin/stdout/stderr are the pty's slave side
        try:
            winsize = struct.pack("HHHH", rows, cols, 0, 0)
            fcntl.ioctl(0, termios.TIOCSWINSZ, winsize)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def wait_exit(pid: int, timeout: float) -> int | None:
    """The child's exit status (as waitstatus_to_exitcode) or None while it runs."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return -1
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def stop_child(pid: int, fd: int, quit_key: bool = True) -> dict:
    """`q`, then SIGTERM, then SIGKILL; says which one ended it."""
    how, code = None, None
    if quit_key:
        try:
            os.write(fd, b"q")
        except OSError:
            pass
        code = wait_exit(pid, 5.0)
        how = "q" if code is not None else None
    if code is None:
        os.kill(pid, signal.SIGTERM)
        code = wait_exit(pid, 3.0)
        how = "SIGTERM" if code is not None else None
    if code is None:
        os.kill(pid, signal.SIGKILL)
        code = wait_exit(pid, 3.0)
        how = "SIGKILL"
    return {"stopped_by": how, "exit_code": code}


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def thread_cpu_ns(pid: int) -> dict[int, tuple[int, int]]:
    """(CPU time in ns, times scheduled onto a CPU) of each thread of *pid*, from
    /proc/PID/task/TID/schedstat (exact, unlike the tick-based utime/stime); threads that end
    between reads are skipped."""
    out: dict[int, tuple[int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
            out[int(task.name)] = (int(fields[0]), int(fields[2]))
        except (OSError, ValueError, IndexError):
            continue
    return out


def threads_ms_per_s(pid: int, before: dict[int, tuple[int, int]], wall: float) -> list[dict]:
    """ms of CPU and wake-ups per second of each thread over the window, the main thread
    first, then by thread id (the order they started in). A wake-up is not free: on the
    2-core VM of bench/RESULTS.md an idle thread waking 10 times a second costs 2 ms/s."""
    after = thread_cpu_ns(pid)
    order = sorted(after, key=lambda tid: (tid != pid, tid))
    rows = []
    for n, tid in enumerate(order):
        ns0, runs0 = before.get(tid, (0, 0))
        ns1, runs1 = after[tid]
        rows.append(
            {
                "thread": "main" if tid == pid else f"thread {n}",
                "ms_per_s": round((ns1 - ns0) / 1e6 / wall, 3),
                "wakes_per_s": round((runs1 - runs0) / wall, 1),
            }
        )
    return rows


def find_tmux_pane_pid(env: dict, timeout: float = 10.0) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["tmux", "-L", TMUX_SOCKET, "list-panes", "-a", "-F", "#{pane_pid}"],
            capture_output=True,
            text=True,
            env=env,
        )
        if out.returncode == 0 and out.stdout.strip():
            return int(out.stdout.split()[0])
        time.sleep(0.1)
    return None


def session(args, root: Path, base: Path, cols: int, rows: int, tmux: bool = False) -> dict:
    """One app run in a pty: warm-up, then the measured window."""
    env = app_env(base, args.colorterm)
    argv = app_argv(args, root)
    tmux_conf = base / "tmux.conf"
    if tmux:
        # status off: the pane is the whole window, as in the direct runs
        tmux_conf.write_text('set -g default-terminal "screen-256color"\nset -g status off\n')
        argv = ["/usr/bin/env", "tmux", "-L", TMUX_SOCKET, "-f", str(tmux_conf), "new-session"]
        argv += app_argv(args, root)
    t_spawn = time.monotonic()
    pid, fd = spawn_in_pty(argv, env, cols, rows)
    rec = Recorder(fd)
    res: dict = {"size": f"{cols}x{rows}", "mode": "tmux" if tmux else "direct"}
    res.update(app=str(args.app), gpus=args.gpus, chart=bool(args.chart))
    try:
        app_pid = pid
        server = None
        if tmux:
            app_pid = find_tmux_pane_pid(env)
            if app_pid is None:
                raise RuntimeError("tmux pane not found")
            server = psutil.Process(app_pid).parent()
        proc = psutil.Process(app_pid)
        if args.chart:  # the chart view, opened once the first frame is there
            time.sleep(min(3.0, args.warmup / 2))
            os.write(fd, b"v")
            time.sleep(max(args.warmup - min(3.0, args.warmup / 2), 0.0))
        else:
            time.sleep(args.warmup)
        res["first_output_s"] = rec.first_time(b"", t_spawn) if rec.bytes_now() else None
        res["first_frame_s"] = rec.first_time(FIRST_FRAME, t_spawn)
        t0, c0, b0 = time.monotonic(), cpu_seconds(proc), rec.bytes_now()
        s0 = cpu_seconds(server) if server else None
        th0 = thread_cpu_ns(app_pid)
        slices: list[tuple[float, float, int]] = [(t0, c0, b0)]
        end = t0 + args.seconds
        while (now := time.monotonic()) < end:
            time.sleep(min(1.0, end - now))
            slices.append((time.monotonic(), cpu_seconds(proc), rec.bytes_now()))
        t1, c1, b1 = slices[-1]
        wall = t1 - t0
        res["seconds"] = round(wall, 2)
        res["cpu_percent"] = 100.0 * (c1 - c0) / wall
        res["bytes_per_s"] = (b1 - b0) / wall
        res["thread_ms_per_s"] = threads_ms_per_s(app_pid, th0, wall)
        # exact (schedstat), where cpu_percent counts clock ticks: a short window needs it
        res["cpu_percent_exact"] = sum(t["ms_per_s"] for t in res["thread_ms_per_s"]) / 10
        per_s = [
            (b - pb) / (t - pt)
            for (pt, _pc, pb), (t, _c, b) in zip(slices, slices[1:], strict=False)
        ]
        res["bytes_per_s_p50"] = median(per_s)
        res["bytes_per_s_max"] = max(per_s) if per_s else None
        if server is not None:
            res["tmux_server_cpu_percent"] = 100.0 * (cpu_seconds(server) - s0) / wall
        mem = proc.memory_info()
        res["rss_mb_end"] = mem.rss / 2**20
        res["threads"] = proc.num_threads()
        res["loadavg"] = list(os.getloadavg())
        if args.rows_report and not tmux:
            res["rows"] = rows_report(rec.window(t0, t1), wall)
        if args.save_stream:
            out = Path(args.save_stream)
            out.mkdir(parents=True, exist_ok=True)
            name = f"{res['mode']}-{cols}x{rows}-{int(time.time())}.bin"
            (out / name).write_bytes(b"".join(d for _t, d in rec.window(t0, t1)))
            res["stream_file"] = str(out / name)
    finally:
        res.update(stop_child(pid, fd))
        if tmux:
            subprocess.run(["tmux", "-L", TMUX_SOCKET, "kill-server"], capture_output=True, env=env)
        rec.thread.join(2.0)
        os.close(fd)
    return res


def start_sample(args, root: Path, base: Path, cols: int = 120, rows: int = 40) -> dict:
    """Spawn, wait for the first frame with the runs list, quit."""
    env = app_env(base, args.colorterm)
    t_spawn = time.monotonic()
    pid, fd = spawn_in_pty(app_argv(args, root), env, cols, rows)
    rec = Recorder(fd)
    found = None
    res: dict = {}
    try:
        deadline = t_spawn + 15.0
        while time.monotonic() < deadline:
            found = rec.first_time(FIRST_FRAME, t_spawn)
            if found is not None:
                break
            time.sleep(0.02)
        res["first_frame_s"] = found
        res["first_output_s"] = rec.first_time(b"", t_spawn)
    finally:
        res.update(stop_child(pid, fd))
        rec.thread.join(2.0)
        os.close(fd)
    return res


# -- where the bytes go -----------------------------------------------------------------


def rows_report(chunks: list[tuple[float, bytes]], wall: float) -> dict:
    """Bytes per second by screen position: each byte counts for the last cursor move
    (CUP, ``ESC[row;colH``) before it; keys are "row,col", 0-based."""
    stream = b"".join(d for _t, d in chunks)
    per_pos: dict[tuple[int, int], int] = {}
    key = (0, 0)
    pos = 0
    for m in _CUP.finditer(stream):
        per_pos[key] = per_pos.get(key, 0) + (m.start() - pos)
        key = (int(m.group(1)) - 1, int(m.group(2)) - 1)
        pos = m.start()
    per_pos[key] = per_pos.get(key, 0) + (len(stream) - pos)
    return {f"{r},{c}": round(n / wall, 1) for (r, c), n in sorted(per_pos.items())}


def panes_report(positions: dict, layout: dict) -> dict:
    """Bytes/s per pane: each "row,col" goes to the smallest pane region holding it."""
    out: dict[str, float] = {}
    for key, rate in positions.items():
        y, x = (int(v) for v in key.split(","))
        best = None
        for name, (rx, ry, rw, rh) in layout.items():
            if rx <= x < rx + rw and ry <= y < ry + rh:
                if best is None or rw * rh < best[1]:
                    best = (name, rw * rh)
        name = best[0] if best else "?"
        out[name] = round(out.get(name, 0.0) + rate, 1)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def layout_child(root: str, cols: int, rows: int, gpus: int, price: bool) -> dict:
    """The panes' rows in a headless run of the app at this size (for --rows-report)."""
    from rgpu_tui.core.base.config import Settings
    from rgpu_tui.tui.app import RgpuApp

    settings = Settings(price_per_hour=float(PRICE)) if price else None
    app = RgpuApp(root, fake_gpus=gpus, settings=settings)
    out: dict = {}

    async def go() -> None:
        async with app.run_test(size=(cols, rows)) as pilot:
            await pilot.pause(2.5)
            for w in app.screen.walk_children():
                name = w.id or ("footer" if type(w).__name__ == "Footer" else None)
                if name and w.display and w.region.height:
                    r = w.region
                    out[name] = [r.x, r.y, r.width, r.height]

    asyncio.run(go())
    return out


# -- profiling ------------------------------------------------------------------------


def profile_child(out_dir: str, app_args: list[str]) -> int:
    """Run the app under cProfile (main thread) with repaint counters; write them at exit.

    Counts, per widget: refresh() calls (and how many asked for a layout), render
    calls (``_render``, i.e. the widget's content was rebuilt) and render_lines
    calls; and the compositor's full and partial screen updates.
    """
    import cProfile
    import io
    import pstats
    from collections import Counter

    from textual._compositor import Compositor
    from textual.widget import Widget

    from rgpu_tui.cli import main as cli_main

    counts: dict[str, Counter] = {k: Counter() for k in ("refresh", "layout", "render", "lines")}
    frames = Counter()

    def name(w) -> str:
        return f"{type(w).__name__}#{w.id}" if w.id else type(w).__name__

    def wrap(cls, attr, fn):
        orig = getattr(cls, attr)

        def wrapper(self, *a, **k):
            fn(self, *a, **k)
            return orig(self, *a, **k)

        setattr(cls, attr, wrapper)

    def on_refresh(self, *regions, repaint=True, layout=False, recompose=False):
        counts["refresh"][name(self)] += 1
        if layout:
            counts["layout"][name(self)] += 1

    wrap(Widget, "refresh", on_refresh)
    wrap(Widget, "_render", lambda self: counts["render"].update([name(self)]))
    wrap(Widget, "render_lines", lambda self, crop: counts["lines"].update([name(self)]))
    wrap(Compositor, "render_full_update", lambda self, simplify=False: frames.update(["full"]))
    wrap(Compositor, "render_partial_update", lambda self: frames.update(["partial"]))

    prof = cProfile.Profile()
    started = time.monotonic()
    prof.enable()
    try:
        code = cli_main(app_args)
    finally:
        prof.disable()
        wall = time.monotonic() - started
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(str(out / "app.prof"))
        text = io.StringIO()
        stats = pstats.Stats(prof, stream=text)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)
        (out / "app-profile.txt").write_text(text.getvalue())
        summary = {
            "wall_s": wall,
            "frames": dict(frames),
            **{k: dict(v.most_common()) for k, v in counts.items()},
        }
        (out / "app-counts.json").write_text(json.dumps(summary, indent=2))
    return code


def profile_session(args, root: Path, base: Path, cols: int, rows: int, out_dir: str) -> dict:
    """The app under profile_child in the pty, warm-up then `--seconds`, then `q`."""
    env = app_env(base, args.colorterm)
    argv = [sys.executable, str(Path(__file__).resolve()), "--profile-child", out_dir, "--"]
    argv += app_argv(args, root)[1:]
    pid, fd = spawn_in_pty(argv, env, cols, rows)
    rec = Recorder(fd)
    try:
        time.sleep(args.warmup + args.seconds)
    finally:
        res = stop_child(pid, fd)
        rec.thread.join(2.0)
        os.close(fd)
    res["bytes"] = rec.total
    try:
        res["counts"] = json.loads((Path(out_dir) / "app-counts.json").read_text())
    except (OSError, ValueError) as exc:
        res["error"] = str(exc)
    return res


# -- snapshot --json ---------------------------------------------------------------------


def time_snapshot(args, root: Path, base: Path, n: int = 5) -> dict:
    env = app_env(base, None)
    argv = [str(args.app), "snapshot", "--json", str(root), "--fake-gpus", str(args.gpus)]
    if args.price:
        argv += ["--price-per-hour", PRICE]
    times, ok = [], True
    for _ in range(n):
        t = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
        try:
            data = json.loads(out.stdout)
            ok = ok and out.returncode == 0 and len(data.get("runs", [])) == 2
        except ValueError:
            ok = False
    return {"snapshot_s": median(times), "snapshot_all_s": times, "snapshot_ok": ok}


# -- memory after an hour ---------------------------------------------------------------


class SimClock:
    """Simulated time: set explicitly while prefilling, then it runs with the wall clock."""

    def __init__(self, start: float) -> None:
        self.base = start
        self.real = time.time()

    def set(self, t: float) -> None:
        self.base, self.real = t, time.time()

    def __call__(self) -> float:
        return self.base + (time.time() - self.real)


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def memory_child(kind: str, base: str, seconds: int, gpus: int, price: bool) -> dict:
    """In a fresh process: RSS after `seconds` simulated seconds of a live run, 1 Hz."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from replay import Replayer

    res: dict = {"kind": kind, "simulated_seconds": seconds}
    if kind == "app":
        from rgpu_tui.tui.app import RgpuApp  # noqa: F401  (Textual in the baseline)
    from rgpu_tui.core.picture.collect import Collector

    root = Path(base) / "runs"
    run_dir = root / LIVE_RUN
    t0 = time.time()
    clock = SimClock(t0)
    rep = Replayer(run_dir, epochs=5000, touch_mtime=True, clock=clock)
    rep.start(now=t0)
    res["rss_mb_imports"] = rss_mb()
    app = None
    from rgpu_tui.core.base.config import Settings

    settings = Settings(price_per_hour=float(PRICE)) if price else Settings()
    if kind == "app":
        from rgpu_tui.tui.app import RgpuApp

        app = RgpuApp(str(root), fake_gpus=gpus, clock=clock, settings=settings)
        collector, selected = app.collector, app.selected
    else:
        collector = Collector(str(root), fake_gpus=gpus, log_keep=500, settings=settings)
        selected = None
    spent = 0.0
    for k in range(1, seconds + 1):
        t = t0 + k
        rep.advance(t)
        started = time.perf_counter()
        snap = collector.refresh(now=t, selected=selected)
        spent += time.perf_counter() - started
    res["refresh_ms_mean"] = 1000 * spent / max(seconds, 1)
    clock.set(t0 + seconds)
    res["epochs"] = rep.epochs_done
    res["log_lines"] = rep.lines_written
    res["gpus"] = len(snap.gpus.devices) if snap.gpus else 0
    res["rss_mb_history"] = rss_mb()
    if app is not None:

        async def go() -> None:
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause(4.0)
                res["rss_mb_app_running"] = rss_mb()
                res["app_state"] = app.snapshot.runs[0].state if app.snapshot else None

        asyncio.run(go())
    res["rss_mb"] = res.get("rss_mb_app_running", res["rss_mb_history"])
    rep.finish(now=clock())
    return res


def run_memory(args, seconds: int) -> dict:
    out = {}
    for kind in ("collector", "app"):
        with tempfile.TemporaryDirectory(prefix="rgpu-bench-mem-") as d:
            argv = [sys.executable, __file__, "--memory-child", kind, "--mem-dir", d]
            argv += ["--mem-seconds", str(seconds), "--gpus", str(args.gpus)]
            if not args.price:
                argv.append("--no-price")
            p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                out[kind] = {"error": p.stderr.strip().splitlines()[-1:] or ["?"]}
                continue
            out[kind] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


# -- output -------------------------------------------------------------------------------


def verdict(value: float | None, budget: float) -> str:
    if value is None:
        return "?"
    return "met" if value <= budget else "MISSED"


def summarize(res: dict) -> dict:
    """The numbers the budget speaks of (medians over the repeats)."""
    s: dict = {}
    for size in ("120x40", "80x24"):
        runs = [r for r in res["sessions"] if r["size"] == size and r["mode"] == "direct"]
        if runs:
            s[f"cpu_{size}"] = median([r["cpu_percent"] for r in runs])
            s[f"bytes_{size}"] = median([r["bytes_per_s"] for r in runs])
            s[f"rss_end_{size}"] = median([r["rss_mb_end"] for r in runs])
    tm = [r for r in res["sessions"] if r["mode"] == "tmux"]
    if tm:
        s["tmux_bytes_120x40"] = median([r["bytes_per_s"] for r in tm if r["size"] == "120x40"])
        s["tmux_cpu_120x40"] = median([r["cpu_percent"] for r in tm if r["size"] == "120x40"])
        s["tmux_server_cpu_120x40"] = median(
            [r.get("tmux_server_cpu_percent") for r in tm if r["size"] == "120x40"]
        )
    starts = [r["first_frame_s"] for r in res.get("starts", [])]
    s["first_frame_s"] = median(starts)
    if res.get("snapshot"):
        s["snapshot_s"] = res["snapshot"]["snapshot_s"]
    mem = res.get("memory", {})
    if "app" in mem and "rss_mb" in mem["app"]:
        s["rss_mb"] = mem["app"]["rss_mb"]
    return s


def print_report(res: dict) -> None:
    m = res["machine"]
    print(
        f"machine: {m['nproc']} CPUs ({m['cpu'] or '?'}), Python {m['python']}, "
        f"textual {m['textual']}, load at start {m['loadavg_start'][0]:.2f}"
    )
    print(f"app: {' '.join(res['argv'])}")
    print()
    print(
        f"{'size':>8} {'mode':>7} {'CPU %':>7} {'B/s':>9} {'B/s p50':>9} {'B/s max':>9} "
        f"{'RSS MB':>7} {'1st frame':>9}  stopped"
    )
    for r in res["sessions"]:
        ff = r.get("first_frame_s")
        print(
            f"{r['size']:>8} {r['mode']:>7} {r['cpu_percent']:7.2f} {r['bytes_per_s']:9.0f} "
            f"{r['bytes_per_s_p50']:9.0f} {r['bytes_per_s_max']:9.0f} {r['rss_mb_end']:7.1f} "
            f"{'-' if ff is None else f'{ff:.2f}s':>9}  {r['stopped_by']} ({r['exit_code']})"
            + (f"  tmux server {r['tmux_server_cpu_percent']:.2f}%" if r["mode"] == "tmux" else "")
        )
        print(
            f"{'':>17} ms of CPU a second by thread (wake-ups a second): "
            + ", ".join(
                f"{t['thread']} {t['ms_per_s']:.2f} ({t['wakes_per_s']:.0f} wakes)"
                for t in r["thread_ms_per_s"]
            )
        )
    if res.get("starts"):
        print(
            "\nstart to first frame (120x40): "
            + ", ".join(f"{r['first_frame_s']:.2f}s" for r in res["starts"] if r["first_frame_s"])
        )
    if res.get("snapshot"):
        sn = res["snapshot"]
        print(
            "snapshot --json: "
            + ", ".join(f"{t:.3f}s" for t in sn["snapshot_all_s"])
            + f" (output ok: {sn['snapshot_ok']})"
        )
    for kind, mem in res.get("memory", {}).items():
        if "error" in mem:
            print(f"memory {kind}: error {mem['error']}")
            continue
        extra = (
            f", app running {mem['rss_mb_app_running']:.1f} MB"
            if "rss_mb_app_running" in mem
            else ""
        )
        print(
            f"memory {kind}: imports {mem['rss_mb_imports']:.1f} MB, after "
            f"{mem['simulated_seconds']} s of history ({mem['epochs']} epochs, "
            f"{mem['log_lines']} log lines, {mem['gpus']} GPUs) {mem['rss_mb_history']:.1f} MB"
            f"{extra}; {mem['refresh_ms_mean']:.2f} ms per refresh"
        )
    for r in res["sessions"]:
        if "panes" in r:
            panes = ", ".join(f"{k} {v:.0f}" for k, v in r["panes"].items())
            print(f"\nbytes/s by pane at {r['size']} ({r['mode']}): {panes}")
    prof = res.get("profile", {}).get("counts")
    if prof:
        wall = prof["wall_s"] or 1.0
        frames = ", ".join(f"{k} {v / wall:.2f}/s" for k, v in prof["frames"].items())
        print(f"\nprofile ({wall:.0f} s, files in {res['profile_dir']}): screen updates {frames}")
        for what in ("refresh", "layout", "render"):
            top = ", ".join(f"{k} {v / wall:.2f}" for k, v in list(prof[what].items())[:8])
            print(f"  {what}() per second: {top}")
    s = res["summary"]
    hist = res.get("memory", {}).get("app", {}).get("simulated_seconds", 3600)
    print("\nbudget:")
    lines = [
        ("CPU at 120x40", s.get("cpu_120x40"), BUDGET["cpu_120x40"], "%"),
        ("CPU at 80x24", s.get("cpu_80x24"), BUDGET["cpu_80x24"], "%"),
        ("bytes at 120x40", s.get("bytes_120x40"), BUDGET["bytes_120x40"], " B/s"),
        ("start to first frame", s.get("first_frame_s"), BUDGET["first_frame_s"], " s"),
        ("snapshot --json", s.get("snapshot_s"), BUDGET["snapshot_s"], " s"),
        (f"RSS after {hist} s of history", s.get("rss_mb"), BUDGET["rss_mb"], " MB"),
    ]
    for name, value, budget, unit in lines:
        shown = "-" if value is None else f"{value:.2f}{unit}"
        print(f"  {name:<30} {shown:>12}  budget <= {budget:g}{unit}  {verdict(value, budget)}")


# -- the matrix: direct and through tmux, over sizes, chart view, GPUs, log rates -----------


def run_matrix(args, base: Path) -> list[dict]:
    """Each configuration (log rate x size x chart view x GPUs), each app (`--app`, then each
    `--against`, their order alternating from one configuration to the next so the machine's
    drift falls on both), direct and through tmux: one session each, `--repeat` times."""
    apps = [args.app, *args.against]
    rates = [float(r) for r in args.log_rates.split(",") if r]
    sizes = [parse_size(x) for x in args.sizes.split(",") if x]
    charts = [c == "on" for c in args.charts.split(",") if c]
    gpu_counts = [int(g) for g in args.gpu_counts.split(",") if g]
    out: list[dict] = []
    turn = 0
    for rate in rates:
        root = base / f"runs-{rate:g}"
        root.mkdir()
        shutil.copytree(FIXTURE_RUN, root / DONE_RUN)
        replayer = start_replayer(root / LIVE_RUN, args.prefill_epochs, args.epochs, rate)
        try:
            time.sleep(1.0)
            for _ in range(max(args.repeat, 1)):
                for cols, rows in sizes:
                    for chart in charts:
                        for gpus in gpu_counts:
                            order = apps if turn % 2 == 0 else apps[::-1]
                            turn += 1
                            for app in order:
                                for tmux in (False, True):
                                    a = argparse.Namespace(**vars(args))
                                    a.app, a.gpus, a.chart = app, gpus, chart
                                    r = session(a, root, base, cols, rows, tmux=tmux)
                                    r["log_lines_per_s"] = rate
                                    out.append(r)
                                    log(
                                        f"{cols}x{rows} chart {'on' if chart else 'off'} "
                                        f"{gpus} GPUs {rate:g} lines/s {r['mode']:>6} "
                                        f"{app}: {r['bytes_per_s']:.0f} B/s, "
                                        f"{r['cpu_percent_exact']:.2f}% CPU"
                                    )
        finally:
            stop_replayer(replayer)
    return out


def print_matrix(sessions: list[dict]) -> None:
    """One row per configuration and app: median bytes/s direct and through tmux, CPU."""
    groups: dict[tuple, dict[str, list[dict]]] = {}
    for r in sessions:
        key = (r["log_lines_per_s"], r["size"], r["chart"], r["gpus"], r["app"])
        groups.setdefault(key, {}).setdefault(r["mode"], []).append(r)
    print(
        f"{'lines/s':>7} {'size':>7} {'chart':>5} {'GPUs':>4} {'direct B/s':>11} "
        f"{'tmux B/s':>9} {'CPU %':>6}  app (windows)"
    )
    for (rate, size, chart, gpus, app), modes in groups.items():
        direct, tm = modes.get("direct", []), modes.get("tmux", [])

        def med(rs: list[dict], k: str) -> str:
            v = median([x[k] for x in rs])
            return "-" if v is None else (f"{v:.0f}" if k == "bytes_per_s" else f"{v:.2f}")

        each = ", ".join(f"{x['bytes_per_s']:.0f}" for x in direct)
        each_t = ", ".join(f"{x['bytes_per_s']:.0f}" for x in tm)
        print(
            f"{rate:>7g} {size:>7} {'on' if chart else 'off':>5} {gpus:>4} "
            f"{med(direct, 'bytes_per_s'):>11} {med(tm, 'bytes_per_s'):>9} "
            f"{med(direct + tm, 'cpu_percent_exact'):>6}  {app} ({each} | {each_t})"
        )


def parse_size(text: str) -> tuple[int, int]:
    cols, rows = text.lower().split("x")
    return int(cols), int(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="measured window per size (60)")
    p.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring (10)")
    p.add_argument(
        "--sizes", default=None, help="terminal sizes (120x40,80x24; --matrix: 80x24,120x40,200x60)"
    )
    p.add_argument("--repeat", type=int, default=1, help="sessions per size (medians reported)")
    p.add_argument("--start-samples", type=int, default=5, help="short starts to time (5)")
    p.add_argument("--gpus", type=int, default=8, help="simulated GPUs (8)")
    p.add_argument("--app", type=Path, default=DEFAULT_APP, help="the rgpu-tui console script")
    p.add_argument(
        "--no-price",
        dest="price",
        action="store_false",
        help=f"no --price-per-hour (default: {PRICE}, the cost strip shows money)",
    )
    p.add_argument("--theme", default=None, help="pass --theme to the app (e.g. ansi-dark)")
    p.add_argument("--colorterm", default=None, help="set COLORTERM (e.g. truecolor)")
    p.add_argument("--prefill-epochs", type=int, default=200, help="history of the live run")
    p.add_argument("--epochs", type=int, default=1000, help="total epochs of the live run (1000)")
    p.add_argument("--tmux", action="store_true", help="also measure through a private tmux")
    p.add_argument("--chart", action="store_true", help="open the chart view (v) first")
    p.add_argument(
        "--matrix",
        action="store_true",
        help="direct and through tmux for each of --log-rates x --sizes x --charts x "
        "--gpu-counts (sizes default 80x24,120x40,200x60), and each --against app",
    )
    p.add_argument("--log-rates", default="10,1", help="--matrix: log lines a second (10,1)")
    p.add_argument("--charts", default="off,on", help="--matrix: the chart view (off,on)")
    p.add_argument("--gpu-counts", default="8,1", help="--matrix: simulated GPUs (8,1)")
    p.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        metavar="APP",
        help="--matrix: another rgpu-tui console script (e.g. a worktree of main), interleaved",
    )
    p.add_argument("--rows-report", action="store_true", help="bytes per screen row")
    p.add_argument("--save-stream", default=None, metavar="DIR", help="keep the measured bytes")
    p.add_argument("--no-memory", dest="memory", action="store_false")
    p.add_argument("--no-snapshot", dest="snapshot", action="store_false")
    p.add_argument("--mem-seconds", type=int, default=3600, help="simulated history (3600)")
    p.add_argument("--json", action="store_true", help="print JSON only")
    p.add_argument(
        "--profile",
        default=None,
        metavar="DIR",
        help="also one instrumented session at the first size: cProfile + repaint counters",
    )
    p.add_argument("--memory-child", choices=("collector", "app"), help=argparse.SUPPRESS)
    p.add_argument("--profile-child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--layout-child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--mem-dir", default=None, help=argparse.SUPPRESS)
    argv = list(sys.argv[1:] if argv is None else argv)
    app_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, app_args = argv[:cut], argv[cut + 1 :]
    args = p.parse_args(argv)

    if args.profile_child:
        return profile_child(args.profile_child, app_args)
    if args.memory_child:
        print(
            json.dumps(
                memory_child(
                    args.memory_child, args.mem_dir, args.mem_seconds, args.gpus, args.price
                )
            )
        )
        return 0
    if args.layout_child:
        cols, rows = parse_size(args.layout_child)
        print(json.dumps(layout_child(args.mem_dir, cols, rows, args.gpus, args.price)))
        return 0
    if not args.app.exists():
        sys.exit(f"{args.app} not found: pip install -e . in the venv first")
    if args.tmux and shutil.which("tmux") is None:
        sys.exit("--tmux: tmux not found")

    if args.matrix:
        args.sizes = args.sizes or "80x24,120x40,200x60"
        base = Path(tempfile.mkdtemp(prefix="rgpu-bench-app-"))
        try:
            sessions = run_matrix(args, base)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        if args.json:
            print(json.dumps({"machine": machine(), "sessions": sessions}, indent=2))
        else:
            print_matrix(sessions)
        return 0
    sizes = [parse_size(s) for s in (args.sizes or "120x40,80x24").split(",") if s]
    res: dict = {"machine": machine(), "sessions": [], "starts": [], "layouts": {}}
    base = Path(tempfile.mkdtemp(prefix="rgpu-bench-app-"))
    replayer = None
    try:
        root = make_root(base)
        res["argv"] = app_argv(args, root)
        replayer = start_replayer(root / LIVE_RUN, args.prefill_epochs, epochs=args.epochs)
        time.sleep(1.0)
        if args.snapshot:
            log("snapshot --json x5 ...")
            res["snapshot"] = time_snapshot(args, root, base)
        for i in range(args.start_samples):
            log(f"start {i + 1}/{args.start_samples} ...")
            res["starts"].append(start_sample(args, root, base))
        for _ in range(max(args.repeat, 0)):
            for cols, rows in sizes:
                log(f"{cols}x{rows}: {args.warmup:g} s warm-up + {args.seconds:g} s ...")
                res["sessions"].append(session(args, root, base, cols, rows))
                log(
                    f"  {res['sessions'][-1]['cpu_percent']:.2f}% CPU, "
                    f"{res['sessions'][-1]['bytes_per_s']:.0f} B/s"
                )
            if args.tmux:
                cols, rows = sizes[0]
                log(f"tmux {cols}x{rows}: {args.warmup:g} s warm-up + {args.seconds:g} s ...")
                res["sessions"].append(session(args, root, base, cols, rows, tmux=True))
                log(
                    f"  {res['sessions'][-1]['cpu_percent']:.2f}% CPU, "
                    f"{res['sessions'][-1]['bytes_per_s']:.0f} B/s"
                )
        if args.profile:
            cols, rows = sizes[0]
            log(f"profile {cols}x{rows}: {args.warmup:g} + {args.seconds:g} s ...")
            res["profile"] = profile_session(args, root, base, cols, rows, args.profile)
            res["profile_dir"] = args.profile
        if args.rows_report:
            for cols, rows in sizes:
                argv2 = [sys.executable, __file__, "--layout-child", f"{cols}x{rows}"]
                argv2 += ["--mem-dir", str(root), "--gpus", str(args.gpus)]
                if not args.price:
                    argv2.append("--no-price")
                out = subprocess.run(argv2, capture_output=True, text=True, env=app_env(base, None))
                if out.returncode == 0:
                    layout = json.loads(out.stdout.strip().splitlines()[-1])
                    res["layouts"][f"{cols}x{rows}"] = layout
                    for r in res["sessions"]:
                        if r["size"] == f"{cols}x{rows}" and "rows" in r:
                            r["panes"] = panes_report(r["rows"], layout)
    finally:
        if replayer is not None:
            stop_replayer(replayer)
        shutil.rmtree(base, ignore_errors=True)
    if args.memory:
        log(f"memory: {args.mem_seconds} simulated seconds, collector and app ...")
        res["memory"] = run_memory(args, args.mem_seconds)
    res["summary"] = summarize(res)
    res["budget"] = BUDGET
    res["met"] = {k: verdict(s, BUDGET[k]) for k, s in res["summary"].items() if k in BUDGET}
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print_report(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
