"""The Snapshot: one immutable picture of what the screen shows.

Built by `watch.RunsWatcher`, rendered by the app, printed by
`rgpu-tui snapshot` (as JSON through core.model.snapshot_json, or as text through
core.render.snapshot_text). Scripts, tests and the screen read the same object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA_VERSION = 1
SERIES_LEN = 120


@dataclass(frozen=True)
class PushTarget:
    repo: str  # settings.hub_repo, stripped ("" when unset)
    # the checkpoint's path in the repo; for the artifacts, their folder ("." at the top):
    # what the push records as `path`. None when hub_path gives no usable path.
    path: str | None
    folder: str  # the folder the checkpoint and the artifacts go in ("" at the top)
    repo_problem: str | None = None  # no repo set, or not ORG/NAME
    path_problem: str | None = None  # hub_path gives no path inside the repo

    @property
    def problem(self) -> str | None:
        return self.repo_problem or self.path_problem


@dataclass(frozen=True)
class Checkpoint:
    name: str  # "best.pt", "last.pt", "epoch_7.pt", any other *.pt in weights/
    path: str
    exists: bool  # it can be stat'ed (a dangling symlink cannot)
    size: int | None
    epoch: int | None
    metric_name: str | None  # "mAP50-95"
    metric: float | None
    problem: str | None  # why it cannot be pushed: outside the run, not a regular file
    target: PushTarget  # where a push puts it, or why it cannot
    # a complete torch checkpoint (core.run.torch_checkpoint)? None: not checked (yet)
    valid: bool | None = None
    invalid: str | None = None  # why not: "last.pt is empty (0 bytes): torn, ..."


@dataclass(frozen=True)
class Attempt:
    """One process's part of a run: the launch, then each resume (core.records.attempts)."""

    started_at: float | None  # None: only its epoch times are known
    ended_at: float | None  # None while it runs, or when its end is not known
    epochs: int | None  # the epochs it trained (its rows in metrics.jsonl)
    ended: bool
    seconds: float | None  # its time: ended_at (or now) - started_at, else its epoch times
    known_by: str  # how: "launch record, exit record", "status.json", "metrics.jsonl epoch times"


@dataclass(frozen=True)
class RunInfo:
    """One run, as the runs list and the run header show it. What is not known is None:
    a run nothing could be read of, or a launch without its status.json yet, gives only
    what it has."""

    run_dir: str
    name: str
    state: str  # running, completed, failed, dead, stalled, unknown
    status_state: str | None = None  # what status.json itself says
    pid: int | None = None
    pid_alive: bool | None = None
    current_epoch: int | None = None
    completed_epochs: int | None = None  # epochs done (status.json, or the metrics history)
    total_epochs: int | None = None
    progress: float | None = None
    eta_seconds: float | None = None  # None while overdue: never 0 while it runs
    elapsed_seconds: float | None = None
    mean_epoch_seconds: float | None = None
    best_metric: float | None = None
    best_metric_name: str | None = None
    best_epoch: int | None = None
    updated_at: str | None = None
    error: str | None = None  # failed: "Type: message"; dead: why
    model: str | None = None
    task: str | None = None  # status.json's task: "detect", "segment", ...
    problem: str | None = None  # e.g. "status.json unreadable: permission denied"
    activity: float = 0.0  # newest mtime of its files (sort key)
    gpu_indices: tuple[int, ...] = ()  # the GPUs its processes use now, sorted (set by Collector)
    # status.json's started_at and updated_at as epoch seconds (range-checked; the JSON
    # output keeps updated_at as the text status.json gives)
    started_at: float | None = None
    updated: float | None = None
    # the run's attempts, oldest first (a launch, then each resume); elapsed_seconds is the
    # sum of their seconds, the current attempt's included
    attempts: tuple[Attempt, ...] = ()
    # running, and its epochs take longer than their mean said: how much longer (ETA unknown)
    eta_overdue_seconds: float | None = None


