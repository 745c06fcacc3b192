"""Check a package against the original model: max error δ, decision inconsistency η, paths."""
from __future__ import annotations

import numpy as np
import torch

from .compare import RewriteMismatch, compare, to_numpy
from .runtime import load

__all__ = ["CheckResult", "check_package", "decisions_of", "decides_differently"]


class CheckResult:
    __slots__ = ("samples", "delta", "eta", "paths", "failure", "tolerance")

    def __init__(self, samples: int, delta: float, eta: int, paths: int, failure: str, tolerance: float):
        self.samples, self.delta, self.eta, self.paths = samples, delta, eta, paths
        self.failure, self.tolerance = failure, tolerance

    @property
    def passed(self) -> bool:
        return not self.failure

    def as_dict(self) -> dict:
        return {"samples": self.samples, "delta": self.delta, "eta": self.eta, "paths": self.paths,
                "passed": self.passed, "failure": self.failure, "tolerance": self.tolerance}


def decisions_of(value) -> list:
    """The discrete outcome of an output: argmax of float arrays, exact integers and scalars."""
    if isinstance(value, np.ndarray):
        if value.size == 0:  # nothing to decide; the shape is compared with the values
            return [list(value.shape)]
        if value.dtype.kind == "f":
            return [value.reshape(-1, value.shape[-1]).argmax(-1).tolist() if value.ndim else None]
        return [value.tolist()]
    if isinstance(value, (tuple, list)):
        return [d for v in value for d in decisions_of(v)]
    if isinstance(value, dict):
        return [d for v in value.values() for d in decisions_of(v)]
    return [value if not isinstance(value, float) else None]


def decides_differently(expected, got, tolerance: float) -> bool:
    """Whether `got` takes other discrete outcomes than `expected` (`decisions_of`), where a float array's
    argmax (per row of its last axis) only differs when the original's values at the two picks are further
    apart than δ lets each of them move (2 × `tolerance`, absolute up to 1 and relative above, as δ is):
    a near-tie such as tanh's 0.9999999 against 1.0 is no decision the original model takes either."""
    if isinstance(expected, np.ndarray) and isinstance(got, np.ndarray) and expected.dtype.kind == "f" \
            and expected.ndim and expected.size and expected.shape == got.shape:
        e = expected.reshape(-1, expected.shape[-1]).astype(np.float64)
        picks, got_picks = e.argmax(-1), got.reshape(-1, got.shape[-1]).argmax(-1)
        rows = np.nonzero(picks != got_picks)[0]
        top, other = e[rows, picks[rows]], e[rows, got_picks[rows]]
        scale = np.where(np.isfinite(top) & (np.abs(top) > 1), np.abs(top), 1)
        return not np.all((top - other) / scale <= 2 * tolerance)  # a NaN gap differs
    if isinstance(expected, (tuple, list)) and type(got) is type(expected) and len(got) == len(expected):
        return any(decides_differently(e, g, tolerance) for e, g in zip(expected, got))
    if isinstance(expected, dict) and isinstance(got, dict) and list(got) == list(expected):
        return any(decides_differently(expected[k], got[k], tolerance) for k in expected)
    return decisions_of(expected) != decisions_of(got)


def _edge_failure(package, spec, edges: list[tuple[str, tuple]], tolerance: float) -> str:
    """Run the package at the edge sizes of the dynamic dims; the first disagreement with the model."""
    for label, inputs in edges:
        try:
            with torch.no_grad():
                expected = to_numpy(spec.model(*inputs))
        except Exception:  # the model refuses this size; a backend may abort on it (a GRU over 0 steps)
            continue
        try:
            got = package(*[to_numpy(v) for v in inputs])
            err = compare(expected, got, label)
        except Exception as exc:
            return f"at {label}: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}"
        if err > tolerance:
            return f"at {label}: max error δ = {err:.3g} exceeds {tolerance:g}"
        if decides_differently(expected, got, tolerance):
            return f"at {label}: the package decides differently from the original model"
    return ""


def check_package(path: str, spec, exploration, n: int, seed: int = 0, tolerance: float = 1e-4,
                  edges: list[tuple[str, tuple]] = (), progress=None) -> CheckResult:
    """Compare the package with the model on `n` samples and on `edges` ((label, inputs) at the
    smallest, a middle and a large size of each dynamic dim). `progress(done, total)` hears of each
    sample before it runs."""
    package = load(path)
    inputs = spec.sample_inputs(max(n, 1), seed=seed) if n else [spec.inputs]
    delta, eta, failure = 0.0, 0, ""
    # Exploration ran the original model on the example and then these very samples.
    known = [] if exploration is None else exploration.expected[1:1 + len(inputs)] if n else exploration.expected[:1]
    for k, inp in enumerate(inputs):
        if progress:
            progress(k, len(inputs))
        if k < len(known):
            expected = known[k]
        else:
            with torch.no_grad():
                expected = to_numpy(spec.model(*inp))
        got = package(*[to_numpy(v) for v in inp])
        try:
            err = compare(expected, got, f"sample {k}")
        except RewriteMismatch as exc:
            failure = failure or f"output mismatch: {exc}"
            eta += 1
            continue
        delta = max(delta, err)
        if decides_differently(expected, got, tolerance):
            eta += 1
    paths = len(set(exploration.paths[1:])) if len(exploration.paths) > 1 else len(set(exploration.paths))
    if not failure and delta > tolerance:
        failure = f"max error δ = {delta:.3g} exceeds {tolerance:g}"
    if not failure and edges:
        failure = _edge_failure(package, spec, edges, tolerance)
    if not failure and eta:
        failure = f"η = {eta}: {eta} of {len(inputs)} samples decide differently from the original model"
    return CheckResult(len(inputs), delta, eta, paths, failure, tolerance)
