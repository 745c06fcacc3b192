"""Nested values as flat lists of arrays, described by a JSON-able spec.

A region's inputs and outputs may be tensors, Python scalars, or tuples,
lists and dicts of them; compiled graphs take flat lists of arrays.
"""
from __future__ import annotations

import numpy as np

__all__ = ["describe", "flatten", "unflatten", "count_leaves", "LengthMismatch"]

_SCALAR_DTYPES = {bool: "bool", int: "int64", float: "float32"}


class LengthMismatch(ValueError):
    """A tuple or list with another number of items than its spec: a graph takes one input per item."""


def describe(value, is_array) -> dict:
    """The spec of `value`; `is_array(v)` tells tensors/arrays apart."""
    if is_array(value):
        return {"t": "array"}
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.ndarray):
        return {"t": "scalar", "dtype": _SCALAR_DTYPES[type(value)] if type(value) in _SCALAR_DTYPES else "float32"}
    if isinstance(value, tuple):
        return {"t": "tuple", "items": [describe(v, is_array) for v in value]}
    if isinstance(value, list):
        return {"t": "list", "items": [describe(v, is_array) for v in value]}
    if isinstance(value, dict):
        return {"t": "dict", "keys": list(value), "items": [describe(v, is_array) for v in value.values()]}
    if value is None:
        return {"t": "none"}
    raise TypeError(f"cannot pass a {type(value).__name__} to a compiled region")


def flatten(value, spec: dict, out: list) -> None:
    """Append the leaves of `value` (following `spec`) to `out` as arrays."""
    t = spec["t"]
    if t == "array":
        out.append(value)
    elif t == "scalar":
        out.append(np.asarray(value, dtype=spec["dtype"]))
    elif t in ("tuple", "list"):
        if len(value) != len(spec["items"]):  # never truncated or padded
            raise LengthMismatch(f"a {t} of {len(value)} items where the compiled graph takes {len(spec['items'])}")
        for v, s in zip(value, spec["items"]):
            flatten(v, s, out)
    elif t == "dict":
        for k, s in zip(spec["keys"], spec["items"]):
            flatten(value[k], s, out)


def unflatten(spec: dict, leaves, scalars_as_arrays: bool = False) -> object:
    """Rebuild a value from an iterator over its leaves."""
    t = spec["t"]
    if t == "array":
        return next(leaves)
    if t == "scalar":
        leaf = next(leaves)
        return leaf if scalars_as_arrays else leaf.item()
    if t == "tuple":
        return tuple(unflatten(s, leaves, scalars_as_arrays) for s in spec["items"])
    if t == "list":
        return [unflatten(s, leaves, scalars_as_arrays) for s in spec["items"]]
    if t == "dict":
        return {k: unflatten(s, leaves, scalars_as_arrays) for k, s in zip(spec["keys"], spec["items"])}
    return None


def count_leaves(spec: dict) -> int:
    t = spec["t"]
    if t in ("array", "scalar"):
        return 1
    if t in ("tuple", "list", "dict"):
        return sum(count_leaves(s) for s in spec["items"])
    return 0
