"""Which run each GPU process works for: pid trees, ranks of one job, and containers.

A GPU process belongs to a run (one whose status.json says running, or stalled) when it is

- the run's status.json pid (rank 0 writes its own pid) or a descendant of it;
- another rank of the same job: when the run pid's parent is libreyolo's DDP coordinator
  (``python .../libreyolo/training/_ddp_coordinator.py JOB_DIR``, which mp.spawn()s the
  ranks) or a torchrun agent (``torchrun``, ``python -m torch.distributed.run`` or
  ``.launch``), every descendant of that parent is the run's; the process that started the
  coordinator (libreyolo's ``train`` process, which may hold a CUDA context) is too;
- when the run pid is a multiprocessing "spawn" child (``... spawn_main(...)
  --multiprocessing-fork``; libreyolo's fallback without the coordinator, or a user's own
  mp.spawn), its parent and that parent's other spawn children (and their descendants).

Nothing else is taken from a parent: a shell or init that started the run starts other
things too, and those are no run's. A parent of another user never counts.

Inside a container NVML gives host pids, which do not exist here (NVML has no pid
namespaces). Outside the host's pid namespace (no kthreadd at pid 2) a pid NVML gives is a
host pid when no process here has it, or (where this machine has /dev/nvidiactl) when the
process here that has it holds no /dev/nvidia* open (the same number, another process).
For a GPU with host pids, the run processes here that hold that GPU's /dev/nvidiaN open
(N: its minor number) tell which run uses it: when the node is held by one run's
processes only, the host pids are that run's (at most as many as the run's holders, which
are counted without their children, as a DataLoader worker inherits its rank's
descriptors); with one host pid and one holder they are paired, so the process shows its
name and memory. CUDA may open the node of every GPU it can see, so two runs that can both
see a GPU cannot be told apart there: such a GPU is no run's.

The /proc reads behind this are made only when some GPU has host pids, at most every
CONTAINER_RESCAN_S seconds, and only for the runs' processes: their descendants (from
/proc/PID/task/*/children, or one pass over /proc/*/stat where the kernel lacks those
files) and their fd tables; what a process holds is kept per (pid, start time).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import psutil

from ..model.snapshot import GpuDevice, GpuProcess, RunInfo

MAPPED_STATES = ("running", "stalled")  # runs whose pid still owns GPU processes
CONTAINER_RESCAN_S = 5.0  # the run processes' device nodes are looked at this often
FD_KEEP_S = 60.0  # a process seen holding a GPU node is looked at again after this
MAX_CACHE = 4096  # cached cmdlines / descriptor sets before the caches are emptied
COORDINATOR_PATH = "libreyolo/training/_ddp_coordinator.py"
COORDINATOR_MODULE = "libreyolo.training._ddp_coordinator"
TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")


@dataclass(frozen=True)
class DeviceReading:
    """One GPU from a source: the board (no processes yet) and NVML's (pid, MiB) list."""

    device: GpuDevice
    processes: tuple[tuple[int, float | None], ...] = ()


# -- recognising the processes of a job -------------------------------------------


def _python_args(cmdline: tuple[str, ...]) -> tuple[str, ...]:
    """The interpreter's arguments after its options (-u, -X opt, -W x, -O ...)."""
    args = list(cmdline[1:8])
    while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
        flag = args.pop(0)
        if flag in ("-X", "-W") and args:
            args.pop(0)
    return tuple(args)


def is_coordinator(cmdline: Iterable[str]) -> bool:
    """libreyolo's private DDP coordinator: `python [opts] .../_ddp_coordinator.py JOB`."""
    cmd = tuple(cmdline)
    args = _python_args(cmd)
    if len(args) >= 2 and args[0] == "-m" and args[1] == COORDINATOR_MODULE:
        return True
    return bool(args) and args[0].replace("\\", "/").endswith("/" + COORDINATOR_PATH)


