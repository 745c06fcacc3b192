"""Which runs of host nodes to fuse, and what the host holds before them."""
from __future__ import annotations

import libcst as cst

from hostgen.fused import FusedBlock
from rewrite.syntax import MUTATORS, reads_writes
from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall
from rewrite.kinds import LoopKind

from ..runtime.signature import GRAPH, Param, RegionSignature
from .expr import Expr
from .graph import NP_ELEM, Env, Graph, Names, Unfusable, from_type, scalar_kind


def _candidate(node, regions: dict[str, RegionSignature], backend: str, top: bool = False,
               returning: bool = False) -> bool:
    """Could `node` run inside a graph of `backend`? (Building it decides for sure.)"""
    if isinstance(node, RegionCall):
        called = regions[node.region.name]
        return called.backend == backend and _flat(called)
    if isinstance(node, HostStmt):
        stmt = node.node
        if isinstance(stmt, cst.Return):
            return returning
        return node.dead or isinstance(stmt, (cst.Assign, cst.AugAssign)) and not (_empty_list(stmt) and not top) \
            or _append(stmt)
    if isinstance(node, If):
        return all(_candidate(n, regions, backend, returning=returning) for n in node.body + node.orelse)
    if isinstance(node, Loop):
        steps, _ = split_breaks(node.body)
        cut = mid_break(steps)
        if cut is not None:
            steps = cut[0] + cut[2]
        return all(_candidate(n, regions, backend) for n in steps)
    return False


def worth_it(run: list) -> bool:
    calls = sum(1 for n in run if isinstance(n, RegionCall))
    return calls >= 2 or any(isinstance(n, (If, Loop)) for n in run)


def _runs(nodes: list, regions: dict[str, RegionSignature], backend: str) -> list[tuple[list, int, int]]:
    """Maximal runs of candidate nodes worth a region, as (list, start, end), innermost lists searched too.

    Only regions compiled by `backend` (the one that runs the fused graph) are inlined. In a list that
    ends in `return`, returns and early-exit decisions are candidates as well.
    """
    found = []
    returning = _returns(nodes)
    k = 0
    while k < len(nodes):
        if _candidate(nodes[k], regions, backend, top=True, returning=returning):
            end = k
            while end < len(nodes) and _candidate(nodes[end], regions, backend, top=True, returning=returning):
                end += 1
            if worth_it(nodes[k:end]):
                found.append((nodes, k, end))
            k = end
            continue
        node = nodes[k]
        if isinstance(node, If):
            found += _runs(node.body, regions, backend) + _runs(node.orelse, regions, backend)
        elif isinstance(node, Loop):
            found += _runs(node.body, regions, backend)
        k += 1
    return found


def names_outside(program: Program, skip: set[int]) -> set[str]:
    """Every name read anywhere in the program outside the nodes in `skip` (a superset of the live ones)."""
    names: set[str] = set()

    def expr(e):
        if e is not None:
            names.update(reads_writes(cst.Expr(e))[0])

    def walk(nodes):
        for node in nodes:
            if id(node) in skip:
                continue
            if isinstance(node, RegionCall):
                names.update(node.region.inputs)
            elif isinstance(node, HostStmt):
                names.update(reads_writes(node.node)[0])
            elif isinstance(node, If):
                expr(node.test)
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, Loop):
                expr(node.test)
                expr(node.iter)
                before = set(names)
                walk(node.body)
                if node.kind == LoopKind.FOR and isinstance(node.target, cst.Name) \
                        and node.target.value not in before:  # the body reads its own binding of the target
                    names.discard(node.target.value)
            elif isinstance(node, FusedBlock):
                names.update(node.args)

    walk(program.body)
    return names


class _Stop(Exception):
    pass


