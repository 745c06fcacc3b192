"""The small IR: a host tree of control nodes whose leaves call regions."""
from __future__ import annotations

import libcst as cst

from .kinds import DecisionClass, JumpKind, LoopKind, StmtKind, TestKind

__all__ = ["Origin", "Stmt", "IfNode", "LoopNode", "Jump", "Region", "RegionCall", "HostStmt", "If", "Loop",
           "Program", "code", "host_nodes", "exits"]

_EMPTY = cst.Module([])


def code(node: cst.CSTNode) -> str:
    """Source text of a libcst node."""
    return _EMPTY.code_for_node(node)


class Origin:
    """Where a statement came from: file, lines, column and the function it was in."""

    __slots__ = ("file", "first", "last", "col", "func", "text")

    def __init__(self, file: str, first: int, last: int, col: int, func: str, text: str = ""):
        self.file, self.first, self.last, self.col, self.func = file, first, last, col, func
        self.text = text  # a decision's test or a loop's iterable as written, before folding and renaming

    def span(self, other: "Origin") -> "Origin":
        if other.file != self.file or other.func != self.func:
            return self
        return Origin(self.file, min(self.first, other.first), max(self.last, other.last), self.col, self.func)

    @property
    def lines(self) -> str:
        return f"L{self.first}" if self.first == self.last else f"L{self.first}-{self.last}"

    def __repr__(self) -> str:
        return f"{self.func} {self.lines}"


# -- lowered statements (after inlining and static folding) -------------------


class Stmt:
    """One branch-free small statement (assign, aug-assign, expression, return)."""

    __slots__ = ("node", "origin", "kind")

    def __init__(self, node: cst.BaseSmallStatement, origin: Origin, kind: StmtKind = StmtKind.PLAIN):
        self.node, self.origin, self.kind = node, origin, kind

    def __repr__(self) -> str:
        return f"Stmt({code(self.node)!r}{', ' + self.kind if self.kind else ''})"


class IfNode:
    """A data- or shape-dependent `if` that survives static folding."""

    __slots__ = ("test", "body", "orelse", "origin", "kind")

    def __init__(self, test: cst.BaseExpression, body: list, orelse: list, origin: Origin,
                 kind: TestKind = TestKind.PLAIN):
        self.test, self.body, self.orelse, self.origin, self.kind = test, body, orelse, origin, kind

    def __repr__(self) -> str:
        return f"IfNode({code(self.test)!r}, {self.body!r}, {self.orelse!r})"


class LoopNode:
    """A loop the host keeps: `while test:` or `for target in iter:` (a data-dependent trip count)."""

    __slots__ = ("kind", "test", "target", "iter", "body", "origin")

    def __init__(self, kind: LoopKind, body: list, origin: Origin, test=None, target=None, iter=None):
        self.kind, self.body, self.origin = kind, body, origin
        self.test, self.target, self.iter = test, target, iter

    def __repr__(self) -> str:
        head = code(self.test) if self.kind == LoopKind.WHILE else f"{code(self.target)} in {code(self.iter)}"
        return f"LoopNode({self.kind} {head!r}, {self.body!r})"


class Jump:
    """`break`, `continue` or a helper's `return`, resolved by the partial evaluator."""

    __slots__ = ("kind", "origin", "before")

    def __init__(self, kind: JumpKind, origin: Origin):
        self.kind, self.origin, self.before = kind, origin, []

    def __repr__(self) -> str:
        return f"Jump({self.kind})"


# -- the host tree ---------------------------------------------------------


class Region:
    """A run of branch-free tensor statements compiled as one unit."""

    __slots__ = ("name", "stmts", "inputs", "outputs", "origin")

    def __init__(self, name: str, stmts: list[Stmt], inputs: list[str], outputs: list[str], origin: Origin):
        self.name, self.stmts, self.inputs, self.outputs, self.origin = name, stmts, inputs, outputs, origin

    def __repr__(self) -> str:
        return f"Region({self.name}: {self.inputs} -> {self.outputs}, {self.origin})"


class RegionCall:
    __slots__ = ("region",)

    def __init__(self, region: Region):
        self.region = region

    def __repr__(self) -> str:
        return f"RegionCall({self.region.name})"


class HostStmt:
    """A statement the host runs itself: shapes, item(), containers, return."""

    __slots__ = ("node", "origin", "dead")

    def __init__(self, node: cst.BaseSmallStatement, origin: Origin):
        self.node, self.origin, self.dead = node, origin, False

    def __repr__(self) -> str:
        return f"HostStmt({code(self.node)!r})"


class If:
    """A decision the host takes; `dclass` says from what (shape, value, or execution for a loop's guard)."""

    __slots__ = ("test", "body", "orelse", "origin", "decision", "dclass", "facts")

    def __init__(self, test, body: list, orelse: list, origin: Origin, decision: str, dclass: DecisionClass):
        self.test, self.body, self.orelse, self.origin = test, body, orelse, origin
        self.decision, self.dclass = decision, dclass
        self.facts: dict = {}  # name -> literal known to hold in the body (`if k == 2:`)

    def __repr__(self) -> str:
        return f"If[{self.decision}, {self.dclass}]({code(self.test)!r}, {self.body!r}, {self.orelse!r})"


class Loop:
    """A host loop; `decision` names it (`L12`), its test is execution-determined."""

    __slots__ = ("kind", "test", "target", "iter", "body", "origin", "decision")

    def __init__(self, kind: LoopKind, body: list, origin: Origin, decision: str, test=None, target=None,
                 iter=None):
        self.kind, self.body, self.origin, self.decision = kind, body, origin, decision
        self.test, self.target, self.iter = test, target, iter


def host_nodes(nodes: list):
    """Every host node in `nodes` and in the If arms and loop bodies below them, in source order.

    A fused block is one node: the nodes it replaced are not visited.
    """
    for node in nodes:
        yield node
        if isinstance(node, If):
            yield from host_nodes(node.body)
            yield from host_nodes(node.orelse)
        elif isinstance(node, Loop):
            yield from host_nodes(node.body)


def exits(nodes: list) -> bool:
    """The host nodes never go on to what follows them: they end in a return, raise, break or continue,
    or in an `if` whose arms both do."""
    if not nodes:
        return False
    last = nodes[-1]
    if isinstance(last, HostStmt):
        return isinstance(last.node, (cst.Return, cst.Raise, cst.Break, cst.Continue))
    if isinstance(last, If):
        return exits(last.body) and exits(last.orelse)
    return False


class Program:
    """The rewritten forward: parameters, host tree, regions, folded decisions."""

    __slots__ = ("params", "body", "regions", "decisions", "source", "static_decisions", "globals", "name", "loops",
                 "defaults", "length_checks", "written")

    def __init__(self, name: str, params: list[str], body: list, regions: list[Region], decisions: list[If],
                 source: Origin, static_decisions: int, globals_: dict):
        self.name, self.params, self.body, self.regions, self.decisions = name, params, body, regions, decisions
        self.source, self.static_decisions, self.globals = source, static_decisions, globals_
        self.loops: list[Loop] = []
        self.defaults: dict[str, str] = {}  # forward parameters fixed at their defaults -> repr of the value
        # the message of each ValueError a host length check raises -> what to report when a sample
        # input raises it (rewrite/zips.py)
        self.length_checks: dict = {}
        self.written: dict[str, str] = {}  # a generated name -> the source of the expression it holds (`idx.tolist()`)

    def __repr__(self) -> str:
        return f"Program({self.params}, {len(self.regions)} regions, {len(self.decisions)} decisions)"
