"""core.base.values.value_text: any parsed value as text, its work bounded by the length
while it walks (shared and cyclic YAML aliases, huge integers), and train_config.yaml's
integers bounded in length (YAML 1.1 base-60 integers cost quadratic time to build)."""

from __future__ import annotations

import datetime
import json
import os

import yaml

from rgpu_tui.core.base.values import shown, value_text
from rgpu_tui.core.run.train_config import read_config


def test_small_values_read_as_compact_json():
    for value in ([0.5, 1.5], {"a": 1, "b": [None, True, "x"]}, ["é"], {"k": {"n": [{}, []]}}):
        assert value_text(value, 1000) == json.dumps(
            value, separators=(", ", ": "), ensure_ascii=False
        )
    assert value_text("top", 10) == "top" and value_text(None, 10) == "null"
    assert value_text(datetime.date(2020, 1, 2), 20) == "2020-01-02"
    assert value_text({5: "q", None: 1}, 40) == '{"5": "q", "null": 1}'


def test_shared_cyclic_and_huge_values_are_cut_while_walking():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    doc = yaml.safe_load("\n".join(lines))  # 9^9 items in a9 once written out
    text = value_text(doc["a9"], 120)
    assert len(text) == 120 and text.startswith('[[[[[[[[[["x", ') and text.endswith("…")
    loop: list = []
    loop.append(loop)
    assert value_text(loop, 8) == "[[[[[[[…"
    big = 16**300_000  # a 300,000-digit hexadecimal YAML integer: str() would raise
    assert value_text([big], 40) == "[361237-digit number]"
    assert shown(["x" * 10**6], 12) == '["xxxxxxxxx…'


def test_a_long_yaml_integer_makes_the_file_unreadable(tmp_path):
    (tmp_path / "train_config.yaml").write_text("epochs: 1" + ":1" * 200_000 + "\n")
    assert read_config(str(tmp_path)) == (
        (),
        "train_config.yaml is not readable YAML (a number 400001 characters long)",
    )
    (tmp_path / "train_config.yaml").write_text("epochs: 0x" + "f" * 100_000 + "\nlr: 0.01\n")
    assert read_config(str(tmp_path))[1] == (
        "train_config.yaml is not readable YAML (a number 100002 characters long)"
    )
    (tmp_path / "train_config.yaml").write_text("epochs: 30\nlr: 1:30\n")
    assert read_config(str(tmp_path)) == ((("epochs", "30"), ("lr", "90")), None)


def test_a_launch_records_fields_that_are_not_text_are_bounded_text(tmp_path):
    from rgpu_tui.core.records.launch_records import TEXT_MAX, launches_path, read_launches

    path = launches_path(str(tmp_path))
    os.makedirs(os.path.dirname(path))
    record = {"kind": "launch", "id": "x", "time": 1.7e9, "pid": 5, "project": str(tmp_path),
              "console_log": "c.log", "argv": ["libreyolo", [1] * 100_000],
              "command": {"a": ["b"] * 100_000}}  # fmt: skip
    with open(path, "w") as f:
        f.write(json.dumps(record) + "\n")
    [got] = read_launches(str(tmp_path))
    assert got.argv[0] == "libreyolo" and got.argv[1].startswith("[1, 1, ")
    assert len(got.argv[1]) == TEXT_MAX and len(got.command) == TEXT_MAX
