"""Shared fixtures for the real-training tests (marked ``@pytest.mark.training``)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.dataset import make_dataset
from support.training import Training, libreyolo_executable

LIVE_EPOCHS = 5


@pytest.fixture(autouse=True)
def own_processes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trainings setting up (core.machine.setup_procs) are looked for among this test's own
    processes only: a training another test run started on the same machine makes that
    machine busy, rightly, but is not this test's. The scan itself is the real one."""
    from rgpu_tui.core.machine import setup_procs

    me = psutil.Process()

    def mine():
        for proc in me.children(recursive=True):
            try:
                proc.info = proc.as_dict(["pid", "cmdline", "create_time"])
            except psutil.Error:
                continue
            yield proc

    monkeypatch.setattr(setup_procs, "processes", mine)


def _require_libreyolo() -> None:
    """Skip when libreyolo is unavailable, except in CI (CI=true), where the real run must run."""
    problem = None
    try:
        importlib.import_module("libreyolo")
    except Exception as exc:  # ImportError, or a broken install
        problem = f"libreyolo cannot be imported ({exc!r}); install rgpu-tui[train]"
    else:
        if not libreyolo_executable().exists():
            problem = f"libreyolo console script not found at {libreyolo_executable()}"
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{problem} -- in CI the real training tests must run, not skip", pytrace=False)
    pytest.skip(problem)


@pytest.fixture(scope="session")
def trained_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Absolute path of data.yaml of a tiny synthetic dataset, built once per session."""
    _require_libreyolo()
    return make_dataset(tmp_path_factory.mktemp("dataset"))


@pytest.fixture
def live_training(
    request: pytest.FixtureRequest, trained_dataset: Path, tmp_path: Path
) -> Iterator[Training]:
    """A started ``libreyolo train`` run in ``tmp_path/runs/live``.

    LIVE_EPOCHS epochs, or N with ``@pytest.mark.parametrize("live_training", [N],
    indirect=True)``. The runs root is ``training.project``; the run dir is
    ``training.run_dir``. The process group is killed on teardown whatever the test did.
    """
    epochs = getattr(request, "param", LIVE_EPOCHS)
    training = Training(trained_dataset, tmp_path / "runs", name="live", epochs=epochs)
    training.start()
    try:
        yield training
    finally:
        training.cleanup()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temp folder whose path is short whatever pytest's --basetemp is: for tests that read
    a bounded message (an event is cut at 400 characters) naming paths under it, so what they
    find does not depend on where the test runs."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="rg", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
