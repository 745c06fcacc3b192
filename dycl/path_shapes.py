"""Shapes that depend on the path: flip the decisions that change a value's shape before a region reads it.

Exploration forces every decision both ways, one at a time. A region that
reads state an earlier arm grows (`acc = torch.cat([acc, h], 1)` under an
`elif`, in each iteration of an unrolled loop) then sees that state at one
shape only, the one of the arms taken before it on the paths that reached
it, and keeps the dim static: an input that takes the growing arm twice
gets a package that refuses it.

Here the host tree is walked once with, for each name, the dims its value
can have (from what exploration saw of the regions that write it) and the
value-determined decisions whose arms leave it at different dims. A region
that reads such a value is run again on its own reaching paths with each of
those decisions forced each way (and the decisions that lead to it as on a
path that reached it), so its dims that follow the path vary and become
symbolic, and the compiled region is verified at each shape. Only regions
downstream of a shape-changing arm cost runs: a gated residual stack, whose
arms keep every shape, costs none.
"""
from __future__ import annotations

from hostgen.fused import FusedBlock
from rewrite.cfg import HostStmt, If, Loop, RegionCall
from rewrite.kinds import DecisionClass
from rewrite.syntax import reads_writes

from .explore import path_forcing
from .recording import Exploration
from .region_record import RegionRecord
from .runtime.spec import count_leaves

__all__ = ["shape_decisions", "explore_path_shapes"]

_UNKNOWN = None  # dims of a value no region wrote (a parameter, a host statement's result)


class _Value:
    """What the walk knows of a name: the dims it can have, and the decisions whose arms made them differ."""

    __slots__ = ("dims", "decisions")

    def __init__(self, dims: frozenset | None, decisions: frozenset):
        self.dims, self.decisions = dims, decisions


def _per_name(names: list[str], specs: list | None, leaf_dims: list[list]) -> dict[str, tuple]:
    """Each name's leaves' dims, from a region's per-leaf dims and its per-argument specs."""
    out, at = {}, 0
    for name, spec in zip(names, specs or []):
        n = count_leaves(spec)
        out[name] = tuple(tuple(d) for d in leaf_dims[at:at + n])
        at += n
    return out


class _Walk:
    def __init__(self, records: dict[str, RegionRecord]):
        self.records = records
        self.reads: dict[str, set[str]] = {}  # region -> the shape-changing decisions upstream of its inputs

    def block(self, nodes: list, state: dict) -> dict:
        for node in nodes:
            state = getattr(self, f"visit_{type(node).__name__}", self.visit_other)(node, state)
        return state

    def visit_RegionCall(self, node: RegionCall, state: dict) -> dict:
        region, record = node.region, self.records.get(node.region.name)
        decisions = frozenset().union(*(state[n].decisions for n in region.inputs if n in state))
        if decisions:
            self.reads.setdefault(region.name, set()).update(decisions)
        seen = record is not None and record.out_shapes
        dims = _per_name(region.outputs, record.out_specs, record.out_dims()) if seen else {}
        state = dict(state)
        for name in region.outputs:
            d = dims.get(name)
            state[name] = _Value(frozenset([d]) if d is not None else _UNKNOWN, decisions)
        return state

    def visit_HostStmt(self, node: HostStmt, state: dict) -> dict:
        reads, writes = reads_writes(node.node)
        decisions = frozenset().union(*(state[n].decisions for n in reads if n in state))
        state = dict(state)
        for name in writes:
            state[name] = _Value(_UNKNOWN, decisions)
        return state

    def visit_If(self, node: If, state: dict) -> dict:
        arms = [self.block(node.body, state), self.block(node.orelse, state)]
        return _join(arms, node.decision if node.dclass == DecisionClass.VALUE else None)

    def visit_Loop(self, node: Loop, state: dict) -> dict:
        # The trip counts that grow state are exploration's own (each loop run exactly 0, 1 and 2 times).
        once = _join([state, self.block(node.body, state)], None)
        return _join([state, self.block(node.body, once)], None)

    def visit_other(self, node, state: dict) -> dict:  # jumps, fused blocks (exploration runs before fusion)
        assert not isinstance(node, FusedBlock), "path shapes are explored before fusion"
        return state


def _join(arms: list[dict], decision: str | None) -> dict:
    """The state after the arms of `decision` (None: not one exploration forces); a name whose known dims
    differ between the arms gets the decision."""
    out = {}
    for name in set().union(*arms):
        values = [arm[name] for arm in arms if name in arm]
        decisions = frozenset().union(*(v.decisions for v in values))
        known = [v.dims for v in values]
        dims = None if any(d is None for d in known) else frozenset().union(*known)
        if decision is not None and len(values) == len(arms) and dims is not None and len(dims) > 1:
            decisions |= {decision}
        out[name] = _Value(dims, decisions)
    return out


def shape_decisions(program, records: dict[str, RegionRecord]) -> dict[str, set[str]]:
    """Region -> the value-determined decisions whose arms leave a value it reads at other dims."""
    walk = _Walk(records)
    walk.block(program.body, {})
    return walk.reads


def explore_path_shapes(exp: Exploration, program, inputs: list[tuple], resized: list[tuple]) -> int:
    """Run each region that reads a path-shaped value with each decision that shapes it forced each way;
    the runs made."""
    leads: dict[str, tuple] = {}  # decision -> the decisions before it on a path that reached it
    for record in exp.records.values():
        for path in record.reached_by:
            for k, (decision, _) in enumerate(path):
                leads.setdefault(decision, path[:k])
    runs, tried = 0, set()
    for region, decisions in sorted(shape_decisions(program, exp.records).items()):
        for decision in sorted(d for d in decisions if d in leads):
            lead = dict(path_forcing(leads[decision], exp.classes))
            for path in exp.records[region].reached_by:
                for taken in (True, False):
                    force = {**dict(path_forcing(path, exp.classes)), **lead, decision: taken}
                    key = tuple(sorted(force.items()))
                    if key in tried:
                        continue
                    tried.add(key)
                    for inp in inputs[:3] + resized:
                        try:
                            exp.run(inp, force)
                            runs += 1
                        except Exception:
                            continue  # the forced path is impossible for this input
    return runs
