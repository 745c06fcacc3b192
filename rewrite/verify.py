"""Check a program's invariants between passes, like torch.fx's `Graph.lint()`.

A pass that breaks one of these produces a package that fails far from the cause (an unbound name in
`host.py`, a manifest entry for a region no code calls); `verify` names the broken invariant right after
the pass instead.
"""
from __future__ import annotations

import libcst as cst

from .cfg import HostStmt, If, Loop, Program, Region, RegionCall, Stmt, code
from .kinds import DecisionClass, LoopKind, StmtKind
from .syntax import reads_writes, target_names

__all__ = ["InvalidProgram", "verify"]


class InvalidProgram(Exception):
    """A pass left the program inconsistent: a bug in dycl, not in the model."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid program: " + "; ".join(problems))


def verify(program: Program) -> None:
    """Raise InvalidProgram listing every broken invariant:

    - the host tree holds only RegionCall, HostStmt, If and Loop nodes; each region is called once;
    - `program.regions`, `program.decisions` and `program.loops` are exactly the regions called and the
      ifs and loops in the tree; region names and decision ids are unique;
    - every decision has a DecisionClass, every loop a LoopKind with its parts (`for`: target and
      iterable; `while`: a test), every region statement a StmtKind;
    - a region's inputs and outputs are distinct names, and each input is bound (a parameter, a host
      statement, a region's output or a loop target) on some path before the call.
    """
    problems: list[str] = []
    regions: list[Region] = []
    ifs: list[If] = []
    loops: list[Loop] = []
    _walk(program.body, set(program.params), problems, regions, ifs, loops)
    for what, listed, found, name in (("regions", program.regions, regions, lambda r: r.name),
                                      ("decisions", program.decisions, ifs, lambda d: d.decision),
                                      ("loops", program.loops, loops, lambda lp: lp.decision)):
        if {id(x) for x in listed} != {id(x) for x in found} or len(listed) != len(found):
            problems.append(f"program.{what} {sorted(map(name, listed))} are not the ones in the host tree "
                            f"{sorted(map(name, found))}")
    _unique("region name", [r.name for r in regions], problems)
    _unique("region", [str(id(r)) for r in regions], problems, lambda _: "called more than once")
    _unique("decision id", [n.decision for n in ifs + loops], problems)
    if problems:
        raise InvalidProgram(problems)


def _unique(what: str, names: list[str], problems: list[str], say=lambda name: "used more than once") -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(f"{what} {name} {say(name)}")
        seen.add(name)


def _walk(nodes: list, bound: set[str], problems: list[str], regions: list, ifs: list, loops: list) -> set[str]:
    """Check `nodes` given the names bound on some path before them; return those bound after them."""
    for node in nodes:
        if isinstance(node, RegionCall):
            _region(node.region, bound, problems)
            regions.append(node.region)
            bound = bound | set(node.region.outputs)
        elif isinstance(node, HostStmt):
            bound = bound | set(reads_writes(node.node)[1])
        elif isinstance(node, If):
            ifs.append(node)
            if not isinstance(node.dclass, DecisionClass) or node.dclass == DecisionClass.STATIC:
                problems.append(f"decision {node.decision} has no host decision class ({node.dclass!r})")
            bound = _walk(node.body, bound, problems, regions, ifs, loops) \
                | _walk(node.orelse, bound, problems, regions, ifs, loops)
        elif isinstance(node, Loop):
            loops.append(node)
            _loop_head(node, problems)
            inside = bound | (set(target_names(node.target)) if node.target is not None else set())
            # what the body binds is bound at its start from the second iteration on
            inside |= _walk(node.body, inside, [], [], [], [])
            bound = inside | _walk(node.body, inside, problems, regions, ifs, loops)
        else:
            problems.append(f"unexpected host node {node!r}")
    return bound


def _loop_head(node: Loop, problems: list[str]) -> None:
    if not isinstance(node.kind, LoopKind):
        problems.append(f"loop {node.decision} has no LoopKind ({node.kind!r})")
    elif node.kind == LoopKind.FOR and (node.target is None or node.iter is None):
        problems.append(f"for loop {node.decision} lacks its target or iterable")
    elif node.kind == LoopKind.WHILE and (node.test is None or node.target is not None):
        problems.append(f"while loop {node.decision} lacks its test or has a target")


def _region(region: Region, bound: set[str], problems: list[str]) -> None:
    for what, names in (("inputs", region.inputs), ("outputs", region.outputs)):
        if len(set(names)) != len(names):
            problems.append(f"region {region.name} lists {what} twice: {names}")
    unbound = [n for n in region.inputs if n not in bound]
    if unbound:
        problems.append(f"region {region.name} reads {', '.join(unbound)} before the host binds it")
    for stmt in region.stmts:
        if not isinstance(stmt, Stmt) or not isinstance(stmt.kind, StmtKind):
            problems.append(f"region {region.name} holds {stmt!r}, not a Stmt with a StmtKind")
        elif not isinstance(stmt.node, cst.BaseSmallStatement):
            problems.append(f"region {region.name} holds a compound statement: {code(stmt.node)!r}")
