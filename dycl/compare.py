"""Comparing the rewritten program's results with the original model's.

`to_numpy` gives torch values as the host sees them; `compare` the max error between two such
values, raising `RewriteMismatch` where they differ in structure, dtype or exact values.
"""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["RewriteMismatch", "compare", "to_numpy"]


class RewriteMismatch(Exception):
    """The rewritten program disagrees with the original model."""


def to_numpy(value):
    """Torch values as the host sees them: arrays, scalars, containers."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, tuple):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, list):
        return [to_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    return value


def compare(expected, actual, where: str) -> float:
    """Max error between two host-shaped values, absolute where |expected| <= 1 and relative to it above
    (float32 keeps 7 digits: 1e8 computed two ways differs by units); raises RewriteMismatch on structural
    differences."""
    if isinstance(expected, np.ndarray) or isinstance(actual, np.ndarray):
        e, a = np.asarray(expected), np.asarray(actual)
        if e.shape != a.shape or e.dtype != a.dtype:
            raise RewriteMismatch(f"{where}: expected {e.dtype}{list(e.shape)}, got {a.dtype}{list(a.shape)}")
        if e.size == 0:
            return 0.0
        if e.dtype.kind in "fc":
            wide = np.complex128 if e.dtype.kind == "c" else np.float64
            e, a = e.astype(wide), a.astype(wide)
            if not np.array_equal(np.isnan(e), np.isnan(a)):  # NaN - x is NaN, which no tolerance test catches
                raise RewriteMismatch(f"{where}: NaN at different positions")
            same = (e == a) | np.isnan(e)  # equal infinities too: inf - inf is NaN
            e, a = np.where(same, 0, e), np.where(same, 0, a)
            scale = np.abs(e)
            scale = np.where(np.isfinite(scale) & (scale > 1), scale, 1)  # an infinity expected: absolute (inf)
            return float(np.max(np.abs(e - a) / scale))
        if not np.array_equal(e, a):
            raise RewriteMismatch(f"{where}: integer/bool values differ")
        return 0.0
    if isinstance(expected, (tuple, list)):
        if type(expected) is not type(actual) or len(expected) != len(actual):
            raise RewriteMismatch(f"{where}: expected a {type(expected).__name__} of {len(expected)}, got {_describe(actual)}")
        return max([compare(e, a, f"{where}[{i}]") for i, (e, a) in enumerate(zip(expected, actual))], default=0.0)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or list(expected) != list(actual):
            raise RewriteMismatch(f"{where}: expected dict keys {list(expected)}, got {_describe(actual)}")
        return max([compare(expected[k], actual[k], f"{where}[{k!r}]") for k in expected], default=0.0)
    if isinstance(expected, float) and isinstance(actual, (float, int)):
        return compare(np.array(expected, np.float64), np.array(actual, np.float64), where)
    if type(expected) is not type(actual) or expected != actual:
        raise RewriteMismatch(f"{where}: expected {expected!r}, got {actual!r}")
    return 0.0


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__
