"""rewrite: from a model's `forward` to a host tree of decisions and compiled regions."""
from __future__ import annotations

import libcst as cst
import torch
from torch import nn

from .build import Builder
from .cfg import HostStmt, If, Program, Region, RegionCall, host_nodes
from .classify import CONTAINER, SCALAR, TENSOR, Kinds
from .kinds import ValueKind
from .diagnostics import ConversionError, Diagnostic
from .liveness import assign_region_signatures
from .names import Namespace
from .partial_eval import PartialEvaluator
from .source import function_source
from .walk import find
from .merge import merge_across_host, tail_merge
from .verify import verify

__all__ = ["rewrite_model", "Program", "Region", "RegionCall", "HostStmt", "If", "ConversionError", "Diagnostic"]


def _kind_of(value) -> ValueKind:
    if isinstance(value, torch.Tensor):
        return TENSOR
    if isinstance(value, (tuple, list, dict)):
        return CONTAINER
    return SCALAR


def _all_names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in find(node, cst.Name)}


def rewrite_model(model: nn.Module, example_inputs: tuple, fixed: dict[str, bool] | None = None) -> Program:
    """Split `model.forward` into host control flow and branch-free regions.

    `fixed` decides shape-determined decisions (by id) that cannot change
    because the input shapes are static. Raises ConversionError with every
    unsupported construct found.
    """
    src = function_source(type(model).forward)
    if src is None:
        raise TypeError(f"cannot read the source of {type(model).__qualname__}.forward: dycl rewrites forward's "
                        "Python source, so the model class must be defined in a .py file")
    names = Namespace(_all_names(src.node))
    evaluator = PartialEvaluator(model, names)
    forward_params = [p.name.value for p in src.node.params.params][1:]
    evaluator.tensor_inputs = {p: p for p, v in zip(forward_params, example_inputs) if isinstance(v, torch.Tensor)}
    params, lowered, origin = evaluator.lower_forward(len(example_inputs))
    if evaluator.diagnostics:
        raise ConversionError(evaluator.diagnostics)
    if len(example_inputs) != len(params):
        raise TypeError(f"forward takes {len(params)} inputs ({', '.join(params)}) but {len(example_inputs)} were given")
    host_shapes: set[str] = set()
    taken = names.checkpoint()
    while True:  # again, with shapes the host reads where a region would return them as numbers
        names.rollback(taken)
        kinds = Kinds({p: _kind_of(v) for p, v in zip(params, example_inputs)})
        # A Python scalar or container input is a run-time value like a tensor's: `if k > 2:` is never folded.
        kinds.value_derived.update(p for p in params if kinds.get(p) != TENSOR)
        builder = Builder(kinds, names, fixed, host_shapes)
        body = builder.build(lowered, kinds)
        body = merge_across_host(tail_merge(body, builder.new_region))
        variables = set(params) | kinds.seen
        body = assign_region_signatures(body, params, variables)
        regions = _regions_in(body)
        returned = {name for r in regions for name in r.outputs} & builder.region_shapes
        if not returned:
            break
        host_shapes |= returned
    decisions = [d for d in builder.decisions if _contains(body, d)]
    loops = [lp for lp in builder.loops if _contains(body, lp)]
    program = Program(type(model).__qualname__, params, body, regions, decisions, origin,
                   evaluator.static_decisions + len(fixed or {}),
                   evaluator.globals)
    program.loops = loops
    program.defaults = evaluator.defaults
    verify(program)
    return program


def _regions_in(body) -> list[Region]:
    return [n.region for n in host_nodes(body) if isinstance(n, RegionCall)]


def _contains(body, decision) -> bool:
    return any(n is decision for n in host_nodes(body))