@dataclass(frozen=True)
class MetricColumn:
    name: str
    last: float | None
    min: float | None
    max: float | None
    best: float | None
    best_epoch: int | None
    values: tuple[float | None, ...]  # the newest <= SERIES_LEN values
    last_epoch: int | None = None  # the epochs of last, min and max
    min_epoch: int | None = None
    max_epoch: int | None = None


@dataclass(frozen=True)
class MetricsView:
    source: str | None  # "metrics.jsonl", "results.csv" or None
    columns: tuple[str, ...]
    last: dict = field(default_factory=dict)  # the newest row
    series: tuple[MetricColumn, ...] = ()
    rows: int = 0
    malformed_lines: int = 0
    problem: str | None = None
    non_finite_values: int = 0  # NaN / Infinity / too-large values skipped by the stats

    def column(self, name: str) -> MetricColumn | None:
        for col in self.series:
            if col.name == name:
                return col
        return None


@dataclass(frozen=True)
class LogView:
    path: str
    lines: tuple[str, ...]
    problem: str | None = None


@dataclass(frozen=True)
class PushInfo:
    """The selected run's pushes to the Hub, from <run>/.rgpu/pushes.jsonl."""

    last_ok_file: str | None = None  # the newest successful push
    last_ok_epoch: int | None = None
    last_ok_at: float | None = None
    last_ok_url: str | None = None
    last_outcome: str | None = None  # the newest attempt: "ok", "skipped", "error"
    last_error: str | None = None
    best_changed: bool | None = None  # best.pt on disk differs from the last pushed best.pt
    attempts: int = 0


@dataclass(frozen=True)
class SelectedRun:
    run_dir: str
    metrics: MetricsView
    log: LogView
    pushes: PushInfo | None = None
    checkpoints: tuple[Checkpoint, ...] = ()  # weights/*.pt, ordered (core.run.checkpoints)
    checkpoints_not_listed: int = 0  # beyond checkpoints.MAX_LISTED
    push_default: str = "best.pt"  # what `p` pushes: best.pt, else last.pt
    artifacts_target: PushTarget | None = None  # where pushing the small artifacts goes

    def checkpoint(self, name: str) -> Checkpoint | None:
        for c in self.checkpoints:
            if c.name == name:
                return c
        return None


@dataclass(frozen=True)
class GpuProcess:
    pid: int  # as NVML gives it (a host pid inside a container)
    name: str | None  # None: psutil cannot see it ("unknown process")
    used_mib: float | None
    run_dir: str | None  # the run it belongs to (its pid, a descendant, another rank of its job)
    kind: str  # "run", "process" (ours, no run), "other-user", "unknown", "host" (host pid, no run)
    host_pid: bool = False  # `pid` is a host pid: no process here has it
    local_pid: int | None = None  # this process's pid here, when known
    local_candidates: tuple[int, ...] = ()  # host pid not paired: run processes here on this GPU


@dataclass(frozen=True)
class MigInstance:
    """One MIG device of a MIG-enabled GPU. NVML gives no utilisation for MIG devices."""

    mig_index: int
    name: str | None = None
    uuid: str | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    util_percent: float | None = None


