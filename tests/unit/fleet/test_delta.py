"""core.fleet.delta: the ops the agent sends and the fleet applies."""

from __future__ import annotations

import copy
import json
import random

import pytest

from rgpu_tui.core.fleet.delta import DeltaError, apply, diff


def _value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return {rng.choice("abcdef"): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 3 and roll < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return rng.choice([None, True, False, 0, 1, 1.0, 2.5, "x", "y", "", "\x1b[2J", "\udcff"])


def _mutate(rng: random.Random, value, depth: int = 0):
    if isinstance(value, dict):
        out = dict(value)
        for key in list(out):
            roll = rng.random()
            if roll < 0.3:
                out[key] = _mutate(rng, out[key], depth + 1)
            elif roll < 0.4:
                del out[key]
        if rng.random() < 0.2:
            out[rng.choice("abcdefg")] = _value(rng, depth + 1)
        return out
    if isinstance(value, list):
        roll = rng.random()
        if roll < 0.2 and value:  # a window that moved on
            n = rng.randint(1, len(value))
            return value[n:] + [_value(rng, depth + 1) for _ in range(rng.randint(0, n))]
        if roll < 0.4:
            return value + [_value(rng, depth + 1) for _ in range(2)]
        if roll < 0.5:
            return value[: rng.randint(0, len(value))]
        return [_mutate(rng, v, depth + 1) if rng.random() < 0.3 else v for v in value]
    return _value(rng, depth) if rng.random() < 0.5 else value


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_applying_the_diff_gives_the_new_document_and_leaves_the_old_one() -> None:
    rng = random.Random(16)
    for _ in range(5000):
        old = {"doc": _value(rng)}
        new = _mutate(rng, old) if rng.random() < 0.9 else {"doc": _value(rng)}
        before = copy.deepcopy(old)
        ops = json.loads(json.dumps(diff(old, new)))  # as it crosses the link
        assert _same(apply(old, ops), new), (old, new, ops)
        assert _same(old, before)
        assert (ops == []) == _same(old, new)


def test_types_count_true_1_and_1_0_differ() -> None:
    assert diff({"a": 1}, {"a": True}) == [["=", ["a"], True]]
    assert diff({"a": 1}, {"a": 1.0}) == [["=", ["a"], 1.0]]
    assert diff({"a": None}, {"a": 0}) == [["=", ["a"], 0]]


def test_a_sliding_window_is_one_small_op() -> None:
    history = [float(i) for i in range(120)]
    old = {"gpus": {"devices": [{"util_history": history, "util_percent": 119.0}]}}
    new = copy.deepcopy(old)
    new["gpus"]["devices"][0]["util_history"] = history[1:] + [37.0]
    new["gpus"]["devices"][0]["util_percent"] = 37.0
    ops = diff(old, new)
    assert ops == [
        ["<", ["gpus", "devices", 0, "util_history"], 1, [37.0]],
        ["=", ["gpus", "devices", 0, "util_percent"], 37.0],
    ]
    assert apply(old, ops) == new


def test_several_keys_of_one_object_share_one_path() -> None:
    old = {"gpus": {"devices": [{"util_percent": 90.0, "power_w": 400.0, "name": "H100"}]}}
    new = copy.deepcopy(old)
    new["gpus"]["devices"][0].update(util_percent=94.7, power_w=None, temperature_c=69)
    ops = diff(old, new)
    assert ops == [
        ["+", ["gpus", "devices", 0], {"util_percent": 94.7, "power_w": None, "temperature_c": 69}]
    ]
    assert apply(old, ops) == new


def test_nulls_are_values_and_removed_keys_are_removed() -> None:
    ops = diff({"eta": 12.0, "gone": 1}, {"eta": None})
    assert ops == [["=", ["eta"], None], ["-", ["gone"]]]
    assert apply({"eta": 12.0, "gone": 1}, ops) == {"eta": None}


def test_untouched_parts_are_shared_and_touched_ones_copied() -> None:
    old = {"runs": [{"state": "running"}, {"state": "dead"}], "system": {"cpu": 1}}
    new = apply(old, [["=", ["runs", 0, "state"], "completed"]])
    assert new["system"] is old["system"] and new["runs"][1] is old["runs"][1]
    assert old["runs"][0]["state"] == "running" and new["runs"][0]["state"] == "completed"


@pytest.mark.parametrize(
    "ops, message",
    [
        ("nope", "a delta must be a list of ops"),
        ([["?", ["a"]]], "not an op"),
        ([["=", ["a"]]], "malformed '=' op"),
        ([["=", ["x", "y"], 1]], 'no such place ["x"]'),
        ([["=", ["list", 5], 1]], "index 5 out of range"),
        ([["=", ["list", -1], 1]], "index -1 out of range"),
        ([["=", ["list", True], 1]], "index True out of range"),
        ([["-", ["missing"]]], 'no such key ["missing"]'),
        ([["<", ["list"], 9, []]], "slide by 9 out of range"),
        ([["<", ["a"], 0, []]], '["a"] is not an array'),
        ([["<", ["list"], 0, 5]], "malformed slide"),
        ([["=", ["a", "b"], 1]], 'no such place ["a", "b"]'),
        ([["-", []]], "cannot remove the whole document"),
        ([["+", ["list"], {"a": 1}]], '["list"] is not an object'),
        ([["+", ["a"], {"b": 1}]], '["a"] is not an object'),
        ([["+", [], [1]]], "malformed '+' op"),
    ],
)
def test_a_malformed_op_is_one_line(ops, message) -> None:
    doc = {"a": 1, "list": [1, 2]}
    with pytest.raises(DeltaError) as info:
        apply(doc, ops)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert doc == {"a": 1, "list": [1, 2]}
