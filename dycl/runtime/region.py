"""A compiled region as the host calls it: nested values in, nested values out."""
from __future__ import annotations

import numpy as np

from .signature import GRAPH, RegionSignature
from .spec import LengthMismatch, flatten, unflatten

__all__ = ["RegionCallable", "RegionError"]


class RegionError(RuntimeError):
    """A backend failed while running a region; names the region and its source lines."""


class RegionCallable:
    __slots__ = ("name", "origin", "fn", "inputs", "in_specs", "out_specs", "sources", "single", "feeds", "_fast",
                 "_casts", "_scalars_out", "__weakref__")

    def __init__(self, signature: RegionSignature, fn):
        self.name = signature.name
        self.origin = signature.origin
        self.fn = fn
        self.inputs = [p.name for p in signature.inputs]
        self.in_specs = [p.spec for p in signature.inputs]
        self.out_specs = [p.spec for p in signature.outputs]
        # Each output leaf comes from the graph ("graph", k) or is an input passed through ("input", k).
        self.sources = [(leaf.source, leaf.index) for leaf in signature.output_leaves]
        self.single = len(self.out_specs) == 1
        self.feeds = list(signature.graph_inputs)

        # Arrays or Python scalars in and out, each leaf a graph port: no flattening on the hot path.
        # _casts: per input, the dtype a Python scalar becomes (None: any other); None where all are arrays.
        self._fast = fn is not None and all(sp["t"] in ("array", "scalar") for sp in self.in_specs + self.out_specs) \
            and self.feeds == list(range(len(self.in_specs))) \
            and self.sources == [(GRAPH, k) for k in range(len(self.out_specs))]
        casts = [np.dtype(sp["dtype"]) if sp["t"] == "scalar" else None for sp in self.in_specs] if self._fast else []
        self._casts = casts if any(dt is not None for dt in casts) else None
        self._scalars_out = tuple(k for k, sp in enumerate(self.out_specs) if sp["t"] == "scalar")

    def __call__(self, *args):
        if self._fast:
            if self._casts is not None:
                args = [a if dt is None else np.asarray(a, dtype=dt) for a, dt in zip(args, self._casts)]
            try:
                results = self.fn(args)
            except Exception as exc:
                raise RegionError(f"while executing region {self.name} ({self.origin}): {exc}") from exc
            for k in self._scalars_out:
                results[k] = results[k].item()
            return results[0] if self.single else tuple(results)
        flat: list = []
        for k, (value, spec) in enumerate(zip(args, self.in_specs)):
            if spec["t"] == "array":
                flat.append(value)
                continue
            try:
                flatten(value, spec, flat)
            except LengthMismatch as exc:
                raise RegionError(f"region {self.name} ({self.origin}): its input {self.inputs[k]!r} is {exc}: the "
                                  "package was converted for the lengths the example and sample inputs gave (keep "
                                  "such values in tensors, `x[idx]` rather than `x[idx.tolist()]`)") from None
        try:
            results = self.fn([flat[i] for i in self.feeds]) if self.fn is not None else ()
        except Exception as exc:
            raise RegionError(f"while executing region {self.name} ({self.origin}): {exc}") from exc
        leaves = iter([results[k] if src == GRAPH else flat[k] for src, k in self.sources])
        outs = [unflatten(spec, leaves) for spec in self.out_specs]
        return outs[0] if self.single else tuple(outs)

    def __repr__(self) -> str:
        return f"<region {self.name} ({self.origin})>"
