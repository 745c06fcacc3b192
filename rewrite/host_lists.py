"""Which lists the host must hold, and which a region may build.

A list of tensors built in straight-line code (`res = [x[0], conv(x[0])]`, `out = [x]` then
`out.append(y)`, `torch.cat(res, 1)`) is plumbing between tensor ops: built in the host, every
display, `append` and join would end a region and start another, and DenseNet-style blocks
would cost a backend call per layer. Such a list is built inside the region instead (a region
takes and returns lists whole), unless the host needs it as a list of its own:

- a decision or a host loop reads the list a display built, before the name is bound again
  (`if not isinstance(x, list):`, `if x[0].shape[1] > 2:`): the host indexes it and reads
  shapes, and the test stays a shape test. This is liveness, so a helper inlined several times
  with the same local names keeps its lists in the host only where a test reads them;
- its length is read (`len(picks)`): the host counts;
- it is ordered (`sorted(picks)`, `min(picks)`, `max(picks)`): in a region its items are tensors,
  which Python would compare by converting them to bools, and tracing freezes those; the host
  compares the Python values (or arrays) it holds;
- it is written inside a host loop, or inside an arm of a run-time decision and read after the
  `if` (`if g: feats.append(h)`, later `torch.cat(feats)`): its length there depends on how
  execution went, and one region cannot take lists of several lengths at one place. Where one arm
  ends in a `return`, the code after the `if` runs after the other arm only.

Decisions exploration fixed (`fixed`, by id) are no decisions: their tests read nothing at run
time and only the arm they take is code. Ids are handed out in the builder's order (preorder).
"""
from __future__ import annotations

import libcst as cst

from .cfg import IfNode, LoopNode, Stmt
from .names import Namespace
from .syntax import lowered_writes
from .walk import find

__all__ = ["HostLists", "host_lists", "skip_decision_ids"]


class HostLists:
    """`stmts`: ids of the statements whose display must build a host list; `names`: names that
    must hold host lists wherever they are bound."""

    __slots__ = ("stmts", "names")

    def __init__(self, stmts: set[int], names: set[str]):
        self.stmts, self.names = stmts, names

    def __contains__(self, stmt: Stmt) -> bool:
        return id(stmt) in self.stmts or bool(_rebound(stmt.node) & self.names)


def host_lists(lowered: list, fixed: dict[str, bool]) -> HostLists:
    """What must stay host lists in the lowered function body (see the module docstring)."""
    code = _effective(lowered, fixed, Namespace())
    stmts: set[int] = set()
    _host_live(code, set(), stmts)
    names: set[str] = set()
    _varying(code, set(), names)
    return HostLists(stmts, names)


def _effective(lowered: list, fixed: dict[str, bool], ids: Namespace) -> list:
    """The lowered tree with each fixed decision replaced by the arm it takes (same Stmt objects)."""
    out: list = []
    for node in lowered:
        if isinstance(node, IfNode):
            decision = ids.fresh(f"L{node.origin.first}")
            if decision in fixed:
                taken = fixed[decision]
                if not taken:  # the other arm's decisions still take their ids, in order
                    skip_decision_ids(node.body, ids)
                out.extend(_effective(node.body if taken else node.orelse, fixed, ids))
                if taken:
                    skip_decision_ids(node.orelse, ids)
                continue
            body = _effective(node.body, fixed, ids)
            out.append(IfNode(node.test, body, _effective(node.orelse, fixed, ids), node.origin, node.kind))
        elif isinstance(node, LoopNode):
            ids.fresh(f"L{node.origin.first}")
            out.append(LoopNode(node.kind, _effective(node.body, fixed, ids), node.origin,
                                test=node.test, target=node.target, iter=node.iter))
        else:
            out.append(node)
    return out


def skip_decision_ids(lowered: list, ids: Namespace) -> None:
    """Take the ids of the decisions in code a fold drops, in the builder's order (preorder)."""
    for node in lowered:
        if isinstance(node, IfNode):
            ids.fresh(f"L{node.origin.first}")
            skip_decision_ids(node.body, ids)
            skip_decision_ids(node.orelse, ids)
        elif isinstance(node, LoopNode):
            ids.fresh(f"L{node.origin.first}")
            skip_decision_ids(node.body, ids)


