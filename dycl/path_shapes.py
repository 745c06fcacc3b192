"""Shapes that depend on the path: flip the decisions that change a value's shape before a region reads it.

Exploration forces every decision both ways, one at a time. A region that
reads state an earlier arm grows (`acc = torch.cat([acc, h], 1)` under an
`elif`, in each iteration of an unrolled loop) then sees that state at one
shape only, the one of the arms taken before it on the paths that reached
it, and keeps the dim static: an input that takes the growing arm twice
gets a package that refuses it.

Here the host tree is walked once with, for each name, the dims its value
can have (from what exploration saw of the regions that write it) and the
*writers* that made them differ: regions in the arm of a value-determined
decision whose value leaves the decision at other dims than the other arm's.
A region that reads such a value is run again, for each writer, on a path
that goes through the writer and then on to the region (the decisions of
both reaching paths forced at once), so its dims that follow the path vary
and become symbolic, and the compiled region is verified at both shapes.
Only regions downstream of a shape-changing arm cost runs: a gated residual
stack, whose arms keep every shape, costs none.
"""
from __future__ import annotations

from rewrite.cfg import FusedBlock, HostStmt, If, Loop, RegionCall
from rewrite.build import reads_writes

from .explore import Exploration, RegionRecord, path_forcing
from .runtime.spec import count_leaves

__all__ = ["shape_writers", "explore_path_shapes"]

_UNKNOWN = None  # dims of a value no region wrote (a parameter, a host statement's result)


class _Value:
    """What the walk knows of a name: the dims it can have, and the writers that made them differ."""

    __slots__ = ("dims", "writers", "last")

    def __init__(self, dims: frozenset | None, writers: frozenset, last: frozenset):
        self.dims, self.writers, self.last = dims, writers, last  # last: the regions that wrote it last


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
        self.reads: dict[str, set[str]] = {}  # region -> the shape-changing writers upstream of its inputs

    def block(self, nodes: list, state: dict) -> dict:
        for node in nodes:
            state = getattr(self, f"visit_{type(node).__name__}", self.visit_other)(node, state)
        return state

    def visit_RegionCall(self, node: RegionCall, state: dict) -> dict:
        region, record = node.region, self.records.get(node.region.name)
        writers = frozenset().union(*(state[n].writers for n in region.inputs if n in state))
        if writers:
            self.reads.setdefault(region.name, set()).update(writers)
        seen = record is not None and record.out_shapes
        dims = _per_name(region.outputs, record.out_specs, record.out_dims()) if seen else {}
        state = dict(state)
        for name in region.outputs:
            d = dims.get(name)
            state[name] = _Value(frozenset([d]) if d is not None else _UNKNOWN, writers, frozenset([region.name]))
        return state

    def visit_HostStmt(self, node: HostStmt, state: dict) -> dict:
        reads, writes = reads_writes(node.node)
        writers = frozenset().union(*(state[n].writers for n in reads if n in state))
        state = dict(state)
        for name in writes:
            state[name] = _Value(_UNKNOWN, writers, frozenset())
        return state

    def visit_If(self, node: If, state: dict) -> dict:
        arms = [self.block(node.body, state), self.block(node.orelse, state)]
        return _join(arms, state, seed=node.dclass == "value")

    def visit_Loop(self, node: Loop, state: dict) -> dict:
        once = _join([state, self.block(node.body, state)], state, seed=True)
        return _join([state, self.block(node.body, once)], state, seed=True)

    def visit_other(self, node, state: dict) -> dict:  # jumps, fused blocks (exploration runs before fusion)
        assert not isinstance(node, FusedBlock), "path shapes are explored before fusion"
        return state


def _join(arms: list[dict], before: dict, seed: bool) -> dict:
    """The state after the arms; with `seed`, a name whose known dims differ between the arms gets the
    regions that wrote it last in each arm as writers."""
    out = dict(before)
    for name in set().union(*arms):
        values = [arm[name] for arm in arms if name in arm]
        writers = frozenset().union(*(v.writers for v in values))
        last = frozenset().union(*(v.last for v in values))
        known = [v.dims for v in values]
        dims = None if any(d is None for d in known) else frozenset().union(*known)
        if seed and len(values) == len(arms) and dims is not None and len(dims) > 1:
            writers |= last - (before[name].last if name in before else frozenset())  # the arms' own writers
        out[name] = _Value(dims, writers, last)
    return out


def shape_writers(program, records: dict[str, RegionRecord]) -> dict[str, set[str]]:
    """Region -> the regions in earlier arms that change the shape of a value it reads."""
    walk = _Walk(records)
    walk.block(program.body, {})
    return {region: writers - {region} for region, writers in walk.reads.items() if writers - {region}}


def explore_path_shapes(exp: Exploration, program, inputs: list[tuple], resized: list[tuple]) -> int:
    """Run each region that reads a path-shaped value after each of its writers; the runs made."""
    runs, tried = 0, set()
    for region, writers in sorted(shape_writers(program, exp.records).items()):
        reader = exp.records[region]
        for writer in sorted(writers):
            through = exp.records[writer].reached_by[:1]
            for path_w in through:
                for path_r in reader.reached_by:
                    force = {**dict(path_forcing(path_r, exp.classes)), **dict(path_forcing(path_w, exp.classes))}
                    key = tuple(sorted(force.items()))
                    if not force or key in tried:
                        continue
                    tried.add(key)
                    for inp in inputs[:3] + resized:
                        try:
                            exp.run(inp, force)
                            runs += 1
                        except Exception:
                            continue  # the forced path is impossible for this input
    return runs
