"""A run's train_config.yaml (libreyolo writes every training argument there at train start),
read for the compare table: the hyperparameters that differ between runs.

The file is untrusted: read through core.base.safeio (a FIFO never blocks), at most
MAX_BYTES, refused when it resolves outside the run, parsed with PyYAML's safe loader
(hostile nesting is "not readable YAML"). The mapping is flattened to (key, text) pairs:
nested mappings as `a.b`, lists and scalars as compact text (`[0.5, 1.5]`, `null`,
`true`), at most MAX_KEYS keys, each key and value cut to a length. `ConfigReader` reads
the file again only when its inode, size or mtime changed.
"""

from __future__ import annotations

import functools
import os

from ..base.safeio import read_regular
from ..base.values import value_text
from .runpath import outside_run
from .tail import describe_os_error

NAME = "train_config.yaml"
MAX_BYTES = 1024 * 1024
MAX_KEYS = 300
KEY_MAX = 80
VALUE_MAX = 120
NUMBER_MAX = 100  # characters of a YAML integer
# where the run was written, not how it trained: never a difference worth showing
NOT_HYPERPARAMETERS = frozenset({"project", "name", "exist_ok"})


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def flatten(doc: dict, prefix: str = "", out: dict | None = None, depth: int = 0) -> dict:
    """{"a.b": "text"} for a mapping, at most MAX_KEYS keys."""
    out = {} if out is None else out
    for key, value in doc.items():
        if len(out) >= MAX_KEYS:
            break
        name = _cut(prefix + value_text(key, KEY_MAX), KEY_MAX)
        if isinstance(value, dict) and value and depth < 4:
            flatten(value, f"{name}.", out, depth + 1)
        else:
            out[name] = value_text(value, VALUE_MAX)
    return out


class _TooLong(ValueError):
    pass


@functools.cache
def _loader():
    """PyYAML's safe loader (the C one when built), whose integers are at most NUMBER_MAX
    characters: YAML 1.1's base-60 integers (`1:2:3`) cost quadratic time to build, so a
    1 MB one would take a minute."""
    import yaml  # PyYAML (pyproject dependencies)

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    def short_int(loader, node):
        if len(node.value) > NUMBER_MAX:
            raise _TooLong(f"a number {len(node.value)} characters long")
        return loader.construct_yaml_int(node)

    Loader.add_constructor("tag:yaml.org,2002:int", short_int)
    return Loader


def load_config(run_dir: str) -> tuple[dict | None, str | None]:
    """The run's train_config.yaml as a mapping, or (None, why it could not be read): the one
    reader of that file (the compare table, resume's data and device, the launch form's
    clone)."""
    path = os.path.join(run_dir, NAME)
    problem = outside_run(run_dir, path)
    if problem is not None and os.path.lexists(path):
        return None, f"{NAME} resolves to {problem}, outside the run directory"
    try:
        raw = read_regular(path, MAX_BYTES)
    except OSError as exc:
        return None, f"{NAME} {describe_os_error(exc)}"
    if len(raw) > MAX_BYTES:
        return None, f"{NAME} is larger than {MAX_BYTES // 1024} KiB"
    try:
        import yaml  # PyYAML (pyproject dependencies)

        doc = yaml.load(raw, Loader=_loader())  # noqa: S506 - a safe loader
    except _TooLong as exc:
        return None, f"{NAME} is not readable YAML ({exc})"
    except Exception as exc:  # yaml.YAMLError, RecursionError on hostile nesting
        return None, f"{NAME} is not readable YAML ({type(exc).__name__})"
    if not isinstance(doc, dict):
        return None, f"{NAME} is not a mapping"
    return doc, None


def read_config(run_dir: str) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """(flattened pairs in file order, None) or ((), why it could not be read)."""
    doc, problem = load_config(run_dir)
    if doc is None:
        return (), problem
    return tuple(flatten(doc).items()), None


class ConfigReader:
    """read_config, again only when the file changed (one stat a call)."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self._key: tuple | None = None
        self._got: tuple[tuple[tuple[str, str], ...], str | None] = ((), f"{NAME} missing")

    def read(self) -> tuple[tuple[tuple[str, str], ...], str | None]:
        try:
            st = os.stat(os.path.join(self.run_dir, NAME))
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        if key != self._key or key is None:
            self._key = key
            self._got = read_config(self.run_dir)
        return self._got


def differing_keys(configs: list[dict]) -> list[str]:
    """The keys whose text differs between the configs (absent counts as a value), in the
    order they first appear; where a run was written (NOT_HYPERPARAMETERS) is left out.
    Fewer than two configs differ in nothing."""
    if len(configs) < 2:
        return []
    keys: dict[str, None] = {}
    for config in configs:
        keys.update(dict.fromkeys(config))
    out = []
    for key in keys:
        if key in NOT_HYPERPARAMETERS:
            continue
        values = {config.get(key) for config in configs}
        if len(values) > 1:
            out.append(key)
    return out
