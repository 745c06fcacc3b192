"""What an inlined function returns, as far as conversion knows it.

A helper whose every `return` gives the same constant folds at its call site:
`if blk._blockType() == 'norm':` is decided at conversion time, and so is
`if is_output:` after `fwd, is_output, out = layer(fwd)` when every `return`
of the layer's forward has the same constant in that place
(`return y, torch.tensor(1), self.output(y)`). The call's other values stay
run-time values: the host assigns only those.
"""
from __future__ import annotations

import libcst as cst

from .cfg import IfNode, LoopNode, Stmt
from .source import function_source
from .walk import find

__all__ = ["ReturnFact", "Returned", "returns_constant"]


class ReturnFact:
    """One `return` reached while inlining: the statement assigning the call's result, and what of its
    value is known (`value`: the whole value, `elements`: each element of a returned tuple; None where
    only run time knows)."""

    __slots__ = ("stmt", "value", "elements", "facts")

    def __init__(self, stmt: Stmt, value, elements: list | None, facts: list | None = None):
        self.stmt, self.value, self.elements = stmt, value, elements
        self.facts = facts  # per element (or [whole]): NotNone/IsTensor of a run-time name returned, else None


class Returned:
    """The result of an inlined call: `value` when every return gives the same constant, `elements`
    (one entry per element, None where it varies) when every return gives a tuple of the same length."""

    __slots__ = ("value", "elements", "_facts", "_lowered", "known")

    def __init__(self, facts: list[ReturnFact], every_path_returns: bool, lowered: list | None = None):
        self._facts, self._lowered = facts, lowered
        self.value = self.elements = None
        self.known = None  # per element (or [whole]): what every return's run-time value is known to be
        if not facts or not every_path_returns:
            return
        if all(f.facts is not None and len(f.facts) == len(facts[0].facts) for f in facts):
            self.known = [_common([f.facts[k] for f in facts]) for k in range(len(facts[0].facts))]
        first = facts[0]
        if first.value is not None and all(f.value is not None and f.value == first.value for f in facts):
            self.value = first.value
        if first.elements is not None and all(f.elements is not None and len(f.elements) == len(first.elements)
                                              for f in facts):
            self.elements = [e if e is not None and all(f.elements[k] is not None and f.elements[k] == e
                                                        for f in facts) else None
                             for k, e in enumerate(first.elements)]

    @property
    def some_literal(self) -> bool:
        """Whether some return gives a constant element (`return True, m` beside `return False, m.bool()`)."""
        return any(f.elements is not None and any(e is not None for e in f.elements) for f in self._facts)

    def drop(self) -> None:
        """The call site folded the whole value: the host assigns nothing."""
        if self._lowered is not None:
            _remove(self._lowered, {id(f.stmt) for f in self._facts})

    def keep(self, dynamic: list[int], target: cst.BaseExpression) -> None:
        """The call site folded the other elements: each return assigns the elements at `dynamic` to
        `target` (a tuple of names, or one name) itself."""
        for fact in self._facts:
            elements = [fact.stmt.node.value.elements[k] for k in dynamic]
            value = elements[0].value if len(elements) == 1 else cst.Tuple(
                [el.with_changes(comma=cst.MaybeSentinel.DEFAULT) for el in elements])
            fact.stmt.node = cst.Assign([cst.AssignTarget(target)], value)


def _common(facts: list):
    """The fact every path agrees on: the same Holds, IsTensor when all are, NotNone when all are at least that."""
    from .values import IS_TENSOR, NOT_NONE, Holds, IsTensor, NotNone
    if facts and isinstance(facts[0], Holds) and all(f == facts[0] for f in facts):
        return facts[0]  # a result object that holds an object forward created (rewrite/objects.py)
    if all(isinstance(f, IsTensor) for f in facts):
        return IS_TENSOR
    if all(isinstance(f, NotNone) for f in facts):
        return NOT_NONE
    return None


def _remove(lowered: list, stmts: set[int]) -> None:
    """Delete the statements (by identity) from a lowered tree, wherever splicing copied them."""
    lowered[:] = [n for n in lowered if id(n) not in stmts]
    for node in lowered:
        if isinstance(node, IfNode):
            _remove(node.body, stmts)
            _remove(node.orelse, stmts)
        elif isinstance(node, LoopNode):
            _remove(node.body, stmts)


def returns_constant(func) -> bool:
    """Whether some `return` of `func` gives a literal or `torch.tensor(literal)`, alone or in a tuple.

    A module whose forward does is inlined rather than traced, so that the constant can fold where it
    is tested.
    """
    src = function_source(func)
    if src is None:
        return False
    for ret in find(src.node.body, cst.Return, stop=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        value = ret.value
        parts = [el.value for el in value.elements] if isinstance(value, cst.Tuple) else [value]
        if any(part is not None and _literal_expression(part, call=True) for part in parts):
            return True
    return False


def _literal_expression(node, call: bool = False) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _literal_expression(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(_literal_expression(el.value) for el in node.elements)
    if call and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and isinstance(node.func.value, cst.Name) and node.func.value.value == "torch" \
            and node.func.attr.value == "tensor" and node.args:
        return _literal_expression(node.args[0].value)
    return False
