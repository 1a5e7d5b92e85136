"""The delta form: what changed between two JSON documents, as a list of small ops.

The agent (core.fleet.agent) sends a host's full Snapshot JSON once, then, at each refresh,
only the ops that turn the previous document into the new one; the local side
(core.fleet.fleet) applies them to its copy. Each op is a JSON array whose first element
says what it does; PATH is an array of object keys (strings) and array indices
(integers) from the top of the document:

    ["=", PATH, VALUE]        set: the key of the object at PATH[:-1] (added when new), or
                              the element at index PATH[-1] of the array (an index equal
                              to its length appends); PATH [] replaces the whole document
    ["+", PATH, {KEY: VALUE}] set several keys of the object at PATH (a GPU's readings:
                              the path once, not once per key)
    ["-", PATH]               remove: the key from the object, or every element of the
                              array from index PATH[-1] on (the array is cut there)
    ["<", PATH, N, VALUES]    slide: drop the first N elements of the array at PATH and
                              append VALUES (a window that moved on: a GPU's utilisation
                              history, the log tail, a metric series; N 0 appends)

Ops apply in order. Why not RFC 7386 (JSON merge patch): a null there means "remove",
and the Snapshot holds many nulls that are values ("unknown"); arrays are replaced whole,
so every refresh would resend each GPU's 120-sample history. Why not RFC 6902 (JSON
Patch): the same ops in a heavier spelling, and no op for a sliding window.

`diff(old, new)` finds the ops (scalars compare by type and value: 1, 1.0 and true
differ); `apply(doc, ops)` returns the new document without changing `doc`: only the
objects and arrays along the ops' paths are copied, the rest is shared, so a document
once handed out is never changed under its reader. A malformed op (a bad path, an
index out of range, a type that does not fit) raises DeltaError with one line.
"""

from __future__ import annotations

import json

SET, KEYS, REMOVE, SLIDE = "=", "+", "-", "<"


class DeltaError(ValueError):
    """An op that does not apply to the document; str(error) is one line."""


# -- diff ---------------------------------------------------------------------------


