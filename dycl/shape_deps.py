"""Which names may have a shape that depends on tensor values, not on the input shapes alone.

A shape decision that went one way on every run is folded only when the input shapes cannot change
(no dynamic dim) and the shapes it reads follow from them. `h[mask]`, `nonzero()` or `x[:n]` with `n`
from `.item()` give shapes that other input *values* change: a test on them must stay a run-time
decision. Each region is run once on fake tensors (torch's FakeTensorMode, without a shape
environment) at its example's shapes: where it needs a value to know a shape, or takes a name that
is already value-shaped, its outputs are value-shaped, and so is every host name computed from one.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from rewrite.build import reads_writes
from rewrite.cfg import HostStmt, Loop, RegionCall, host_nodes

from .runtime.spec import unflatten

__all__ = ["value_shaped_names", "shapes_follow_shapes", "names_in"]


def value_shaped_names(program, exploration, regions_module, model) -> set[str]:
    """The names (region outputs, host variables) whose shapes other input values may change."""
    static_regions = {r.name: shapes_follow_shapes(r, exploration.records.get(r.name), regions_module, model)
                      for r in program.regions}
    nodes = list(host_nodes(program.body))
    tainted: set[str] = set()
    while True:  # to a fixpoint: loops carry names around
        before = len(tainted)
        for node in nodes:
            if isinstance(node, RegionCall):
                region = node.region
                if not static_regions[region.name] or tainted & set(region.inputs):
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


def shapes_follow_shapes(region, record, regions_module, model) -> bool:
    """True when the region's output shapes follow from its input shapes (a fake run needs no value)."""
    if record is None or not record.examples or record.in_specs is None:
        return False
    example = next(iter(record.examples.values()))
    fn = getattr(regions_module, region.name)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            leaves = iter([mode.from_tensor(t) for t in example])
            nested = [unflatten(s, leaves, scalars_as_arrays=True) for s in record.in_specs]
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
