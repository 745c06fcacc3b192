"""Tracer warnings raised while a region is exported: which froze a run-time value into the graph.

The TorchScript exporter warns whenever Python sees a value the trace cannot
follow. Most of these freeze a run-time value and make the region wrong on
other inputs, so they are errors. One is not, when the code says so:
`torch.tensor(data)` warns that its result is "registered as a constant",
which is exactly right when `data` is a literal (`torch.tensor([0])`) and
wrong when it is a tensor or a shape. Each such warning is traced to its line
in the generated region function and excused only where that statement has as
many `torch.tensor` calls with literal data as there were warnings.

The warnings must be recorded, not turned into errors by a filter: torch
raises them from C++, and an exception thrown there surfaces as
"SystemError: <built-in method __instancecheck__ ...> returned a result with
an exception set" instead of the warning.
"""
from __future__ import annotations

import collections
import inspect

import libcst as cst
import torch
from libcst.metadata import MetadataWrapper, PositionProvider

from rewrite.walk import find

__all__ = ["frozen_values"]

_CONSTANT = "torch.tensor results are registered as constants"


def frozen_values(caught: list, fn) -> list:
    """The tracer warnings in `caught` (from `warnings.catch_warnings(record=True)`) that freeze a
    run-time value into the graph traced from region function `fn`."""
    tracer = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    constants = collections.Counter((w.filename, w.lineno) for w in tracer if str(w.message).startswith(_CONSTANT))
    literal = _literal_tensor_calls(fn, constants)
    return [w for w in tracer if not (str(w.message).startswith(_CONSTANT)
                                      and constants[(w.filename, w.lineno)] <= literal.get((w.filename, w.lineno), 0))]


def _literal_tensor_calls(fn, lines: collections.Counter) -> dict[tuple[str, int], int]:
    """For each (file, line) of `lines` inside `fn`'s source: how many `torch.tensor` calls with literal
    data the statement on that line makes; 0 where any of its `torch.tensor` calls has other data."""
    try:
        filename = inspect.getsourcefile(fn)
        source, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return {}
    wanted = {line for (file, line) in lines if file == filename}
    if not wanted:
        return {}
    wrapper = MetadataWrapper(cst.parse_module("".join(source)))
    positions = wrapper.resolve(PositionProvider)
    counts: dict[tuple[str, int], int] = {}
    for stmt in find(wrapper.module, cst.BaseSmallStatement):
        where = positions[stmt]
        span = range(where.start.line + first - 1, where.end.line + first)
        for line in wanted.intersection(span):
            calls = [c for c in find(stmt, cst.Call) if _resolve(c.func, fn.__globals__) is torch.tensor]
            counts[(filename, line)] = len(calls) if all(_literal_data(c) for c in calls) else 0
    return counts


def _resolve(func: cst.BaseExpression, globals_: dict):
    """The object a callee names through the module's globals (`torch.tensor`), or None."""
    if isinstance(func, cst.Name):
        return globals_.get(func.value)
    if isinstance(func, cst.Attribute):
        owner = _resolve(func.value, globals_)
        return getattr(owner, func.attr.value, None) if owner is not None else None
    return None


def _literal_data(call: cst.Call) -> bool:
    data = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "data"), None)
    return data is not None and _literal(data)


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, (cst.Minus, cst.Plus)) and _literal(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _literal(e.value) for e in node.elements)
    return False