def is_torchrun(cmdline: Iterable[str]) -> bool:
    """A torchrun agent: `torchrun ...`, `python .../bin/torchrun ...`, `python -m
    torch.distributed.run ...` (or the older torch.distributed.launch)."""
    cmd = tuple(cmdline)
    if not cmd:
        return False
    if os.path.basename(cmd[0]) == "torchrun":
        return True
    args = _python_args(cmd)
    if args and os.path.basename(args[0]) == "torchrun":
        return True
    return len(args) >= 2 and args[0] == "-m" and args[1] in TORCHRUN_MODULES


def is_mp_spawn_child(cmdline: Iterable[str]) -> bool:
    """A process started by multiprocessing's "spawn" method (torch.multiprocessing.spawn)."""
    cmd = tuple(cmdline)
    return "--multiprocessing-fork" in cmd and any("spawn_main" in a for a in cmd)


def in_initial_pid_namespace(proc_root: str = "/proc") -> bool:
    """True on the host's pid namespace: pid 2 is the kernel's kthreadd (parent 0).

    In a container's pid namespace pid 2 is one of its own processes, or nothing."""
    try:
        with open(os.path.join(proc_root, "2", "stat"), "rb") as f:
            stat = f.read(4096).decode("ascii", "replace")
    except OSError:
        return False
    head, _, rest = stat.rpartition(")")
    fields = rest.split()
    return head.endswith("(kthreadd") and len(fields) > 1 and fields[1] == "0"


