"""Liveness over the host tree: region inputs are live-in, outputs live-out.

Code after a node that never falls through (a `return`, or an `if` whose arms both return once a
shape decision is folded to the arm that does) never runs: it is dropped first, so it reads nothing.
"""
from __future__ import annotations

import libcst as cst

from .syntax import reads_writes
from .cfg import HostStmt, If, Loop, RegionCall, exits
from .kinds import LoopKind, StmtKind

__all__ = ["assign_region_signatures"]


def _ordered(names, keep) -> list[str]:
    seen: dict[str, None] = {}
    for n in names:
        if n in keep and n not in seen:
            seen[n] = None
    return list(seen)


def _region_rw(region, variables) -> tuple[list[str], list[str]]:
    exposed, written, local = [], [], set()
    for stmt in region.stmts:
        reads, writes = reads_writes(stmt.node)
        exposed.extend(r for r in reads if r not in local)
        local.update(writes)
        if stmt.kind != StmtKind.REMAT:  # a recomputed shape is local to the region; the host has its own
            written.extend(writes)
    return _ordered(exposed, variables), _ordered(written, variables)


def _expr_reads(expr, variables: set[str]) -> set[str]:
    return {r for r in reads_writes(cst.Expr(expr))[0] if r in variables}


def _live(nodes: list, live_after: set[str], variables: set[str], jumps=(frozenset(), frozenset())) -> set[str]:
    """Names live before `nodes`; `jumps` = (live after the enclosing loop, live at its head)."""
    live = set(live_after)
    for node in reversed(nodes):
        if isinstance(node, RegionCall):
            region = node.region
            reads, writes = _region_rw(region, variables)
            region.outputs = [w for w in writes if w in live]
            region.inputs = reads
            live = (live - set(writes)) | set(reads)
        elif isinstance(node, HostStmt):
            reads, writes = reads_writes(node.node)
            node.dead = False
            if isinstance(node.node, cst.Break):
                live = set(jumps[0])
            elif isinstance(node.node, cst.Continue):
                live = set(jumps[1])
            elif isinstance(node.node, (cst.Return, cst.Raise)):
                live = set()
            elif _pure_assignment(node.node) and not set(writes) & live:
                node.dead = True
                continue
            live = (live - set(writes)) | {r for r in reads if r in variables}
        elif isinstance(node, If):
            test_reads = _expr_reads(node.test, variables)
            live = test_reads | _live(node.body, live, variables, jumps) | _live(node.orelse, live, variables, jumps)
        elif isinstance(node, Loop):
            after = set(live)
            test_reads = _expr_reads(node.test, variables) if node.kind == LoopKind.WHILE else set()
            head = after | test_reads
            for _ in range(len(variables) + 2):  # monotone: converges
                body_in = _live(node.body, head, variables, (frozenset(after), frozenset(head)))
                if node.kind == LoopKind.FOR:
                    body_in = body_in - {node.target.value}
                new_head = after | test_reads | body_in
                if new_head == head:
                    break
                head = new_head
            live = head | (_expr_reads(node.iter, variables) if node.kind == LoopKind.FOR else set())
    return live


def _pure_assignment(node) -> bool:
    """An assignment to plain names: host expressions have no side effects."""
    return isinstance(node, cst.Assign) and all(isinstance(t.target, (cst.Name, cst.Tuple)) for t in node.targets)


def _drop_dead(nodes: list) -> list:
    out = []
    for node in nodes:
        if isinstance(node, RegionCall) and not node.region.outputs:
            continue
        if isinstance(node, HostStmt) and node.dead:
            continue
        if isinstance(node, If):
            node.body, node.orelse = _drop_dead(node.body), _drop_dead(node.orelse)
        if isinstance(node, Loop):
            node.body = _drop_dead(node.body)
        out.append(node)
    return out


def _reachable(nodes: list) -> list:
    """`nodes` without what follows a node that never falls through, in every arm and loop body."""
    out = []
    for node in nodes:
        if isinstance(node, If):
            node.body, node.orelse = _reachable(node.body), _reachable(node.orelse)
        elif isinstance(node, Loop):
            node.body = _reachable(node.body)
        out.append(node)
        if exits([node]):
            break
    return out


def assign_region_signatures(body: list, params: list[str], variables: set[str]) -> list:
    """Fill in each region's inputs and outputs; drop unreachable code and regions whose results are unused."""
    body = _reachable(body)
    _live(body, set(), variables)
    return _drop_dead(body)
