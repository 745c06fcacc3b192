"""Which names may have a shape that depends on tensor values, not on the input shapes alone.

A shape decision that went one way on every run is folded only when the input shapes cannot change
(no dynamic dim) and the shapes it reads follow from them. `h[mask]`, `nonzero()` or `x[:n]` with `n`
from `.item()` give shapes that other input *values* change: a test on them must stay a run-time
decision. Each region is run once on fake tensors (torch's FakeTensorMode, without a shape
environment) at its example's shapes: where it needs a value to know a shape, or takes a name that
is already value-shaped, its outputs are value-shaped, and so is every host name computed from one.
A Python number the host passes in that it only ever reads from a shape (`_, _, h, w = x.size()`,
then `F.interpolate(..., size=(h, w))` in a region), of a name no value-shaped name feeds, follows
from the input shapes: the fake run takes it as the number it was. Any other number (`n =
k.item()`) stays a fake value, which a shape cannot be read from.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from rewrite.syntax import reads_writes
from rewrite.cfg import HostStmt, If, Loop, RegionCall

from .runtime.spec import count_leaves, unflatten

__all__ = ["value_shaped_names", "shapes_follow_shapes", "names_in"]


def value_shaped_names(program, exploration, regions_module, model, folded: dict[str, bool] | None = None) -> set[str]:
    """The names (region outputs, host variables) whose shapes other input values may change.

    `folded`: decisions (by id) taken as folded to the arm given: the other arm is no code. (No run
    reached it, so its regions have no example to run on fake tensors.)"""
    static_regions: dict[str, bool] = {}
    nodes = list(_code(program.body, folded or {}))
    shape_numbers = _shape_numbers(nodes)
    tainted: set[str] = set()
    while True:  # to a fixpoint: loops carry names around
        before = len(tainted)
        for node in nodes:
            if isinstance(node, RegionCall):
                region = node.region
                if tainted & set(region.inputs):
                    tainted.update(region.outputs)
                    continue
                if region.name not in static_regions:  # its numbers from the host are shape-determined
                    numbers = [n in shape_numbers for n in region.inputs]
                    static_regions[region.name] = shapes_follow_shapes(
                        region, exploration.records.get(region.name), regions_module, model, numbers)
                if not static_regions[region.name]:
                    tainted.update(region.outputs)
            elif isinstance(node, HostStmt):
                reads, writes = reads_writes(node.node)
                if tainted & set(reads):
                    tainted.update(writes)
            elif isinstance(node, Loop) and node.target is not None and node.iter is not None:
                if tainted & names_in(node.iter):  # `for i in range(len(sel))`
                    tainted.update(names_in(node.target))
        if len(tainted) == before:
            return tainted


def _code(nodes: list, folded: dict[str, bool]):
    """`host_nodes`, but only the arm a folded decision takes."""
    for node in nodes:
        if isinstance(node, If) and node.decision in folded:
            yield from _code(node.body if folded[node.decision] else node.orelse, folded)
            continue
        yield node
        if isinstance(node, If):
            yield from _code(node.body, folded)
            yield from _code(node.orelse, folded)
        elif isinstance(node, Loop):
            yield from _code(node.body, folded)


def _shape_numbers(nodes: list) -> set[str]:
    """Host names that every definition reads from a shape: `h = x.shape[2]`, `_, _, h, w = x.shape`."""
    import libcst as cst

    candidates: set[str] = set()
    other: set[str] = set()
    for node in nodes:
        if isinstance(node, HostStmt):
            writes = reads_writes(node.node)[1]
            value = node.node.value if isinstance(node.node, cst.Assign) else None
            while isinstance(value, cst.Subscript):
                value = value.value
            shape = isinstance(value, cst.Attribute) and value.attr.value == "shape" and isinstance(value.value, cst.Name)
            (candidates if shape else other).update(writes)
        elif isinstance(node, RegionCall):
            other.update(node.region.outputs)
        elif isinstance(node, Loop) and node.target is not None:
            other |= names_in(node.target)
    return candidates - other


def shapes_follow_shapes(region, record, regions_module, model, numbers: list[bool] | None = None) -> bool:
    """True when the region's output shapes follow from its input shapes and the Python numbers it
    takes where `numbers` says so (a fake run needs no other value)."""
    if record is None or not record.examples or record.in_specs is None:
        return False
    numbers = numbers or [False] * len(record.in_specs)
    example = next(iter(record.examples.values()))
    fn = getattr(regions_module, region.name)
    parts, start = [], 0
    for spec, number in zip(record.in_specs, numbers, strict=True):
        leaves = list(example[start:start + count_leaves(spec)])
        start += len(leaves)
        parts.append((spec, leaves, leaves[0].item() if number and spec["t"] == "scalar" else None))  # not faked
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            nested = [value if value is not None
                      else unflatten(spec, iter([mode.from_tensor(t) for t in leaves]), scalars_as_arrays=True)
                      for spec, leaves, value in parts]
            with torch.no_grad():
                fn(model, *nested)
    except Exception:  # a data-dependent shape or value (DynamicOutputShapeException, ...), or anything else
        return False
    return True


def names_in(node) -> set[str]:
    """The names `node` reads."""
    import libcst as cst

    from rewrite.walk import find

    return {n.value for n in find(node, cst.Name)}
