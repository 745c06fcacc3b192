"""`torch.roll` by a run-time shift, spelt so that tracing keeps the shift an input of the graph.

The exporter writes torch.roll's shifts into the graph as constants, so a
shift computed from a tensor (`torch.roll(x, int(k), 1)`) would be frozen at
the value seen at export. Rolling by `s` along `d` is gathering index
`(i - s) mod n`: as an `index_select` over an `arange` of the dim, the shift
stays data. Rolls by literal shifts (the common case, folded from the
model's configuration) are left as they are.
"""
from __future__ import annotations

import libcst as cst

__all__ = ["dynamic_roll"]


def _literal(node) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_literal(e.value) for e in node.elements)
    return isinstance(node, cst.Integer)


def _simple(node) -> bool:
    """Cheap to read more than once: a name or an attribute of one."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func, [cst.Arg(a) for a in args])


def _arguments(call: cst.Call, method: bool):
    """(tensor, shifts, dims) of `torch.roll(x, s, d)` / `x.roll(s, d)`, keywords allowed; None if other."""
    names = (["shifts", "dims"] if method else ["input", "shifts", "dims"])
    values: dict[str, cst.BaseExpression] = {}
    for k, arg in enumerate(call.args):
        if arg.star:
            return None
        key = arg.keyword.value if arg.keyword is not None else (names[k] if k < len(names) else None)
        if key not in names:
            return None
        values[key] = arg.value
    tensor = call.func.value if method else values.get("input")
    return tensor, values.get("shifts"), values.get("dims")


def dynamic_roll(call: cst.Call):
    """`call` rewritten as a gather when it rolls by a run-time shift along one dim (or all); else None."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "roll":
        return None
    method = not (isinstance(func.value, cst.Name) and func.value.value == "torch")
    parts = _arguments(call, method)
    if parts is None:
        return None
    tensor, shifts, dims = parts
    if tensor is None or shifts is None or _literal(shifts) or not _simple(tensor):
        return None
    if dims is None:  # over the flattened tensor, then back to its shape
        flat = _call(cst.Attribute(tensor, cst.Name("reshape")), cst.UnaryOperation(cst.Minus(), cst.Integer("1")))
        size = cst.Subscript(cst.Attribute(flat, cst.Name("shape")), [cst.SubscriptElement(cst.Index(cst.Integer("0")))])
        rolled = _gather(flat, cst.Integer("0"), size, shifts)
        return _call(cst.Attribute(rolled, cst.Name("reshape")), cst.Attribute(tensor, cst.Name("shape")))
    if isinstance(dims, (cst.Tuple, cst.List)) or not _literal(dims):
        return None
    size = cst.Subscript(cst.Attribute(tensor, cst.Name("shape")), [cst.SubscriptElement(cst.Index(dims))])
    return _gather(tensor, dims, size, shifts)


def _gather(tensor, dim, size, shifts) -> cst.Call:
    """`tensor.index_select(dim, (torch.arange(size) - shifts) % size)`."""
    if not isinstance(shifts, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer)):
        shifts = shifts.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    arange = _call(cst.Attribute(cst.Name("torch"), cst.Name("arange")), size)
    index = cst.BinaryOperation(
        cst.BinaryOperation(arange, cst.Subtract(), shifts, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
        cst.Modulo(), size)
    return _call(cst.Attribute(tensor, cst.Name("index_select")), dim, index)
