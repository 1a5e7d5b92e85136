"""GPU recordings: --gpu-replay / RGPU_GPU_REPLAY (played by t), the recorder behind
`snapshot --record-gpus` (against the stand-in pynvml, round-tripped), malformed files,
and the GPU source flags (--fake-gpus capped, 0 meaning zero simulated GPUs, one source)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rgpu_tui import cli
from rgpu_tui.core.machine import gpu_replay
from rgpu_tui.core.machine.gpu import GpuMonitor
from rgpu_tui.core.machine.gpu_replay import (
    RecordingError,
    ReplaySource,
    load_recording,
    record_gpus,
)
from rgpu_tui.core.machine.gpu_sim import MAX_FAKE_GPUS
from rgpu_tui.core.machine.nvml_source import NvmlSource

from ..gpu_fakes import MIB, T0, FakeGpu, FakeMig, FakeNvml, dev, gpus, proc

DEVICE = {
    "index": 0,
    "minor": 0,
    "uuid": "GPU-abc",
    "name": "NVIDIA GeForce RTX 4090",
    "util_percent": 97,
    "mem_util_percent": 41,
    "mem_used_mib": 20500,
    "mem_total_mib": 24564,
    "temperature_c": 70,
    "power_w": 380.0,
    "power_limit_w": 450.0,
    "processes": [{"pid": 12345, "used_mib": 20000}],
}


def _write(path: Path, samples: list) -> Path:
    path.write_text("".join((s if isinstance(s, str) else json.dumps(s)) + "\n" for s in samples))
    return path


# -- playing -----------------------------------------------------------------------------


def test_the_issue_example_plays(tmp_path: Path) -> None:
    rec = _write(
        tmp_path / "r.jsonl", [{"t": 0.0, "driver_version": "550.54.15", "devices": [DEVICE]}]
    )
    view = GpuMonitor(replay=load_recording(str(rec))).sample(T0, (), None)
    assert view.available and view.source == "replay" and view.driver_version == "550.54.15"
    d = dev(view, 0)
    assert (d.name, d.uuid, d.minor, d.state) == ("NVIDIA GeForce RTX 4090", "GPU-abc", 0, "ok")
    assert (d.util_percent, d.mem_util_percent, d.mem_used_mib, d.mem_total_mib) == (
        97.0,
        41.0,
        20500.0,
        24564.0,
    )
    assert (d.temperature_c, d.power_w, d.power_limit_w) == (70.0, 380.0, 450.0)
    (p,) = d.processes
    assert (p.pid, p.used_mib) == (12345, 20000.0)


def test_played_by_t_and_the_last_sample_holds(tmp_path: Path) -> None:
    samples = [
        {"t": 2.0, "devices": [{"index": 0, "util_percent": 10}]},
        {"t": 5.0, "devices": [{"index": 0, "util_percent": 50}]},
        {"t": 5.0, "devices": [{"index": 0, "util_percent": 55}]},  # same t: the later one
        {"t": 9.5, "devices": [{"index": 0, "state": "lost", "name": "X"}]},
    ]
    source = ReplaySource(load_recording(str(_write(tmp_path / "r.jsonl", samples))))
    seen = [source.read(T0 + dt)[0].device for dt in (0, 1.9, 2, 4.99, 5, 9.49)]
    assert [d.util_percent for d in seen] == [10.0, 10.0, 10.0, 10.0, 55.0, 55.0]
    for dt in (9.5, 100, 10_000):
        d = source.read(T0 + dt)[0].device
        assert d.state == "lost" and d.name == "X" and d.util_percent is None
    assert source.read(T0 - 50)[0].device.util_percent == 10.0  # the clock went back


def test_missing_fields_read_na(tmp_path: Path) -> None:
    rec = _write(tmp_path / "r.jsonl", [{"t": 0, "devices": [{"index": 3}, {"index": 1}]}])
    view = GpuMonitor(replay=load_recording(str(rec))).sample(T0, (), None)
    assert [d.index for d in view.devices] == [1, 3]
    for d in view.devices:
        assert d.state == "ok" and d.name is None and d.minor is None and d.processes == ()
        assert d.util_percent is None and d.mem_used_mib is None and d.power_w is None
    assert view.driver_version is None and view.idle is False  # nothing measured


@pytest.mark.parametrize(
    "lines, line_no, words",
    [
        (["{not json"], 1, "not JSON"),
        (["[1, 2]"], 1, "must be an object"),
        ([{"devices": []}], 1, "t must be seconds"),
        ([{"t": -1, "devices": []}], 1, "t must be seconds"),
        ([{"t": True, "devices": []}], 1, "t must be seconds"),
        (['{"t": NaN, "devices": []}'], 1, "t must be seconds"),
        ([{"t": 5, "devices": []}, "", {"t": 4, "devices": []}], 3, "goes back in time"),
        ([{"t": 0}], 1, "devices is missing"),
        ([{"t": 0, "devices": {"index": 0}}], 1, "devices must be a list"),
        ([{"t": 0, "devices": [{"name": "x"}]}], 1, "devices[0].index is missing"),
        ([{"t": 0, "devices": [{"index": -1}]}], 1, "index must be a whole number"),
        ([{"t": 0, "devices": [{"index": 0}, {"index": 0}]}], 1, "same index"),
        ([{"t": 0, "devices": [{"index": 0, "util_percent": 150}]}], 1, "from 0 to 100"),
        ([{"t": 0, "devices": [{"index": 0, "util_percent": "97"}]}], 1, "must be a number"),
        ([{"t": 0, "devices": [{"index": 0, "mem_used_mib": -5}]}], 1, "from 0"),
        ([{"t": 0, "devices": [{"index": 0, "state": "dead"}]}], 1, "one of lost, ok"),
        ([{"t": 0, "devices": [{"index": 0, "pstate": "P99"}]}], 1, "pstate must be"),
        ([{"t": 0, "devices": [{"index": 0, "name": 7}]}], 1, "name must be a string"),
        ([{"t": 0, "devices": [{"index": 0, "processes": [{"pid": 0}]}]}], 1, "pid must be"),
        (
            [{"t": 0, "devices": [{"index": 0, "processes": [{"pid": 5, "used_mib": -1}]}]}],
            1,
            "used_mib must be from 0",
        ),
        ([{"t": 0, "devices": [{"index": 0, "mig_instances": [{}]}]}], 1, "mig_index is missing"),
        ([{"t": 0, "devices": [{"index": i} for i in range(65)]}], 1, "at most 64"),
    ],
)
def test_malformed_recording_one_line_naming_file_and_line(
    tmp_path: Path, lines, line_no, words
) -> None:
    rec = _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(RecordingError) as info:
        load_recording(str(rec))
    message = str(info.value)
    assert message.startswith(f"{rec} line {line_no}: "), message
    assert words in message and "\n" not in message


def test_unusable_files(tmp_path: Path, monkeypatch) -> None:
    cases = {
        "missing": (tmp_path / "nope.jsonl", "cannot read"),
        "directory": (tmp_path, "cannot read"),
        "empty": (_write(tmp_path / "empty.jsonl", ["", "  "]), "no samples"),
    }
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # never opened for reading: nothing can block
    cases["fifo"] = (fifo, "not a regular file")
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b'{"t": 0, "devices": []}\n\xff\xfe\n')
    cases["binary"] = (binary, "line 2: not UTF-8")
    monkeypatch.setattr(gpu_replay, "MAX_RECORDING_BYTES", 100)
    big = _write(tmp_path / "big.jsonl", [{"t": i, "devices": []} for i in range(20)])
    cases["big"] = (big, "larger than")
    for name, (path, words) in cases.items():
        with pytest.raises(RecordingError) as info:
            load_recording(str(path))
        assert words in str(info.value) and str(path) in str(info.value), name
        assert "\n" not in str(info.value), name


def test_escape_sequences_in_the_file_name_are_inert(tmp_path: Path) -> None:
    path = tmp_path / "a\x1b]0;owned\x07.jsonl"
    with pytest.raises(RecordingError) as info:
        load_recording(str(path))
    assert "\x1b" not in str(info.value) and "^[" in str(info.value)


# -- recording -----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _moving_board(fake: FakeNvml, clock: Clock):
    """Each read moves the boards a little, as real ones do."""
    real = fake.nvmlDeviceGetUtilizationRates
    step = {"n": 0}

    def util(h):
        step["n"] += 1
        fake.gpus[0].util = 10 + step["n"]
        return real(h)

    fake.nvmlDeviceGetUtilizationRates = util


def test_record_then_replay_gives_the_same_values(tmp_path: Path) -> None:
    boards = [
        FakeGpu(compute=[proc(4242, 3000 * MIB)], minor=2),
        FakeGpu(
            mig=(1, 1),
            migs=[FakeMig(uuid="MIG-x", gi=3, ci=1, compute=[proc(4343, 500 * MIB)])],
            pstate=0,
        ),
        FakeGpu(unsupported={"nvmlDeviceGetFanSpeed", "nvmlDeviceGetPowerUsage"}),
    ]
    fake = FakeNvml(boards)
    clock = Clock()
    _moving_board(fake, clock)
    seen = []

    class Watching(NvmlSource):
        def read(self, now):
            got = super().read(now)
            seen.append(got)
            return got

    out = tmp_path / "rec.jsonl"
    written = record_gpus(
        str(out), 3, source=Watching(fake), clock=clock, wall=clock, sleep=clock.sleep
    )
    assert written == 4 and len(seen) == 4  # t = 0, 1, 2, 3
    assert not [p for p in tmp_path.iterdir() if p.name != "rec.jsonl"]  # no temp file left
    recording = load_recording(str(out))
    assert [s.t for s in recording.samples] == [0.0, 1.0, 2.0, 3.0]
    for sample, readings in zip(recording.samples, seen, strict=True):
        assert sample.driver_version == "550.54.15"
        assert list(sample.readings) == readings  # every field, processes, MIG instances
    assert recording.samples[0].readings[0].device.util_percent == 11.0
    assert recording.samples[0].readings[1].device.mig_instances[0].uuid == "MIG-x"
    assert recording.samples[0].readings[2].device.fan_percent is None
    # a board lost mid-recording is recorded (and replayed) lost, with its name

    def lose_it(seconds: float) -> None:
        clock.sleep(seconds)
        fake.gpus[2].lost = True

    record_gpus(str(out), 1, source=NvmlSource(fake), clock=clock, wall=clock, sleep=lose_it)
    first, last = (s.readings[2].device for s in load_recording(str(out)).samples)
    assert first.state == "ok" and last.state == "lost"
    assert last.name == "NVIDIA H100 80GB HBM3" and last.minor == 2


def test_recording_without_nvml_says_why_and_writes_nothing(tmp_path: Path) -> None:
    import pynvml

    fake = FakeNvml(gpus(1), init_error=pynvml.NVMLError_DriverNotLoaded())
    out = tmp_path / "rec.jsonl"
    with pytest.raises(RecordingError) as info:
        record_gpus(str(out), 5, source=NvmlSource(fake))
    assert "nothing to record: NVIDIA driver not loaded" in str(info.value)
    assert list(tmp_path.iterdir()) == []


# -- the command line ----------------------------------------------------------------------


def _main(argv, capsys, monkeypatch, env=None) -> tuple[int, str, str]:
    for key in ("RGPU_FAKE_GPUS", "RGPU_FAKE_GPU_LOSE", "RGPU_GPU_REPLAY"):
        monkeypatch.delenv(key, raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "runs"
    path.mkdir()
    return path


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    return _write(tmp_path / "r.jsonl", [{"t": 0, "driver_version": "1.2", "devices": [DEVICE]}])


def test_snapshot_replay_from_flag_and_environment(root, recording, capsys, monkeypatch) -> None:
    rc, out, _err = _main(["snapshot", "--json", "--gpu-replay", str(recording), str(root)],
                          capsys, monkeypatch)  # fmt: skip
    assert rc == 0
    gpus = json.loads(out)["gpus"]
    assert gpus["source"] == "replay" and gpus["devices"][0]["util_percent"] == 97
    assert gpus["devices"][0]["runs"] == []
    rc, out, _err = _main(["snapshot", str(root)], capsys, monkeypatch,
                          env={"RGPU_GPU_REPLAY": str(recording)})  # fmt: skip
    assert rc == 0 and "replay" in out and "driver 1.2" in out


@pytest.mark.parametrize("command", [["snapshot"], [], ["demo", "--no-app"], ["watch"], ["agent"]])
def test_malformed_recording_exits_2_with_one_line(tmp_path, root, capsys, monkeypatch, command):
    bad = _write(tmp_path / "bad.jsonl", [{"t": 0, "devices": []}, "{oops"])
    argv = [*command, "--gpu-replay", str(bad)]
    if command != ["demo", "--no-app"]:
        argv.append(str(root))
    else:
        argv += ["--dir", str(tmp_path / "demo")]
    rc, out, err = _main(argv, capsys, monkeypatch)
    assert rc == 2 and out == ""
    assert err == f"rgpu-tui: {bad} line 2: not JSON (Expecting property name enclosed in " \
        "double quotes: line 1 column 2 (char 1))\n"  # fmt: skip
    assert not (tmp_path / "demo").exists()  # the demo started nothing


@pytest.mark.parametrize("value", ["1000000", "65", "-1", "four", "2.5", ""])
def test_fake_gpus_flag_is_capped_like_the_variable(root, capsys, monkeypatch, value) -> None:
    rc, out, err = _main(["snapshot", "--fake-gpus", value, str(root)], capsys, monkeypatch)
    assert rc == 2 and out == ""
    assert err == (
        f"rgpu-tui: --fake-gpus must be a whole number from 0 to {MAX_FAKE_GPUS}, got {value!r}\n"
    )


def test_fake_gpus_at_the_cap(root, capsys, monkeypatch) -> None:
    rc, out, _err = _main(["snapshot", "--json", "--fake-gpus", str(MAX_FAKE_GPUS), str(root)],
                          capsys, monkeypatch)  # fmt: skip
    assert rc == 0 and len(json.loads(out)["gpus"]["devices"]) == MAX_FAKE_GPUS


@pytest.mark.parametrize("how", ["flag", "env"])
def test_zero_fake_gpus_is_zero_simulated_gpus_not_nvml(root, capsys, monkeypatch, how) -> None:
    argv = ["snapshot", "--json", str(root)]
    env = {}
    if how == "flag":
        argv[1:1] = ["--fake-gpus", "0"]
    else:
        env["RGPU_FAKE_GPUS"] = "0"
    rc, out, _err = _main(argv, capsys, monkeypatch, env=env)
    gpus = json.loads(out)["gpus"]
    assert rc == 0 and gpus["source"] == "fake" and gpus["devices"] == []
    assert gpus["available"] is False and "zero simulated GPUs" in gpus["reason"]


@pytest.mark.parametrize(
    "flags, env",
    [
        (["--fake-gpus", "2", "--gpu-replay", "R"], {}),
        (["--gpu-replay", "R"], {"RGPU_FAKE_GPUS": "2"}),
        (["--fake-gpus", "0"], {"RGPU_GPU_REPLAY": "R"}),
        ([], {"RGPU_FAKE_GPUS": "1", "RGPU_GPU_REPLAY": "R"}),
    ],
)
def test_one_gpu_source_only(root, recording, capsys, monkeypatch, flags, env) -> None:
    flags = [str(recording) if f == "R" else f for f in flags]
    env = {k: str(recording) if v == "R" else v for k, v in env.items()}
    for command in (["snapshot", *flags, str(root)], [*flags, str(root)]):
        rc, out, err = _main(command, capsys, monkeypatch, env=env)
        assert rc == 2 and out == ""
        assert err.startswith("rgpu-tui: choose one GPU source: ") and err.count("\n") == 1


def test_record_gpus_refuses_other_sources_and_bad_seconds(root, recording, capsys, monkeypatch):
    out_file = root / "rec.jsonl"
    for argv in (
        ["snapshot", "--record-gpus", str(out_file), "--fake-gpus", "2"],
        ["snapshot", "--record-gpus", str(out_file), "--gpu-replay", str(recording)],
        ["snapshot", "--record-gpus", str(out_file), "--seconds", "0"],
        ["snapshot", "--record-gpus", str(out_file), "--seconds", "nan"],
    ):
        rc, out, err = _main(argv, capsys, monkeypatch)
        assert rc == 2 and out == "" and err.count("\n") == 1, argv
    assert not out_file.exists()


def test_record_gpus_without_a_driver_exits_1(root, capsys, monkeypatch) -> None:
    """This machine has no NVIDIA driver: recording says so and writes nothing."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # pragma: no cover
        pynvml.nvmlShutdown()
        pytest.skip("an NVIDIA driver is present")
    out_file = root / "rec.jsonl"
    rc, out, err = _main(["snapshot", "--record-gpus", str(out_file), "--seconds", "1"],
                         capsys, monkeypatch)  # fmt: skip
    assert rc == 1 and out == ""
    assert err.splitlines()[-1].startswith("rgpu-tui: nothing to record: NVIDIA driver not")
    assert not out_file.exists()