def _same(a, b) -> bool:
    """Equal JSON values: same types all the way down (True != 1, 1 != 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _size(ops: list) -> int:
    return len(json.dumps(ops, separators=(",", ":")))


def diff(old, new, path: tuple = ()) -> list:
    """The ops that turn `old` into `new` (both JSON values: dict, list, str, int, float,
    bool, None); [] when they are the same."""
    ops: list = []
    _diff(old, new, list(path), ops)
    return ops


def _diff(old, new, path: list, ops: list) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        keys: dict = {}  # the keys set whole, sent as one op when there are several
        for key, value in new.items():
            if key not in old:
                keys[key] = value
            elif not _same(old[key], value):
                inner: list = []
                _diff(old[key], value, path + [key], inner)
                if len(inner) == 1 and inner[0][0] == SET and len(inner[0][1]) == len(path) + 1:
                    keys[key] = value
                else:
                    ops.extend(inner)
        if len(keys) == 1:
            [(key, value)] = keys.items()
            ops.append([SET, path + [key], value])
        elif keys:
            ops.append([KEYS, path, keys])
        for key in old:
            if key not in new:
                ops.append([REMOVE, path + [key]])
        return
    if isinstance(old, list) and isinstance(new, list):
        if not _same(old, new):
            ops.extend(_list_ops(old, new, path))
        return
    if not _same(old, new):
        ops.append([SET, path, new])


def _slide(old: list, new: list) -> int | None:
    """The smallest N such that new is old without its first N elements plus some more;
    None when there is none."""
    for n in range(len(old) + 1):
        keep = len(old) - n
        if keep > len(new):
            continue
        if keep == 0 or (_same(old[n], new[0]) and _same(old[n:], new[:keep])):
            return n
    return None


def _list_ops(old: list, new: list, path: list) -> list:
    """The cheapest of: one slide op, element-wise ops (plus an append or a cut), or
    setting the whole array."""
    choices = [[[SET, path, new]]]
    n = _slide(old, new)
    if n is not None and n < len(old):  # n == len(old) is the whole array again
        choices.append([[SLIDE, path, n, new[len(old) - n :]]])
    elementwise: list = []
    common = min(len(old), len(new))
    for i in range(common):
        if not _same(old[i], new[i]):
            _diff(old[i], new[i], path + [i], elementwise)
    if len(new) < len(old):
        elementwise.append([REMOVE, path + [len(new)]])
    elif len(new) > len(old):
        elementwise.append([SLIDE, path, 0, new[len(old) :]])
    choices.append(elementwise)
    return min(choices, key=_size)


# -- apply --------------------------------------------------------------------------


def _copy(value, copied: dict):
    """A shallow copy of a container not yet copied by this apply (the copies are kept in
    `copied`, by id, alive until the apply ends: no other object can take their id)."""
    if id(value) in copied:
        return value
    fresh = dict(value) if isinstance(value, dict) else list(value)
    copied[id(fresh)] = fresh
    return fresh


def _index(container: list, step, path, allow_end: bool) -> int:
    if type(step) is not int or step < 0 or step > len(container) - (0 if allow_end else 1):
        raise DeltaError(f"index {step!r} out of range at {_show(path)}")
    return step


def _show(path) -> str:
    text = json.dumps(path)
    return text if len(text) <= 120 else text[:117] + "..."


def apply(doc, ops) -> object:
    """`doc` with `ops` applied (see the module doc); `doc` itself is left as it was."""
    if not isinstance(ops, list):
        raise DeltaError("a delta must be a list of ops")
    copied: dict = {}
    for op in ops:
        doc = _apply_one(doc, op, copied)
    return doc


def _apply_one(doc, op, copied: dict):
    if not isinstance(op, list) or not op or op[0] not in (SET, KEYS, REMOVE, SLIDE):
        raise DeltaError(f"not an op: {_show(op)}")
    kind = op[0]
    if len(op) != {SET: 3, KEYS: 3, REMOVE: 2, SLIDE: 4}[kind] or not isinstance(op[1], list):
        raise DeltaError(f"malformed {kind!r} op: {_show(op)}")
    path = op[1]
    if not path and kind == SET:
        return op[2]
    if not path and kind == REMOVE:
        raise DeltaError("cannot remove the whole document")
    if not isinstance(doc, (dict, list)):
        raise DeltaError(f"no such place {_show(path[:1])}")
    root = node = _copy(doc, copied)
    # walk to the array (a slide) or to the container of the last step (set, remove),
    # copying each container on the way (once per apply)
    walk = path if kind in (SLIDE, KEYS) else path[:-1]
    for depth, step in enumerate(walk):
        here = path[: depth + 1]
        if isinstance(node, dict):
            if not isinstance(step, str) or step not in node:
                raise DeltaError(f"no such place {_show(here)}")
        else:
            step = _index(node, step, here, allow_end=False)
        child = node[step]
        if not isinstance(child, (dict, list)):
            if kind in (SLIDE, KEYS) and depth == len(walk) - 1:
                what = "an array" if kind == SLIDE else "an object"
                raise DeltaError(f"{_show(path)} is not {what}")
            raise DeltaError(f"no such place {_show(path[: depth + 2])}")
        node[step] = node = _copy(child, copied)
    if kind == KEYS:
        if not isinstance(node, dict):
            raise DeltaError(f"{_show(path)} is not an object")
        if not isinstance(op[2], dict):
            raise DeltaError(f"malformed '+' op at {_show(path)}")
        node.update(op[2])
        return root
    if kind == SLIDE:
        n, values = op[2], op[3]
        if not isinstance(node, list):
            raise DeltaError(f"{_show(path)} is not an array")
        if not isinstance(values, list):
            raise DeltaError(f"malformed slide at {_show(path)}")
        if type(n) is not int or not 0 <= n <= len(node):
            raise DeltaError(f"slide by {n!r} out of range at {_show(path)}")
        del node[:n]
        node.extend(values)
        return root
    last = path[-1]
    if isinstance(node, dict):
        if not isinstance(last, str):
            raise DeltaError(f"an object key must be a string at {_show(path)}")
        if kind == SET:
            node[last] = op[2]
        elif last in node:
            del node[last]
        else:
            raise DeltaError(f"no such key {_show(path)}")
        return root
    i = _index(node, last, path, allow_end=True)
    if kind == REMOVE:
        del node[i:]
    elif i == len(node):
        node.append(op[2])
    else:
        node[i] = op[2]
    return root
