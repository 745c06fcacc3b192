"""The lowered IR's jumps and loop facts: break/continue/return spliced away, names a block assigns."""
from __future__ import annotations

import libcst as cst

from .cfg import IfNode, Jump, LoopNode, Stmt
from .kinds import JumpKind, LoopMode
from .syntax import target_names
from .values import Static
from .walk import find

__all__ = ["Frame", "assigned_names", "has_break", "jump_in_loop", "has_jump", "terminates", "splice",
           "splice_returns", "as_tuple", "binop_of"]


class Frame:
    """One function being evaluated: its source, scope, enclosing loops and jump snapshots."""

    __slots__ = ("src", "scope", "label", "exits", "result", "loops", "variants", "returns")

    def __init__(self, src, scope, label: str, result: str | None):
        self.src, self.scope, self.label, self.result = src, scope, label, result
        self.exits: dict[JumpKind, list] = {JumpKind.BREAK: [], JumpKind.CONTINUE: [], JumpKind.RETURN: []}
        self.returns: list = []  # ReturnFact per `return` of an inlined function (rewrite/returns.py)
        self.loops: list[LoopMode] = []  # innermost last
        self.variants: list[set[str]] = []  # names assigned in each enclosing host loop

    def variant(self, name: str) -> bool:
        return any(name in v for v in self.variants)


def assigned_names(body) -> dict[str, None]:
    """Names a block assigns (targets of =, op=, annotated =, for), in source order."""
    visitor = _Assigned()
    body.visit(visitor)
    return visitor.names


class _Assigned(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.names: dict[str, None] = {}

    def visit_AssignTarget(self, node):
        self.names.update(dict.fromkeys(target_names(node.target)))

    def visit_AugAssign(self, node):
        self.names.update(dict.fromkeys(target_names(node.target)))

    def visit_AnnAssign(self, node):
        self.names.update(dict.fromkeys(target_names(node.target)))

    def visit_For(self, node):
        self.names.update(dict.fromkeys(target_names(node.target)))

    def visit_FunctionDef(self, node):
        return False


def has_break(body) -> bool:
    """A `break` of this loop (not of a loop nested in it)."""
    return bool(find(body, cst.Break, stop=(cst.For, cst.While)))


def jump_in_loop(stmts: list) -> bool:
    for s in stmts:
        if isinstance(s, LoopNode) and (any(isinstance(x, Jump) for x in s.body) or jump_in_loop(s.body)
                                        or any(isinstance(x, IfNode) and has_jump(x, {JumpKind.RETURN}) for x in s.body)):
            return True
        if isinstance(s, IfNode) and (jump_in_loop(s.body) or jump_in_loop(s.orelse)):
            return True
    return False


def as_tuple(value):
    if isinstance(value, Static) and isinstance(value.value, (tuple, list)):
        return tuple(Static(v) for v in value.value)
    return value


def binop_of(op: cst.BaseAugOp):
    name = type(op).__name__.replace("Assign", "")
    return getattr(cst, name)()


def has_jump(node, kinds) -> bool:
    if isinstance(node, Jump):
        return node.kind in kinds
    if isinstance(node, IfNode):
        return any(has_jump(s, kinds) for s in node.body + node.orelse)
    return False


def terminates(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, Jump):
        return True
    if isinstance(last, Stmt):
        return isinstance(last.node, (cst.Return, cst.Raise, cst.Break, cst.Continue))
    if isinstance(last, IfNode):
        return terminates(last.body) and terminates(last.orelse)
    return False


def splice(stmts: list, tails: dict[JumpKind, list]) -> list:
    """Resolve jumps: what follows a jump moves into the arm that does not take it."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, Jump) and s.kind in tails:
            return out + s.before + tails[s.kind]
        if isinstance(s, IfNode) and has_jump(s, tails):
            rest = stmts[i + 1:]
            out.append(IfNode(s.test, splice(s.body + rest, tails), splice(s.orelse + rest, tails), s.origin,
                              s.kind))
            return out
        out.append(s)
    return out + tails.get(JumpKind.FALL_THROUGH, [])


def splice_returns(body: list) -> list:
    return splice(body, {JumpKind.RETURN: []})