def nvidia_nodes(pid: int, proc_root: str = "/proc", dev: str = "/dev") -> frozenset[str] | None:
    """The /dev/nvidia* nodes process `pid` holds open ("nvidia0", "nvidiactl", ...), from
    /proc/PID/fd; None when that cannot be read (another user's process, or gone). `dev`:
    the device folder (tests point it at a folder of their own)."""
    prefix = dev.rstrip("/") + "/nvidia"
    try:
        dir_fd = os.open(f"{proc_root}/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    out = set()
    try:
        for name in os.listdir(dir_fd):
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError:
                continue  # closed meanwhile
            if target.startswith(prefix):
                out.add(target[len(prefix) - len("nvidia") :])
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    return frozenset(out)


def node_minors(nodes: Iterable[str]) -> set[int]:
    """{0, 3} from {"nvidia0", "nvidia3", "nvidiactl", "nvidia-uvm"}."""
    out = set()
    for node in nodes:
        digits = node[len("nvidia") :]
        if digits.isdigit() and digits.isascii():
            out.add(int(digits))
    return out


def _my_username() -> str | None:
    try:
        return psutil.Process(os.getpid()).username()
    except Exception:
        return None


def run_pids(runs: Iterable[RunInfo]) -> dict[int, str]:
    """{pid: run_dir} for the runs whose status.json pid may still own GPU processes."""
    out: dict[int, str] = {}
    for r in runs:
        if r.state in MAPPED_STATES and isinstance(r.pid, int) and r.pid > 0:
            out.setdefault(r.pid, r.run_dir)
    return out


@dataclass
class Claims:
    """Which pids a run claims: `roots` with every descendant, `exact` alone, `spawners`
    with their multiprocessing-spawn children (and those children's descendants)."""

    roots: dict[int, str] = field(default_factory=dict)
    exact: dict[int, str] = field(default_factory=dict)
    spawners: dict[int, str] = field(default_factory=dict)

    def key(self) -> tuple:
        return (
            tuple(sorted(self.roots.items())),
            tuple(sorted(self.exact.items())),
            tuple(sorted(self.spawners.items())),
        )


# -- the attributor -------------------------------------------------------------------


class ProcessAttributor:
    """Turns a source's DeviceReadings into GpuDevices whose processes name their runs.

    `initial_pidns` forces the pid namespace question (tests); None asks /proc once."""

    def __init__(
        self,
        *,
        proc_root: str = "/proc",
        initial_pidns: bool | None = None,
        dev_ctl: str = "/dev/nvidiactl",
    ) -> None:
        self.proc_root = proc_root
        self.dev_ctl = dev_ctl
        self._has_ctl: bool | None = None
        self._initial = initial_pidns
        self._user: str | None = None
        self._user_known = False
        self._cmdlines: dict[tuple[int, float], tuple[str, ...]] = {}
        self._nodes: dict[tuple[int, float], tuple[frozenset[str] | None, float]] = {}
        self._holders: tuple[tuple, float, dict] | None = None
        self._namespace: str | None = None
        self.scans = 0  # container rescans made (tests count them)

    # -- public ---------------------------------------------------------------

    def attribute(
        self, now: float, runs: tuple[RunInfo, ...], readings: list[DeviceReading]
    ) -> tuple[list[GpuDevice], str | None]:
        """(devices with processes and runs, pid_namespace)."""
        if self._initial is None:
            self._initial = in_initial_pid_namespace(self.proc_root)
        if self._initial:
            self._namespace = "local"
        if not any(r.processes for r in readings):
            return [r.device for r in readings], self._namespace
        claims = self.claims(runs)
        user = self._username()
        local: dict[int, tuple[str | None, str | None, str, int | None]] = {}
        host: set[int] = set()
        ppids: dict[int, int | None] = {}  # this refresh's /proc/PID/stat reads
        for reading in readings:
            for pid, _used in reading.processes:
                if pid in local or pid in host:
                    continue
                if self._is_host_pid(pid, now):
                    host.add(pid)
                else:
                    local[pid] = self.classify(pid, claims, user, ppids)
        holders = self._holder_map(now, claims) if host else {}
        devices = []
        for reading in readings:
            procs = []
            host_here = [pid for pid, _u in reading.processes if pid in host]
            owner, paired, candidates = self._host_owner(reading.device.minor, holders, host_here)
            for pid, used in reading.processes:
                if pid in host:
                    name, local_pid = (paired[1], paired[0]) if paired else (None, None)
                    procs.append(
                        GpuProcess(
                            pid=pid,
                            name=name,
                            used_mib=used,
                            run_dir=owner,
                            kind="run" if owner else "host",
                            host_pid=True,
                            local_pid=local_pid,
                            local_candidates=() if paired else candidates,
                        )
                    )
                else:
                    name, run_dir, kind, local_pid = local[pid]
                    procs.append(GpuProcess(pid, name, used, run_dir, kind, local_pid=local_pid))
            run_dirs = tuple(sorted({p.run_dir for p in procs if p.run_dir}))
            devices.append(replace(reading.device, processes=tuple(procs), runs=run_dirs))
        if not self._initial:
            self._namespace = "host" if host else "local"
        return devices, self._namespace

    # -- runs and jobs ----------------------------------------------------------

    def claims(self, runs: Iterable[RunInfo]) -> Claims:
        out = Claims()
        pids = run_pids(runs)
        out.roots.update(pids)
        for pid, run_dir in pids.items():
            job = self._job_of(pid)
            if job is None:
                continue
            kind, parent, launcher = job
            if kind == "root":
                out.roots.setdefault(parent, run_dir)
                if launcher is not None:
                    out.exact.setdefault(launcher, run_dir)
            else:
                out.spawners.setdefault(parent, run_dir)
        return out

    def _cmdline(self, proc: psutil.Process) -> tuple[str, ...]:
        try:
            key = (proc.pid, proc.create_time())
        except psutil.Error:
            return ()
        got = self._cmdlines.get(key)
        if got is None:
            try:
                got = tuple(proc.cmdline())
            except psutil.Error:
                return ()
            if len(self._cmdlines) >= MAX_CACHE:
                self._cmdlines.clear()
            self._cmdlines[key] = got
        return got

    def _job_of(self, pid: int) -> tuple[str, int, int | None] | None:
        """("root", coordinator or agent pid, launcher pid or None) or ("spawner", parent
        pid, None) for the run pid `pid`; None when it is a job of its own."""
        try:
            proc = psutil.Process(pid)
            ppid = proc.ppid()
            if ppid <= 1:
                return None
            parent = psutil.Process(ppid)
            if parent.uids().real != proc.uids().real:
                return None
            cmd = self._cmdline(parent)
            if is_coordinator(cmd):
                launcher = parent.ppid()
                if launcher > 1 and psutil.Process(launcher).uids().real == proc.uids().real:
                    return "root", ppid, launcher
                return "root", ppid, None
            if is_torchrun(cmd):
                return "root", ppid, None
            if is_mp_spawn_child(self._cmdline(proc)):
                return "spawner", ppid, None
        except psutil.Error:
            return None
        return None

    def _ppid(self, pid: int, ppids: dict[int, int | None]) -> int | None:
        """The parent of `pid` from /proc/PID/stat (one read, kept for this refresh)."""
        if pid in ppids:
            return ppids[pid]
        ppid = None
        try:
            with open(os.path.join(self.proc_root, str(pid), "stat"), "rb") as f:
                rest = f.read(4096).rpartition(b")")[2].split()
            if len(rest) > 1 and rest[1].isdigit():
                ppid = int(rest[1])
        except OSError:
            pass
        ppids[pid] = ppid
        return ppid

    def _owner(self, pid: int, claims: Claims, ppids: dict[int, int | None]) -> str | None:
        """The run whose claim covers `pid`: the nearest claimed ancestor decides."""
        chain: list[int] = []
        cur: int | None = pid
        while cur is not None and cur > 0 and len(chain) < 1024:
            i = len(chain)
            chain.append(cur)
            run_dir = claims.roots.get(cur)
            if run_dir is not None:
                return run_dir
            if i == 0 and cur in claims.exact:
                return claims.exact[cur]
            run_dir = claims.spawners.get(cur)
            if run_dir is not None:
                if i == 0:
                    return run_dir
                try:
                    if is_mp_spawn_child(self._cmdline(psutil.Process(chain[i - 1]))):
                        return run_dir
                except psutil.Error:
                    pass
            cur = self._ppid(cur, ppids)
        return None

    def classify(
        self,
        pid: int,
        claims: Claims,
        user: str | None,
        ppids: dict[int, int | None] | None = None,
    ) -> tuple[str | None, str | None, str, int | None]:
        """(name, run_dir, kind, local pid) of a GPU process seen here. Never raises."""
        try:
            proc = psutil.Process(pid)
        except (psutil.NoSuchProcess, ValueError):
            return None, None, "unknown", None
        except psutil.AccessDenied:
            return None, None, "other-user", pid
        except Exception:
            return None, None, "unknown", None
        try:
            name = proc.name()
        except psutil.NoSuchProcess:
            return None, None, "unknown", None
        except Exception:
            name = None
        try:
            run_dir = self._owner(pid, claims, {} if ppids is None else ppids)
        except Exception:
            run_dir = None
        if run_dir is not None:
            return name, run_dir, "run", pid
        try:
            owner = proc.username()
        except psutil.NoSuchProcess:
            return name, None, "unknown", None
        except psutil.AccessDenied:
            return name, None, "other-user", pid
        except Exception:
            owner = None
        if user is not None and owner is not None and owner != user:
            return name, None, "other-user", pid
        return name, None, "process", pid

    def _username(self) -> str | None:
        if not self._user_known:
            self._user = _my_username()
            self._user_known = True
        return self._user

    # -- containers --------------------------------------------------------------

    def _nodes_of(self, pid: int, now: float) -> frozenset[str] | None:
        try:
            key = (pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return None
        cached = self._nodes.get(key)
        if cached is not None:
            nodes, at = cached
            keep = FD_KEEP_S if nodes else CONTAINER_RESCAN_S
            if 0 <= now - at < keep:
                return nodes
        nodes = nvidia_nodes(pid, self.proc_root)
        if len(self._nodes) >= MAX_CACHE:
            self._nodes.clear()
        self._nodes[key] = (nodes, now)
        return nodes

    def _is_host_pid(self, pid: int, now: float) -> bool:
        if self._initial:
            return False
        try:
            psutil.Process(pid)
        except psutil.NoSuchProcess:
            return True
        except Exception:
            return False  # it exists (another user's, say): take NVML's word
        if self._has_ctl is None:
            self._has_ctl = os.path.exists(self.dev_ctl)
        if not self._has_ctl:
            return False  # no NVIDIA device here (a replay): nothing to check against
        nodes = self._nodes_of(pid, now)
        return nodes is not None and not nodes  # it holds no GPU node: another process

    def _children_map(self) -> Mapping[int, list[int]] | None:
        """{ppid: [pid, ...]} from one pass over /proc/*/stat (when the kernel has no
        /proc/PID/task/TID/children); None when /proc cannot be listed."""
        try:
            names = os.listdir(self.proc_root)
        except OSError:
            return None
        kids: dict[int, list[int]] = {}
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(os.path.join(self.proc_root, name, "stat"), "rb") as f:
                    stat = f.read(4096)
            except OSError:
                continue
            rest = stat.rpartition(b")")[2].split()
            if len(rest) > 1 and rest[1].isdigit():
                kids.setdefault(int(rest[1]), []).append(int(name))
        return kids

    def _children(self, pid: int, kids: Mapping[int, list[int]] | None) -> list[int]:
        if kids is not None:
            return kids.get(pid, [])
        out: list[int] = []
        task = os.path.join(self.proc_root, str(pid), "task")
        try:
            tids = os.listdir(task)
        except OSError:
            return out
        for tid in tids:
            try:
                with open(os.path.join(task, tid, "children"), "rb") as f:
                    out.extend(int(x) for x in f.read().split())
            except (OSError, ValueError):
                continue
        return out

    def run_processes(self, claims: Claims) -> dict[int, tuple[str, int]]:
        """{pid: (run_dir, parent pid)} of every process here the runs claim."""
        me = os.getpid()
        has_children_files = os.path.exists(
            os.path.join(self.proc_root, str(me), "task", str(me), "children")
        )
        kids = None if has_children_files else self._children_map()
        out: dict[int, tuple[str, int]] = {}

        def walk(start: int, parent: int, run_dir: str) -> None:
            stack = [(start, parent)]
            while stack:
                pid, ppid = stack.pop()
                if pid in out:
                    continue
                out[pid] = (run_dir, ppid)
                stack.extend((c, pid) for c in self._children(pid, kids))

        for pid, run_dir in claims.roots.items():
            walk(pid, -1, run_dir)
        for pid, run_dir in claims.exact.items():
            out.setdefault(pid, (run_dir, -1))
        for pid, run_dir in claims.spawners.items():
            out.setdefault(pid, (run_dir, -1))
            for child in self._children(pid, kids):
                try:
                    spawned = is_mp_spawn_child(self._cmdline(psutil.Process(child)))
                except psutil.Error:
                    spawned = False
                if spawned:
                    walk(child, pid, run_dir)
        return out

    def _holder_map(self, now: float, claims: Claims) -> dict[int, dict[int, tuple[str, int]]]:
        """{minor: {pid: (run_dir, parent pid)}}: the run processes holding /dev/nvidiaN."""
        key = claims.key()
        if self._holders is not None:
            old_key, at, old = self._holders
            if old_key == key and 0 <= now - at < CONTAINER_RESCAN_S:
                return old
        self.scans += 1
        out: dict[int, dict[int, tuple[str, int]]] = {}
        for pid, (run_dir, ppid) in self.run_processes(claims).items():
            nodes = self._nodes_of(pid, now)
            for minor in node_minors(nodes or ()):
                out.setdefault(minor, {})[pid] = (run_dir, ppid)
        self._holders = (key, now, out)
        return out

    def _host_owner(
        self,
        minor: int | None,
        holders: Mapping[int, Mapping[int, tuple[str, int]]],
        host_pids: list[int],
    ) -> tuple[str | None, tuple[int, str | None] | None, tuple[int, ...]]:
        """(run of the host pids on this GPU or None, (local pid, name) when paired,
        the holders here) from the run processes holding /dev/nvidia<minor>."""
        if not host_pids or minor is None:
            return None, None, ()
        held = holders.get(minor) or {}
        tops = sorted(pid for pid, (_run, ppid) in held.items() if ppid not in held)
        run_dirs = {run for run, _ppid in held.values()}
        if len(run_dirs) != 1 or len(host_pids) > len(tops):
            return None, None, tuple(tops)
        (owner,) = run_dirs
        if len(host_pids) == 1 and len(tops) == 1:
            try:
                name = psutil.Process(tops[0]).name()
            except psutil.Error:
                name = None
            return owner, (tops[0], name), ()
        return owner, None, tuple(tops)