@dataclass(frozen=True)
class GpuDevice:
    """One GPU. Every measurement is None when the board or driver does not report it."""

    index: int
    name: str | None
    uuid: str | None
    state: str  # "ok" or "lost"
    util_percent: float | None = None
    mem_util_percent: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    fan_percent: float | None = None
    pstate: str | None = None  # "P0".."P15"
    mig_mode: str | None = None  # "enabled", "disabled"
    flags: tuple[str, ...] = ()  # "idle", "straggler", "starved", "lost"
    processes: tuple[GpuProcess, ...] = ()
    util_history: tuple[float | None, ...] = ()  # oldest first, one sample a refresh
    mem_history: tuple[float | None, ...] = ()  # memory used, MiB
    minor: int | None = None  # the N of /dev/nvidiaN
    runs: tuple[str, ...] = ()  # run_dir of every run with a process on it, sorted
    mig_instances: tuple[MigInstance, ...] = ()  # MIG mode on: its MIG devices
    # health (core.machine.gpu_health): what explains a slow epoch; None is N/A, never 0
    clock_events: tuple[str, ...] | None = None  # active clock-event (throttle) reasons
    mem_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    pcie_tx_kbs: float | None = None  # PCIe throughput, KB/s (NVML's unit)
    pcie_rx_kbs: float | None = None
    ecc_corrected: int | None = None  # volatile: since the driver loaded
    ecc_uncorrected: int | None = None
    retired_pages: int | None = None  # both causes
    remapped_rows: int | None = None  # corrected + uncorrected
    remap_pending: bool | None = None  # a row remap (or page retirement) waits for a reset
    xid_count: int | None = None  # XID errors seen since the monitor started (NVML events)
    xid_last: int | None = None  # the last XID number seen


@dataclass(frozen=True)
class GpuView:
    available: bool
    reason: str | None  # why not available, in one sentence
    source: str  # "nvml", "fake" (simulated) or "replay" (a recording, --gpu-replay)
    driver_version: str | None = None
    devices: tuple[GpuDevice, ...] = ()
    idle: bool = False  # every GPU under 5% and no running run
    # how long the machine has been idle, by the one idle clock (core.picture.idle, set by the
    # Collector); None when busy or after a single look
    idle_seconds: float | None = None
    warnings: tuple[str, ...] = ()  # straggler / starved sentences
    # "local": NVML's pids are this machine's; "host": NVML gives host pids (a container);
    # None: not known yet (inside a pid namespace, no GPU process seen)
    pid_namespace: str | None = None

    @property
    def simulated(self) -> bool:
        """Simulated GPUs (--fake-gpus): their numbers are invented; every place that
        shows them says so."""
        return self.source == "fake"


@dataclass(frozen=True)
class SetupProcess:
    """A training that has not written its status.json yet (core.machine.setup_procs): the
    machine is busy while it lives ("setting up")."""

    pid: int
    command: str  # its command line, printable and cut
    started_at: float | None  # epoch seconds
    why: str  # "libreyolo training", "libreyolo DDP coordinator", "holds /dev/nvidia-uvm"


@dataclass(frozen=True)
class DiskInfo:
    path: str
    total_bytes: int
    used_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class SystemView:
    cpu_percent: float | None
    cpu_max_percent: float | None  # the busiest core
    load_avg: tuple[float, float, float] | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    swap_used_bytes: int | None
    swap_total_bytes: int | None
    disk: DiskInfo | None
    largest_checkpoint_bytes: int | None = None
    disk_full_in_hours: float | None = None  # projected from how fast the root grows
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CostView:
    """Money, from the settings and the clock. Unknown inputs give None, never a guess."""

    configured: bool  # a price per hour is set
    price_per_hour: float | None = None
    billing_started_at: float | None = None  # epoch seconds
    billing_started_source: str | None = None  # "settings", "container start", "boot time"
    billed_hours: float | None = None
    spent: float | None = None
    run_spent: float | None = None  # the selected run: elapsed x rate
    per_epoch: float | None = None
    to_finish: float | None = None
    projected_total: float | None = None
    stopped_per_hour: float | None = None
    break_even_hours: float | None = None
    stop_saving_percent: float | None = None
    idle_seconds: float | None = None  # idle time seen since billing started (while watched)
    idle_spent: float | None = None
    idle_now_seconds: float | None = None  # the current idle stretch, None when busy
    idle_now_spent: float | None = None  # what the current idle stretch has cost
    idle_minutes: float = 10.0  # banner threshold
    idle_alert: bool = False  # the current stretch has lasted idle_minutes: the banner is up
    disk_gb: float | None = None  # the allocated disk the stopped rate is for
    balance_left: float | None = None
    balance_runs_out_at: float | None = None  # epoch seconds
    warnings: tuple[str, ...] = ()
    # where the price came from: "price_command (vastai)", or where the typed one was set
    # ("RGPU_PRICE_PER_HOUR", "--price-per-hour", "<config file> line 3")
    price_source: str | None = None
    price_read_at: float | None = None  # when price_command gave it (epoch s); None if typed
    price_age_seconds: float | None = None
    price_problem: str | None = None  # price_command's last try failed: why, what is shown


