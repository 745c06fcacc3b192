"""Facts about Python syntax that several passes share: the names a target binds, the names a
statement reads and writes, and the methods that change a list, dict or set in place."""
from __future__ import annotations

import libcst as cst

from .cfg import IfNode, LoopNode, Stmt

__all__ = ["MUTATORS", "MUTATORS_RETURNING_NONE", "target_names", "bound_names",
           "reads_writes", "lowered_writes"]

# Methods that change the list, dict or set they are called on.
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem",
                      "add", "discard"})
# Of those, the ones that return None: as a statement, their result is not missed when one is dropped.
MUTATORS_RETURNING_NONE = MUTATORS - {"pop", "popitem", "setdefault"}

_SCOPES = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.Lambda)


def target_names(target: cst.BaseExpression):
    """The names an assignment target binds (`a`, `a, (b, *c)`), in order; none for `x[i]`, `x.y`."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from target_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)


def bound_names(node: cst.CSTNode) -> set[str]:
    """The names a comprehension or a lambda binds for its own body."""
    names: set[str] = set()
    if isinstance(node, cst.Lambda):
        for p in node.params.params:
            names.add(p.name.value)
        return names
    comp = node.for_in
    while comp is not None:
        names.update(target_names(comp.target))
        comp = comp.inner_for_in
    return names


class _Reads(cst.CSTVisitor):
    def __init__(self):
        self.names: list[str] = []
        self.shadow: list[set[str]] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if not any(node.value in s for s in self.shadow):
            self.names.append(node.value)

    def on_visit(self, node) -> bool:
        if isinstance(node, _SCOPES):
            self.shadow.append(bound_names(node))
        return super().on_visit(node)

    def on_leave(self, node) -> None:
        if isinstance(node, _SCOPES):
            self.shadow.pop()
        super().on_leave(node)


def _reads(node) -> list[str]:
    v = _Reads()
    node.visit(v)
    return v.names


def _target_rw(target, reads: list, writes: list) -> None:
    if isinstance(target, cst.Name):
        writes.append(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            _target_rw(el.value, reads, writes)
    elif isinstance(target, cst.StarredElement):
        _target_rw(target.value, reads, writes)
    else:  # x[i] = v, x.attr = v: reads the indices and mutates the base
        reads.extend(_reads(target))
        base = target
        while isinstance(base, (cst.Subscript, cst.Attribute)):
            base = base.value
        if isinstance(base, cst.Name):
            writes.append(base.value)


def reads_writes(node: cst.BaseSmallStatement) -> tuple[list[str], list[str]]:
    """Names a small statement reads (before writing) and writes, in order. `feats.append(h)` and
    `x.add_(1)` write `feats` and `x`."""
    reads: list[str] = []
    writes: list[str] = []
    if isinstance(node, cst.Assign):
        reads.extend(_reads(node.value))
        for t in node.targets:
            _target_rw(t.target, reads, writes)
    elif isinstance(node, cst.AugAssign):
        reads.extend(_reads(node.value))
        reads.extend(_reads(node.target))
        _target_rw(node.target, reads, writes)
    elif isinstance(node, cst.Expr):
        reads.extend(_reads(node.value))
        call = node.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
            method = call.func.attr.value
            if method in MUTATORS or (method.endswith("_") and not method.startswith("_")):
                writes.append(call.func.value.value)
    elif isinstance(node, cst.Return):
        if node.value is not None:
            reads.extend(_reads(node.value))
    else:
        reads.extend(_reads(node))
    return reads, writes


def lowered_writes(nodes: list) -> set[str]:
    """Every name a lowered statement tree (Stmt, IfNode, LoopNode) may write, loop targets included."""
    written: set[str] = set()
    for node in nodes:
        if isinstance(node, Stmt):
            written.update(reads_writes(node.node)[1])
        elif isinstance(node, IfNode):
            written |= lowered_writes(node.body) | lowered_writes(node.orelse)
        elif isinstance(node, LoopNode):
            written |= lowered_writes(node.body)
            if node.target is not None:
                written.update(target_names(node.target))
    return written
