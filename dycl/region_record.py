"""What exploration saw of one region: its input and output structure, example inputs per
signature, the paths that reached it and the sizes it ran at (`RegionRecord`).
"""
from __future__ import annotations

import torch

__all__ = ["RegionRecord"]


class RegionRecord:
    """What exploration saw of one region."""

    __slots__ = ("name", "in_specs", "out_specs", "examples", "variants", "calls", "passthrough", "observations",
                 "reached_by", "out_shapes")

    def __init__(self, name: str):
        self.name = name
        self.in_specs: list | None = None
        self.out_specs: list | None = None
        self.examples: dict[tuple, list[torch.Tensor]] = {}  # signature -> flat inputs
        # signature -> other flat inputs of that signature, with other values: a compiled region that
        # froze a run-time value into its graph is right on one of the two at most
        self.variants: dict[tuple, list[torch.Tensor]] = {}
        self.calls = 0
        self.passthrough: dict[int, int] = {}  # output leaf -> input leaf
        self.observations: set[tuple] = set()  # (signature, declared symbols' sizes in that run)
        self.reached_by: list[tuple] = []  # the first few distinct paths (decisions taken) that led to a call
        self.out_shapes: set[tuple] = set()  # the shapes of the output leaves, per call

    def trace_example(self) -> list:
        """The example to export at: the first without a zero-size dim where there is one (a trace at
        0 rows folds shapes: the exporter gives `h.sum()` of a [0, 4] input the shape [1, 1])."""
        examples = list(self.examples.values())
        return next((e for e in examples if all(t.numel() or t.dim() == 0 for t in e)), examples[0])

    def one_size(self) -> dict[str, int]:
        """The declared symbols every call of this region saw at the same size, with that size."""
        sizes: dict[str, set] = {}
        for _, symbols in self.observations:
            for symbol, size in symbols:
                sizes.setdefault(symbol, set()).add(size)
        return {s: next(iter(v)) for s, v in sorted(sizes.items()) if len(v) == 1}

    def dims(self) -> list[list]:
        """Per input leaf, each dim's size, or None where it varied."""
        return _dims([[shape for shape, _ in sig] for sig in self.examples])

    def out_dims(self) -> list[list]:
        """Per output leaf, each dim's size, or None where it varied."""
        return _dims(list(self.out_shapes))

    def __repr__(self) -> str:
        return f"RegionRecord({self.name}, {self.calls} calls, {len(self.examples)} signatures)"


def _dims(calls: list) -> list[list]:
    """Per leaf of `calls` (each a list of leaf shapes), each dim's size, or None where it varied."""
    dims = []
    for leaf in range(len(calls[0]) if calls else 0):
        shapes = [c[leaf] for c in calls]
        dims.append([shapes[0][a] if all(len(sh) == len(shapes[0]) and sh[a] == shapes[0][a] for sh in shapes)
                     else None for a in range(len(shapes[0]))])
    return dims
