"""The sizes of a model's dynamic symbols: read from an input tuple, fixed for a one-size package, and
varied to make the inputs exploration and the final check run at other sizes."""
from __future__ import annotations

from .modelfile import resized_inputs

__all__ = ["symbol_sizes", "fix_sizes", "resized_variants", "edge_inputs"]


def fix_sizes(spec, sizes: dict[str, int]) -> None:
    """Make `spec` static at the given sizes of its dynamic symbols (a one-size package)."""
    params, dynamic = spec.params, spec.dynamic

    def resize(inputs: tuple) -> tuple:
        for symbol, size in sizes.items():
            inputs = resized_inputs(inputs, params, dynamic, symbol, size)
        return inputs

    samples = spec.samples
    spec.inputs = resize(spec.inputs)
    spec.samples = None if samples is None else (lambda n, seed=0: [resize(tuple(s)) for s in samples(n, seed=seed)])
    spec.dynamic = {}


def symbol_sizes(spec, inputs: tuple) -> dict[str, int]:
    """The declared dynamic symbols' sizes in one input tuple."""
    sizes = {}
    for name, value in zip(spec.params, inputs):
        for axis, symbol in spec.dynamic.get(name, {}).items():
            sizes[symbol] = value.shape[axis]
    return sizes


def resized_variants(spec) -> list[tuple]:
    """Inputs at other sizes of the declared dynamic dims.

    Each symbol alone at its edges (0, 1, 2), a smaller, a slightly larger and
    a much larger size (so shape-determined branches such as `if x.shape[-1] >
    48:` go both ways and a region reached only at small sizes still sees its
    dims vary), then all symbols together at two larger sizes, so that regions
    behind a shape-determined branch also see every dim vary. Sizes the model
    itself refuses are skipped by exploration.
    """
    params = spec.params
    sizes = symbol_sizes(spec, spec.inputs)
    variants = []
    for symbol, size in sorted(sizes.items()):
        for new in sorted({0, 1, 2, size // 2 + 1, size + 1, 2 * size + 1} - {size}):
            variants.append(resized_inputs(spec.inputs, params, spec.dynamic, symbol, new))
    for extra in (1, 3):
        joint = spec.inputs
        for symbol, size in sorted(sizes.items()):
            joint = resized_inputs(joint, params, spec.dynamic, symbol, 2 * size + extra)
        if sizes:
            variants.append(joint)
    return variants


def edge_inputs(spec) -> list[tuple[str, tuple]]:
    """The example at the smallest sizes (0, 1, 2), its own and a large size of each dynamic symbol."""
    edges = []
    for symbol, size in sorted(symbol_sizes(spec, spec.inputs).items()):
        for new in (0, 1, 2, size, 2 * size + 3):
            edges.append((f"{symbol}={new}", resized_inputs(spec.inputs, spec.params, spec.dynamic, symbol, new)))
    return edges
