"""Where pull looks for a run's files: hub_path read back the way core.hub.push wrote it."""

from __future__ import annotations

import re

import pytest

from rgpu_tui.core.hub.hub_pull import PullArgumentError, _template_regex, check_arguments, layout
from rgpu_tui.core.run.hub_target import repo_path


@pytest.mark.parametrize(
    ("hub_path", "path", "name"),
    [
        ("{run}/{file}", "exp1/best.pt", "best.pt"),
        ("{run}/{file}", "exp1/last.pt", "last.pt"),
        ("{run}/{file}", "exp1/epoch_12.pt", "epoch_12.pt"),
        ("{run}/{file}", "exp1/status.json", "status.json"),
        ("{run}/{file}", "exp1/train_config.yaml", "train_config.yaml"),
        ("{run}/{file}", "exp10/best.pt", None),  # another run
        ("{run}/{file}", "exp1/epoch_x.pt", None),
        ("{run}/{file}", "exp1/sub/epoch_3.pt", None),
        ("{run}/{file}", "exp1/train.log", None),  # not something a push sends
        ("./ckpt//{run}/{file}", "ckpt/exp1/best.pt", "best.pt"),  # normalised like a push
        ("ckpt/{run}-{file}", "ckpt/exp1-best.pt", "best.pt"),
        ("ckpt/{run}-{file}", "ckpt/exp1-epoch_4.pt", "epoch_4.pt"),
        ("ckpt/{run}-{file}", "ckpt/exp10-best.pt", None),
        ("ckpt/{run}-{file}", "ckpt/status.json", None),  # every run's: not this one's
        ("{run}/{run}_{file}", "exp1/exp1_last.pt", "last.pt"),
        ("{file}", "best.pt", "best.pt"),
    ],
)
def test_the_repo_paths_a_push_makes_map_back_to_their_files(hub_path, path, name) -> None:
    assert layout(hub_path, "exp1").name_of(path) == name


@pytest.mark.parametrize("name", ["best.pt", "last.pt", "epoch_7.pt"])
@pytest.mark.parametrize("hub_path", ["{run}/{file}", "a/b/{run}.{file}", "{run}/w/{run}{file}"])
def test_every_checkpoint_path_of_a_push_is_recognised(hub_path, name) -> None:
    assert layout(hub_path, "r1").name_of(repo_path(hub_path, "r1", name)) == name


def test_artifacts_are_this_runs_only_when_their_folder_names_the_run() -> None:
    assert layout("{run}/{file}", "exp1").shared is False
    assert layout("ckpt/{run}-{file}", "exp1").shared is True
    assert layout("{file}", "exp1").shared is True


@pytest.mark.parametrize(
    ("hub_path", "expected"),
    [
        ("{run}/model.pt", "has no {file}"),
        ("{run}/{file}/model.pt", "puts {file} in a folder name"),
        ("../{run}/{file}", "not a path inside the repo"),
    ],
)
def test_a_hub_path_pull_cannot_read_back_is_refused(hub_path, expected) -> None:
    with pytest.raises(PullArgumentError, match=re.escape(expected)):
        layout(hub_path, "exp1")


@pytest.mark.parametrize(
    ("repo", "run", "which"),
    [
        ("alice", "exp1", "best"),
        ("alice/ckpts/x", "exp1", "best"),
        ("alice/ckpts", "", "best"),
        ("alice/ckpts", "..", "best"),
        ("alice/ckpts", "a/b", "best"),
        ("alice/ckpts", " exp1", "best"),
        ("alice/ckpts", "exp1", "epoch_3"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(repo, run, which) -> None:
    with pytest.raises(PullArgumentError):
        check_arguments(repo, run, which)


def test_the_runs_listing_pattern_takes_the_run_from_a_file_or_folder_name() -> None:
    pattern = re.compile(_template_regex("{run}-{file}", r"(?:best|last|epoch_\d+)\.pt"))
    assert pattern.fullmatch("exp-9-epoch_3.pt").group("run") == "exp-9"
    assert pattern.fullmatch("exp9-status.json") is None
    same = re.compile(_template_regex("{run}_{run}", "x"))
    assert same.fullmatch("a_a").group("run") == "a" and same.fullmatch("a_b") is None
