"""rgpu-tui installed apart from training (pipx, uv tool): the GPU check and the demo use the
training environment, i.e. the Python of the `libreyolo` found on PATH (core.launch.training_env).

Real venvs and processes: a "training" venv holding a stand-in torch, a `libreyolo` script on
PATH whose `#!` line names that venv's Python, and an "apart" venv that runs rgpu-tui and can
import neither torch, libreyolo nor PIL. Before, `preflight` said "torch is not installed for
<rgpu-tui's Python>" and `demo` said libreyolo was not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import textual
from support.checkpoints import epoch_checkpoint
from support.cli_env import clean_env

from rgpu_tui.core.launch.training_env import training_python

STANDIN_VERSION = "0.0.1+standin"
STANDIN_TORCH = f"""
__version__ = {STANDIN_VERSION!r}
class version:
    cuda = None
class cuda:
    @staticmethod
    def is_available():
        return False
"""

# libreyolo's two commands the demo uses: `doctor` reports (as a warning) which Python runs
# it; `train` writes its run directory with status.json, as libreyolo does, and exits
FAKE_LIBREYOLO = """
import json, os, sys
from datetime import datetime, timezone
if sys.argv[1] == "doctor":
    finding = dict(severity="warning", check_id="python", message=sys.executable)
    print(json.dumps(dict(data=sys.argv[2], findings=[finding], stats={{}})))
    sys.exit(0)