def test_snapshot_json_replay_as_a_subprocess(root, recording, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RGPU_")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "rgpu_tui", "snapshot", "--json", "--gpu-replay", str(recording),
         str(root)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1
    gpus = data["gpus"]
    assert gpus["source"] == "replay" and gpus["pid_namespace"] == "local"
    (d,) = gpus["devices"]
    assert d["minor"] == 0 and d["runs"] == [] and d["mig_instances"] == []
    (p,) = d["processes"]
    assert set(p) >= {"pid", "run_dir", "kind", "host_pid", "local_pid", "local_candidates"}


def test_text_snapshot_says_replay_and_host_pids() -> None:
    from rgpu_tui.core.model.snapshot import GpuDevice, GpuProcess, GpuView
    from rgpu_tui.core.render.snapshot_text import gpus_to_text

    paired = GpuProcess(81234, "python", 900.0, "/r/exp\x1b[2J", "run", host_pid=True, local_pid=12)
    lone = GpuProcess(81299, None, 10.0, None, "host", host_pid=True)
    view = GpuView(
        available=True,
        reason=None,
        source="replay",
        driver_version="550.54.15",
        devices=(GpuDevice(0, "H100", "GPU-1", "ok", processes=(paired, lone), runs=("/r/x",)),),
        pid_namespace="host",
    )
    lines = gpus_to_text(view)
    assert lines[0] == "GPUs 1 (replay, driver 550.54.15)"
    assert lines[1] == "  container: NVML gives host pids"
    assert lines[2].endswith("pids host 81234=12 exp^[[2J, host 81299")