def _host_live(nodes: list, live_out: set[str], stmts: set[int]) -> set[str]:
    """Backward: the names whose value a decision, a host loop or `len` reads before they are bound
    again. A binding that one of them reads goes in `stmts`, and what it was built from is live."""
    live = set(live_out)
    for node in reversed(nodes):
        if isinstance(node, Stmt):
            rebound = _rebound(node.node)
            if rebound & live:
                stmts.add(id(node))
                live = (live - rebound) | _list_reads(node.node.value)
            else:
                live -= rebound
            live |= _len_reads(node.node) | _ordered_reads(node.node)
        elif isinstance(node, IfNode):
            live = _host_live(node.body, live, stmts) | _host_live(node.orelse, live, stmts) | _list_reads(node.test)
        elif isinstance(node, LoopNode):
            head = live | _loop_names(node)
            for _ in range(len(node.body) + 2):  # to a fixpoint: the body's start is live at its end
                again = head | _host_live(node.body, head, stmts)
                if again == head:
                    break
                head = again
            live = head
    return live


def _varying(nodes: list, after: set[str], names: set[str]) -> None:
    """Names whose lists may have different lengths at one place (`after`: what later code mentions)."""
    later = [after]
    for node in reversed(nodes[1:]):
        later.append(later[-1] | _mentioned([node]))
    for node, after_node in zip(nodes, reversed(later)):
        if isinstance(node, IfNode):
            if not _terminates(node.body) and not _terminates(node.orelse):
                names |= (lowered_writes(node.body) | lowered_writes(node.orelse)) & after_node
            _varying(node.body, after_node, names)
            _varying(node.orelse, after_node, names)
        elif isinstance(node, LoopNode):
            names |= lowered_writes(node.body) | _loop_names(node)
            _varying(node.body, after_node | _mentioned(node.body), names)
        elif isinstance(node, Stmt):
            names |= _len_reads(node.node)


def _rebound(node) -> set[str]:
    """Names a plain assignment binds (`x = ...`, `a, b = ...`); none for `x[i] = ...`, `x.y = ...`."""
    if not isinstance(node, cst.Assign):
        return set()
    if any(find(t.target, (cst.Subscript, cst.Attribute)) for t in node.targets):
        return set()
    return {n.value for t in node.targets for n in find(t.target, cst.Name)}


def _list_reads(node) -> set[str]:
    """The names `node` may read as lists: indexed (`x[0].shape[1]`), tested (`isinstance(x, list)`),
    counted (`len(x)`), or as a whole and in displays; not the tensors of tensor math
    (`logits.softmax(-1).max()`), whose tests the host does not take on a list."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.List, cst.Tuple)):
        return set().union(*(_list_reads(el.value) for el in node.elements))
    if isinstance(node, cst.Subscript):
        return _list_reads(node.value)
    if isinstance(node, cst.Attribute):  # `x[0].shape`, not `x.shape`
        return _list_reads(node.value) if isinstance(node.value, cst.Subscript) else set()
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "len") + _ORDERS and node.args:
            return _list_reads(node.args[0].value)
        return _list_reads(node.func) if isinstance(node.func, cst.Attribute) else set()
    if isinstance(node, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.BinaryOperation)):
        parts = [node.left] + [c.comparator for c in node.comparisons] if isinstance(node, cst.Comparison) \
            else [node.expression] if isinstance(node, cst.UnaryOperation) else [node.left, node.right]
        return set().union(*(_list_reads(p) for p in parts))
    return set()


def _names(node) -> set[str]:
    return {n.value for n in find(node, cst.Name)}


def _loop_names(node: LoopNode) -> set[str]:
    return set().union(*(_names(p) for p in (node.test, node.iter, node.target) if p is not None))


def _mentioned(nodes: list) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, Stmt):
            found |= _names(node.node)
        elif isinstance(node, IfNode):
            found |= _names(node.test) | _mentioned(node.body) | _mentioned(node.orelse)
        elif isinstance(node, LoopNode):
            found |= _loop_names(node) | _mentioned(node.body)
    return found


def _len_reads(node) -> set[str]:
    return {c.args[0].value.value for c in find(node, cst.Call)
            if isinstance(c.func, cst.Name) and c.func.value == "len" and len(c.args) == 1
            and isinstance(c.args[0].value, cst.Name)}


_ORDERS = ("sorted", "min", "max")


def _ordered_reads(node) -> set[str]:
    """Names a statement orders as lists: `sorted(picks)`, `min(picks)`, `max(picks)`."""
    return {c.args[0].value.value for c in find(node, cst.Call)
            if isinstance(c.func, cst.Name) and c.func.value in _ORDERS and len(c.args) == 1
            and isinstance(c.args[0].value, cst.Name)}


def _terminates(arm: list) -> bool:
    """The arm never goes on to the code after its `if` (it returns or raises)."""
    if not arm:
        return False
    last = arm[-1]
    if isinstance(last, Stmt):
        return isinstance(last.node, (cst.Return, cst.Raise))
    if isinstance(last, IfNode):
        return _terminates(last.body) and _terminates(last.orelse)
    return False
