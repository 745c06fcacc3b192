"""`.tolist()` inside code a region computes: the host makes the list, the region reads its items.

`sizes = counts.tolist()` is a host statement already: like `item()`, `.tolist()` is a sync method
(classify.py), the region before it returns `counts` and the host calls numpy's `.tolist()`; a region
that reads `sizes` takes one 0-d input per item (`torch.split(x, sizes)` then splits by run-time sizes).
Written inside an expression a region computes (`torch.split(x, counts.tolist())`), the call would be
traced, and tracing freezes the list into the graph. So each such call is lifted: its tensor is computed
by the region so far, the host makes the list, and the rest of the statement reads it by name.

The same goes for Python arithmetic on host values written inside tensor code (`y * max(sizes)`,
`sizes.count(0)`, `x[sorted(sizes)]`): in a region the items are 0-d tensors, and `max`, `sorted` or
`count` would compare them in Python, which tracing freezes. A call that reads host scalars only, and
computes a value-derived Python value from them, is made by the host before the region runs, and the
region reads its result; so is one that reads a list of Python values the host built by appends
(`picks.append(int(s))`, Kinds.items).

A tensor indexed by such a list (`x[idx.tolist()]`) indexes with the tensor torch makes of it (list_index.py).

Code that runs only sometimes (a conditional expression, `and`/`or`, a lambda, a comprehension) keeps
its calls; the export's trace-freeze check refuses them.
"""
from __future__ import annotations

import libcst as cst

from .classify import SCALAR, TENSOR, Kinds, analyze, host_python_list
from .walk import find

__all__ = ["LiftToList", "has_call", "has_tolist"]

_SOMETIMES = (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _tolist(call: cst.Call, kinds: Kinds) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "tolist" and not call.args \
        and analyze(func.value, kinds).vtype == TENSOR


def has_tolist(node: cst.CSTNode) -> bool:
    """Whether `node` calls a `.tolist()` method anywhere (a quick test before `LiftToList`)."""
    return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "tolist" for c in find(node, cst.Call))


def has_call(node: cst.CSTNode) -> bool:
    return bool(find(node, cst.Call))


def _host_call(call: cst.Call, kinds: Kinds) -> bool:
    """A call computing a Python value from host scalars alone, value-derived ones (`max(sizes)`) or
    lists of Python values the host built (`sorted(picks)` of `picks.append(int(s))`)."""
    info = analyze(call, kinds)
    if info.vtype != SCALAR or not info.host or info.needs_hoist:
        return False
    reads = _Reads()
    call.visit(reads)
    lists = [n for n in reads.found if host_python_list(cst.Name(n), kinds)]
    return bool(reads.found) and (info.value or bool(lists)) \
        and all(kinds.get(n) == SCALAR or n in lists for n in reads.found)


class _Reads(cst.CSTVisitor):
    """The variables a call reads: not its function's name, nor attribute names or keywords."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def visit_Call(self, node: cst.Call) -> bool:
        if not isinstance(node.func, cst.Name):
            node.func.visit(self)
        for arg in node.args:
            arg.value.visit(self)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node.value)


class LiftToList(cst.CSTTransformer):
    """Replace each `t.tolist()` of a tensor (not `whole`, the statement's value itself) by the name
    `lift(call)` binds in the host; with `host_calls`, each `_host_call` too, by `lift_host(call)`'s."""

    def __init__(self, kinds: Kinds, whole, lift, lift_host=None):
        super().__init__()
        self.kinds, self.whole, self.lift, self.lift_host = kinds, whole, lift, lift_host

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, _SOMETIMES)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if original is self.whole:
            return updated
        if _tolist(original, self.kinds):
            return self.lift(updated)
        if self.lift_host is not None and _host_call(original, self.kinds):
            return self.lift_host(updated)
        return updated