args = dict(a.split("=", 1) for a in sys.argv[2:])
run = os.path.join(args["project"], args["name"])
os.makedirs(run)
status = dict(state="completed", pid=os.getpid(), save_dir=run,
              started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
with open(os.path.join(run, ".status.tmp"), "w") as f:
    json.dump(status, f)
os.replace(os.path.join(run, ".status.tmp"), os.path.join(run, "status.json"))
"""
HIDDEN = ("libreyolo", "torch", "PIL", "pillow", "torchvision")  # not in a pipx install


def _venv(path: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120
    )
    return path


def _site_packages(venv: Path) -> Path:
    [found] = venv.glob("lib/python*/site-packages")
    return found


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def training(tmp_path_factory) -> Path:
    """The training venv's Python (it imports the stand-in torch, nothing else)."""
    venv = _venv(tmp_path_factory.mktemp("training") / "venv")
    (_site_packages(venv) / "torch").mkdir()
    (_site_packages(venv) / "torch" / "__init__.py").write_text(STANDIN_TORCH)
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def apart(tmp_path_factory) -> Path:
    """The Python of rgpu-tui installed on its own: this test venv's packages (rgpu-tui and
    its dependencies) without libreyolo, torch and PIL, and no libreyolo beside it."""
    root = tmp_path_factory.mktemp("apart")
    venv = _venv(root / "venv")
    shared = root / "packages"
    shared.mkdir()
    here = Path(textual.__file__).parents[1]  # this venv's site-packages
    for entry in here.iterdir():
        if not entry.name.lower().startswith(tuple(h.lower() for h in HIDDEN)):
            (shared / entry.name).symlink_to(entry)
    (_site_packages(venv) / "shared.pth").write_text(
        f"import site; site.addsitedir({str(shared)!r})\n"
    )
    python = venv / "bin" / "python"
    probe = "import rgpu_tui.cli, importlib.util as u; print([u.find_spec(m) for m in " + (
        "('libreyolo', 'torch', 'PIL')])"
    )
    out = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[None, None, None]", out.stdout + out.stderr
    return python


def _on_path(tmp_path: Path, first_line: str, body: str = FAKE_LIBREYOLO) -> dict[str, str]:
    """A `libreyolo` starting with first_line, in a directory first on PATH."""
    _script(tmp_path / "bin" / "libreyolo", first_line + "\n" + body.format())
    return clean_env(tmp_path, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def _rgpu(python: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "rgpu_tui", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


# -- the commands, installed apart -------------------------------------------------------


def test_preflight_runs_torch_with_the_python_of_libreyolo_on_path(
    apart, training, tmp_path
) -> None:
    env = _on_path(tmp_path, f"#!{training}")
    proc = _rgpu(apart, env, "preflight", "--json")
    report = json.loads(proc.stdout)
    assert report["python"] == str(training), proc.stderr
    assert report["torch_version"] == STANDIN_VERSION
    assert report["verdict"].startswith(f"CUDA is not available: torch {STANDIN_VERSION} is a")
    assert proc.returncode == 1  # no GPU: the check fails, plainly
    text = _rgpu(apart, env, "preflight").stdout.splitlines()
    assert text[1] == f"  python: {training}"


def test_without_libreyolo_anywhere_preflight_says_so_for_its_own_python(apart, tmp_path) -> None:
    env = clean_env(tmp_path, PATH=str(tmp_path / "empty"))
    proc = _rgpu(apart, env, "preflight", "--json")
    report = json.loads(proc.stdout)
    assert report["python"] == str(apart)
    # the monitor's own venv is not where torch goes (README: training apart): no
    # `pip install` into it, but the training environment to activate
    assert report["verdict"].startswith(
        f"torch is not installed for {apart}, rgpu-tui's own Python (no `libreyolo` beside it "
        "or on PATH): activate the training environment, or put its bin/ folder on PATH"
    )
    assert f"{apart} -m pip install" not in report["verdict"]


def _no_libreyolo(apart: Path) -> str:
    """What every command says without a libreyolo (where it looked, what to do)."""
    return (
        f"no `libreyolo` in {apart.parent} (beside rgpu-tui's Python) or on PATH: install it "
        "in the training environment (pip install 'rgpu-tui[train]' or pip install libreyolo) "
        "and activate that environment, or put its bin/ folder on PATH"
    )


def test_without_libreyolo_anywhere_launch_demo_and_resume_say_where_they_looked(
    apart, tmp_path
) -> None:
    """Before, they said "libreyolo is not installed for <rgpu-tui's Python>" (true, and
    beside the point when rgpu-tui has a venv of its own), and `launch` blamed the dataset."""
    env = clean_env(tmp_path, PATH=str(tmp_path / "empty"))
    wanted = _no_libreyolo(apart)
    data = tmp_path / "data.yaml"
    data.write_text("train: images/train\nval: images/val\nnames: [a]\n")
    runs = tmp_path / "runs"
    for extra in ((), ("--no-doctor",)):
        proc = _rgpu(apart, env, "launch", "--project", str(runs), *extra, "--", f"data={data}")
        assert proc.returncode == 1
        assert proc.stderr.splitlines()[-1] == f"rgpu-tui: {wanted}", proc.stderr
        assert "dataset has errors" not in proc.stderr
        assert not (runs / ".rgpu" / "launches.jsonl").exists()

    proc = _rgpu(apart, env, "demo", "--no-app", "--dir", str(tmp_path / "demo"))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == f"rgpu-tui: the demo trains with libreyolo: {wanted}"

    run = runs / "r"
    (run / "weights").mkdir(parents=True)
    (run / "weights" / "last.pt").write_bytes(epoch_checkpoint(3))  # complete: resume looks on
    (run / "train_config.yaml").write_text(f"data: {json.dumps(str(data))}\ndevice: cpu\n")
    status = {"state": "failed", "pid": 1, "save_dir": str(run), "error": "CUDA OOM"}
    (run / "status.json").write_text(json.dumps(status))
    proc = _rgpu(apart, env, "resume", str(run))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == f"rgpu-tui: not resumed: {wanted}", proc.stderr


def test_demo_trains_with_the_libreyolo_on_path(apart, training, tmp_path) -> None:
    """The demo's dataset needs no PIL, its check no libreyolo module, and its doctor and
    training run with the training venv's Python (the fake reports which one)."""
    env = _on_path(tmp_path, f"#!{training}")
    work = tmp_path / "demo"
    proc = _rgpu(apart, env, "demo", "--no-app", "--dir", str(work), "--epochs", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "libreyolo doctor: 0 error(s), 1 warning(s)" in lines
    assert f"  python: {training}" in lines
    assert f"run directory: {work / 'runs' / 'demo'}" in lines
    assert len(list((work / "dataset" / "images" / "train").glob("*.png"))) == 16


# -- which Python: the forms of a libreyolo script ------------------------------------------


def test_the_interpreter_of_a_plain_shebang(training, tmp_path) -> None:
    script = _script(tmp_path / "bin" / "libreyolo", f"#!{training}\nimport sys\n")
    assert training_python(str(script)) == str(training)


def test_env_shebang_finds_python_on_path(training, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{training.parent}{os.pathsep}{os.environ['PATH']}")
    script = _script(tmp_path / "bin" / "libreyolo", "#!/usr/bin/env -S python3 -u\n")
    assert training_python(str(script)) == str(training.parent / "python3")


def test_pips_sh_launcher_for_a_long_interpreter_path(training, tmp_path) -> None:
    launcher = f"#!/bin/sh\n'''exec' \"{training}\" \"$0\" \"$@\"\n' '''\nimport sys\n"
    script = _script(tmp_path / "bin" / "libreyolo", launcher)
    assert training_python(str(script)) == str(training)


def test_a_python_beside_a_script_that_names_none(training, tmp_path) -> None:
    """No usable `#!` (a shell wrapper, a binary): the python beside it; through a symlink on
    PATH (pipx, uv tool), beside its target."""
    target = _script(training.parent / "libreyolo-wrapper", "#!/bin/sh\nexec true\n")
    try:
        assert training_python(str(target)) == str(training.parent / "python3")
        link = tmp_path / "local-bin" / "libreyolo"
        link.parent.mkdir()
        link.symlink_to(target)
        assert training_python(str(link)) == str(training.parent / "python3")
    finally:
        target.unlink()


@pytest.mark.parametrize(
    "first_line", ["#!/bin/bash", "#!/usr/bin/env no-such-python-here", "\x7fELF", "#!"]
)
def test_this_python_when_the_script_names_no_python(first_line, tmp_path) -> None:
    script = _script(tmp_path / "bin" / "libreyolo", first_line + "\n")
    assert training_python(str(script)) == sys.executable


def test_a_fifo_named_libreyolo_is_not_read(tmp_path) -> None:
    fifo = tmp_path / "bin" / "libreyolo"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert training_python(str(fifo)) == sys.executable  # returns: nothing blocked on it


def test_libreyolo_beside_this_python_keeps_this_python(tmp_path) -> None:
    """The dev venv: libreyolo beside sys.executable, whatever its `#!` line spells."""
    beside = Path(sys.executable).parent / "libreyolo"
    if not beside.is_file():
        pytest.skip("libreyolo is not installed beside this Python")
    assert training_python(str(beside)) == sys.executable
    assert training_python() == sys.executable