@dataclass(frozen=True)
class AutostopPlan:
    """What the root's `rgpu-tui watch` plans for autostop (core.away.autostop writes it; a
    refresh reads it): its phase (counting, held, checking, pushing, running, ran, failed,
    held_by_app), its one-line message and, while counting, when the command runs."""

    phase: str
    message: str
    fires_at: float | None = None


@dataclass(frozen=True)
class Snapshot:
    generated_at: float
    root: str
    root_exists: bool
    runs: tuple[RunInfo, ...]
    selected: SelectedRun | None
    problem: str | None = None
    gpus: GpuView | None = None
    system: SystemView | None = None
    cost: CostView | None = None
    schema_version: int = SCHEMA_VERSION
    deep_dirs_skipped: int = 0  # directories below discovery.MAX_DEPTH, not searched
    autostop: AutostopPlan | None = None  # None: no live watcher plans autostop here
    # the runs the chart view asked for (core.picture.charts.ChartRequest); () when none
    charts: tuple[RunChart, ...] = ()
    # trainings setting up before their status.json (core.machine.setup_procs): busy
    setup: tuple[SetupProcess, ...] = ()

    def run(self, run_dir: str | None) -> RunInfo | None:
        for r in self.runs:
            if r.run_dir == run_dir:
                return r
        return None

    @property
    def selected_run(self) -> RunInfo | None:
        return self.run(self.selected.run_dir) if self.selected else None

    def chart(self, run_dir: str | None) -> RunChart | None:
        for c in self.charts:
            if c.run_dir == run_dir:
                return c
        return None


@dataclass(frozen=True)
class ChartSeries:
    """One metric of a run, honest (core.run.series): one value per RunChart.epochs, None
    where the run gave no usable value (a -1 placeholder, null, NaN, an epoch that did
    not validate)."""

    name: str
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class RunChart:
    """What the chart view and `rgpu-tui chart` draw of one run (core.picture.charts): its
    epochs (after a resume a repeated epoch keeps its last row; more than
    core.run.series.MAX_POINTS rows keep one in `stride`, and the last), the requested
    metrics, and the marks: resume points, diverged epochs, saved epoch_N.pt, the best
    epoch and whether its best.pt is on the Hub by the push records."""

    run_dir: str
    epochs: tuple[int, ...] = ()
    # training seconds spent up to each epoch, every attempt (the rows' `time`); () when
    # no row gives a time
    spent_seconds: tuple[float, ...] = ()
    series: tuple[ChartSeries, ...] = ()
    columns: tuple[str, ...] = ()  # every numeric column of the run (the picker lists them)
    resumes: tuple[int, ...] = ()  # the first epoch of each attempt after the first
    diverged: tuple[int, ...] = ()  # epochs whose loss was null or not finite
    saved: tuple[int, ...] = ()  # epochs with a weights/epoch_N.pt
    best_epoch: int | None = None
    best_metric: float | None = None
    best_metric_name: str | None = None
    # best.pt on the Hub: True pushed and unchanged since, False not pushed or changed
    # since, None no best.pt
    best_pushed: bool | None = None
    family: str | None = None  # status.json's model_family: the default panels
    rows: int = 0  # epochs kept before one in `stride` was taken
    stride: int = 1
    time_total: float | None = None  # seconds, every row's `time`, every attempt
    config: tuple[tuple[str, str], ...] = ()  # train_config.yaml, flattened, as text
    config_problem: str | None = None
    problem: str | None = None  # why there is nothing to draw

    def metric(self, name: str) -> ChartSeries | None:
        for s in self.series:
            if s.name == name:
                return s
        return None
