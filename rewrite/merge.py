"""Fewer backend calls: merge regions that no decision separates.

- Tail merging: a region right after an `if` moves into the end of each arm.
  `if g: x = block(x)` followed by `g = gate(x)` costs two calls on the taken
  path; merged, each arm ends with one region that also computes the next
  decision's inputs. The region is duplicated (once per arm that falls
  through), so behaviour is unchanged.
- Merging across host statements: `h = cell(x, h); n += 1; acc = acc + h`
  is one region when the host statement neither reads what the later region
  writes nor writes what it reads.
"""
from __future__ import annotations

import libcst as cst

from .build import substitute
from .syntax import reads_writes
from .cfg import Stmt
from .cfg import HostStmt, If, Loop, Region, RegionCall, exits

__all__ = ["tail_merge", "merge_across_host"]


def _ends_in_region(nodes: list) -> bool:
    if not nodes or exits(nodes):
        return False
    last = nodes[-1]
    if isinstance(last, RegionCall):
        return True
    if isinstance(last, If):
        return _ends_in_region(last.body) or _ends_in_region(last.orelse)
    return False


def tail_merge(nodes: list, new_region) -> list:
    """Merge regions into the arms of the `if` before them; `new_region(stmts)` names copies."""
    out: list = []
    for node in nodes:
        if isinstance(node, If):
            node.body = tail_merge(node.body, new_region)
            node.orelse = tail_merge(node.orelse, new_region)
        if isinstance(node, Loop):
            node.body = tail_merge(node.body, new_region)
        if isinstance(node, RegionCall) and out and isinstance(out[-1], If) and _ends_in_region([out[-1]]):
            _push(out[-1], node.region.stmts, node.region.origin, new_region)
            continue
        out.append(node)
    return out


def _push(node: If, stmts: list, origin, new_region) -> None:
    _push_arm(node.body, _known_in(stmts, node.facts), origin, new_region)
    _push_arm(node.orelse, stmts, origin, new_region)


def _known_in(stmts: list, facts: dict) -> list:
    """The statements as they read in an `if k == 2:` arm, where k is the literal."""
    if not facts:
        return stmts
    out, known = [], dict(facts)
    for s in stmts:
        out.append(Stmt(substitute(s.node, known), s.origin))
        for name in reads_writes(s.node)[1]:
            known.pop(name, None)
    return out


def _push_arm(arm: list, stmts: list, origin, new_region) -> None:
    if exits(arm):
        return
    last = arm[-1] if arm else None
    if isinstance(last, RegionCall):
        merged = last.region
        merged.stmts = merged.stmts + stmts
        merged.origin = merged.origin.span(origin)
    elif isinstance(last, If):
        _push(last, stmts, origin, new_region)
    else:
        arm.append(RegionCall(new_region(list(stmts))))


def _region_rw(region: Region) -> tuple[set[str], set[str]]:
    reads: set[str] = set()
    writes: set[str] = set()
    for stmt in region.stmts:
        r, w = reads_writes(stmt.node)
        reads.update(r)
        writes.update(w)
    return reads, writes


def merge_across_host(nodes: list) -> list:
    """Merge a region into an earlier one when only independent host statements lie between."""
    out: list = []
    target: RegionCall | None = None
    between_reads: set[str] = set()
    between_writes: set[str] = set()
    for node in nodes:
        if isinstance(node, If):
            node.body, node.orelse = merge_across_host(node.body), merge_across_host(node.orelse)
        elif isinstance(node, Loop):
            node.body = merge_across_host(node.body)
        if isinstance(node, RegionCall):
            reads, writes = _region_rw(node.region)
            if target is not None and not (reads & between_writes) and not (writes & (between_reads | between_writes)):
                merged = target.region
                merged.stmts = merged.stmts + node.region.stmts
                merged.origin = merged.origin.span(node.region.origin)
                continue
            target, between_reads, between_writes = node, set(), set()
        elif isinstance(node, HostStmt) and not isinstance(node.node, (cst.Return, cst.Raise, cst.Break, cst.Continue)):
            r, w = reads_writes(node.node)
            between_reads.update(r)
            between_writes.update(w)
        else:
            target = None
        out.append(node)
    return out
