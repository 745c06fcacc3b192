"""A shape decision in a run the host can take first: one graph per arm instead of an ONNX `If`.

Inside a fused graph, `if x.shape[-1] > 48:` costs onnxruntime a Shape, a
Gather, a comparison and an `If` (each subgraph run sets up its own frame) on
every call, and the `If`'s border stops onnxruntime's optimisations between
the code before, inside and after it. The host reads a shape for nothing.
Where a shape-determined decision at the top of a run reads only names that
nothing before it in the run writes, the host takes it before the run and
calls one graph per arm: each is the run with the decision replaced by its
arm, the code before and after it compiled into both graphs (`arm_runs`). An
arm that returns drops the code after the decision, which only the other arm
reaches. dynres_cnn (stem, `if x.shape[-1] > 48: down`, a gated block) runs
2.3 µs faster per call this way on each of its paths (70-210 µs).

The code around the decision is in both graphs (twice the weights on disk and
in memory), so a run is split at `MAX_SPLITS` decisions at most, into up to
2 ** MAX_SPLITS graphs; further shape decisions stay in the graphs.
"""
from __future__ import annotations

from rewrite.cfg import HostStmt, If, Loop, RegionCall
from rewrite.kinds import DecisionClass
from rewrite.syntax import reads_writes, target_names

from ..shape_deps import names_in
from .runs import _returns

__all__ = ["MAX_SPLITS", "host_decision", "arm_runs"]

MAX_SPLITS = 2


def host_decision(run: list) -> int | None:
    """The index of the first shape-determined decision at the top of `run` whose test reads no name that the
    nodes before it in the run write (so that the host can take it before the run); None where there is none."""
    for k, node in enumerate(run):
        if isinstance(node, If) and node.dclass == DecisionClass.SHAPE \
                and not names_in(node.test) & _written(run[:k]):
            return k
    return None


def arm_runs(run: list, k: int) -> tuple[list, list]:
    """`run` with its decision at `k` replaced by its body, and by its orelse: the run each arm takes."""
    decision, before, after = run[k], run[:k], run[k + 1:]
    return tuple(before + arm + ([] if _returns(arm) else after) for arm in (decision.body, decision.orelse))


def _written(nodes: list) -> set[str]:
    """Every name the nodes (and the arms and bodies in them) assign or change in place."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, RegionCall):
            names.update(node.region.outputs)
        elif isinstance(node, HostStmt):
            names.update(reads_writes(node.node)[1])
        elif isinstance(node, If):
            names |= _written(node.body) | _written(node.orelse)
        elif isinstance(node, Loop):
            names |= _written(node.body)
            if node.target is not None:
                names.update(target_names(node.target))
    return names