class Types:
    """What the host holds under each name before a node: arrays (with element type) or Python scalars."""

    def __init__(self, program: Program, before, params: list[Param], regions: dict[str, RegionSignature],
                 out_elems: dict[str, list[int]]):
        self.kinds: dict[str, tuple[str, int | None] | None] = {}
        self.regions, self.out_elems, self.before = regions, out_elems, before
        for param in params:
            if param.is_array:
                self._set(param.name, ("array", NP_ELEM.get(param.dtype)))
        try:
            self._walk(program.body)
        except _Stop:
            pass

    def _set(self, name: str, kind) -> None:
        if name in self.kinds and self.kinds[name] != kind:
            self.kinds[name] = None  # conflicting: unknown
        else:
            self.kinds[name] = kind

    def _walk(self, nodes):
        for node in nodes:
            if node is self.before:
                raise _Stop
            if isinstance(node, RegionCall):
                called = self.regions[node.region.name]
                for out, kind in zip(node.region.outputs, region_output_kinds(called, self.out_elems[called.name])):
                    self._set(out, kind)
            elif isinstance(node, HostStmt) and isinstance(node.node, cst.Assign) and len(node.node.targets) == 1:
                target, kind = node.node.targets[0].target, self._kind(node.node.value)
                if isinstance(target, cst.Name):
                    self._set(target.value, kind)
                elif isinstance(target, cst.Tuple):  # `h, c = state`
                    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
                    parts = kind[1] if kind and kind[0] in ("tuple", "list") and len(kind[1]) == len(names) \
                        else [None] * len(names)
                    for name, part in zip(names, parts):
                        if name:
                            self._set(name, part)
            elif isinstance(node, HostStmt) and (grown := _grown(node.node, self.kinds)):
                self.kinds[grown] = None  # `if g: feats.append(h)`: its length is not known here
            elif isinstance(node, If):
                self._walk(node.body)
                self._walk(node.orelse)
            elif isinstance(node, Loop):
                if node.kind == LoopKind.FOR and isinstance(node.target, cst.Name):
                    self._set(node.target.value, ("int", None))
                self._walk(node.body)

    def _kind(self, expr: cst.BaseExpression):
        """The kind of a host expression over names of known kinds (by building it into a scratch graph)."""
        env = Env(source=self._known)
        try:
            return Expr(Graph(Names()), env)(expr).type()
        except Unfusable:
            return None

    def _known(self, name: str):
        kind = self.kinds.get(name)
        if kind is None:
            raise Unfusable(name)
        return from_type(kind, lambda: name)

    def get(self, name: str):
        return self.kinds.get(name)


def region_output_kinds(region: RegionSignature, graph_elems: list[int]) -> list[tuple]:
    """The type (see Val.type) of each output of a region."""
    leaves = []
    for leaf in region.output_leaves:
        if leaf.source == GRAPH:
            leaves.append(("array", graph_elems[leaf.index]))
        else:
            leaves.append(("array", NP_ELEM.get(region.input_leaves[leaf.index].dtype)))
    it = iter(leaves)
    return [_spec_type(out.spec, it) for out in region.outputs]


def _spec_type(spec: dict, leaves) -> tuple:
    if spec["t"] == "scalar":
        next(leaves)
        return (scalar_kind(spec["dtype"]), None)
    if spec["t"] in ("tuple", "list"):
        return (spec["t"], tuple(_spec_type(s, leaves) for s in spec["items"]))
    return next(leaves)


def _flat(region: RegionSignature) -> bool:
    """Arrays, Python scalars, and tuples or lists of them in and out (no dicts, no None)."""
    return all(_leafy(p.spec) for p in region.inputs + region.outputs)


def _leafy(spec: dict) -> bool:
    if spec["t"] in ("tuple", "list"):
        return all(_leafy(s) for s in spec["items"])
    return spec["t"] in ("array", "scalar")


def early_exit(node) -> bool:
    """An `if` with one arm that always returns and one that never does (the code after it goes on)."""
    return isinstance(node, If) and _returns(node.body) != _returns(node.orelse)


def _returns(nodes: list) -> bool:
    """Does every path through `nodes` end in a return?"""
    if not nodes:
        return False
    last = nodes[-1]
    if isinstance(last, HostStmt):
        return isinstance(last.node, cst.Return)
    if isinstance(last, If):
        return _returns(last.body) and _returns(last.orelse)
    return False


def split_breaks(body: list) -> tuple[list, list]:
    """A loop body as (steps, trailing `if c: break` nodes)."""
    body = [n for n in body if not (isinstance(n, HostStmt) and n.dead)]
    tail = len(body)
    while tail and _is_break_if(body[tail - 1]):
        tail -= 1
    return body[:tail], body[tail:]


def mid_break(steps: list) -> tuple[list, If, list] | None:
    """Loop steps with an `if c: break` before more work, as (before, that If, after); None without one.

    The work after it is an arm of an If on `c` in the loop body (see block.Block._Loop); a second break
    in that work would need another, so it is not split here.
    """
    at = next((k for k, n in enumerate(steps) if _is_break_if(n)), None)
    if at is None:
        return None
    return steps[:at], steps[at], steps[at + 1:]


def _is_break_if(node) -> bool:
    return isinstance(node, If) and not node.orelse and len(node.body) == 1 \
        and isinstance(node.body[0], HostStmt) and isinstance(node.body[0].node, cst.Break)


def _empty_list(stmt) -> bool:
    return isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name) \
        and isinstance(stmt.value, cst.List) and not stmt.value.elements


def _grown(stmt, kinds: dict) -> str | None:
    """The list `stmt` changes in place (`feats.append(h)`, `feats += [h]`), or None."""
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and isinstance(stmt.value.func, cst.Attribute) \
            and stmt.value.func.attr.value in MUTATORS and isinstance(stmt.value.func.value, cst.Name):
        return stmt.value.func.value.value
    if isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name) \
            and (kinds.get(stmt.target.value) or ("",))[0] in ("list", "tuple"):
        return stmt.target.value
    return None


def _append(stmt) -> bool:
    return isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) \
        and isinstance(stmt.value.func, cst.Attribute) and stmt.value.func.attr.value == "append" \
        and isinstance(stmt.value.func.value, cst.Name) and len(stmt.value.args) == 1
