"""Speculation (`dycl convert --speculate`): run the path nearly every sample takes as one graph, checked.

A graph of one whole path runs faster than the general program (no `If`
machinery, and onnxruntime optimises across the regions' former borders), but
a miss pays for that graph and then for the general program: measured, the
break-even needs about 80% of the inputs on the path. So speculation is
opt-in, and taken only where one path covers at least `MIN_SHARE` of at least
`MIN_SAMPLES` natural inputs (the example and the samples).

The path's host code, each decision replaced by its taken arm, is built into
one straight-line graph (fuse builds it) that also returns, under fresh names,
every value a decision of the path reads, as it was at that decision. The host
calls it first and tests each decision as the general host does, on those
values (`hostgen.speculation`); the answer stands only if all take the path's
arms, else the unchanged general program runs from the start. It runs too where
the speculative call fails: off the path, the path's code meets values it never
meets on it (a table index only the path keeps in range). A path through a
data-dependent loop is not speculated.
"""
from __future__ import annotations

import copy
import os
from collections import Counter

import libcst as cst
import onnx

from hostgen.fused import FusedBlock
from hostgen.speculation import Guard, Speculation
from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall, host_nodes
from rewrite.names import Namespace
from rewrite.syntax import reads_writes

from .backends import artifact_files
from .compare import to_numpy
from .fuse import _build
from .fuse.graph import Unfusable
from .fuse.trial import HostTrial
from .package import signature
from .shape_deps import names_in

__all__ = ["MIN_SHARE", "MIN_SAMPLES", "NoSpeculation", "dominant_path", "path_run", "speculation"]

MIN_SHARE = 0.95
MIN_SAMPLES = 20


class NoSpeculation(Exception):
    """Why a program gets no speculative region (said in the conversion report)."""


def dominant_path(paths: list[tuple]) -> tuple[tuple, int]:
    """The path most natural inputs took, and how many took it; NoSpeculation where it is not dominant."""
    if len(paths) < MIN_SAMPLES:
        raise NoSpeculation(f"{len(paths)} natural inputs; speculation needs at least {MIN_SAMPLES}")
    path, hits = Counter(paths).most_common(1)[0]
    if hits < MIN_SHARE * len(paths):
        raise NoSpeculation(f"the most common path covers {hits} of {len(paths)} natural inputs "
                            f"({100 * hits / len(paths):.0f}%), under {100 * MIN_SHARE:.0f}%")
    if not path:
        raise NoSpeculation("the program takes no decision: there is nothing to speculate on")
    return path, hits


def path_run(body: list, path: tuple) -> tuple[list, list[tuple[If, bool, int]]]:
    """The host nodes `path` runs, up to its return, and its decisions as (If, arm taken, position in the run).

    Fused blocks are read as the nodes they replaced. NoSpeculation where the path loops or leaves the tree.
    """
    run: list = []
    decisions: list[tuple[If, bool, int]] = []
    steps = iter(path)

    def walk(nodes: list) -> bool:
        """Append what `nodes` run on the path; True once it returned."""
        for node in nodes:
            if isinstance(node, FusedBlock):
                if walk(node.nodes):
                    return True
            elif isinstance(node, Loop):
                raise NoSpeculation(f"the path runs loop {node.decision} ({node.origin.func} {node.origin.lines}), "
                                    "whose trip count depends on the data")
            elif isinstance(node, If):
                decision, taken = next(steps, (None, None))
                if decision != node.decision:
                    raise NoSpeculation(f"the recorded path does not follow the program at decision {node.decision}")
                decisions.append((node, taken, len(run)))
                if walk(node.body if taken else node.orelse):
                    return True
            else:
                run.append(node)
                if isinstance(node, HostStmt) and isinstance(node.node, cst.Return):
                    return True
        return False

    if not walk(body) or next(steps, None) is not None:
        raise NoSpeculation("the recorded path does not end in a return of the program")
    return run, decisions


def _binds(node) -> set[str]:
    if isinstance(node, RegionCall):
        return set(node.region.outputs)
    return reads_writes(node.node)[1] if isinstance(node, HostStmt) else set()


def _names(program: Program) -> set[str]:
    """Every name the host program reads or binds (inside fused blocks too)."""
    names = set(program.params) | {"regions", "np"}

    def walk(nodes: list) -> None:
        for node in host_nodes(nodes):
            if isinstance(node, RegionCall):
                names.update(node.region.inputs + node.region.outputs)
            elif isinstance(node, HostStmt):
                names.update(*reads_writes(node.node))
            elif isinstance(node, (If, Loop)):
                for part in (node.test, getattr(node, "target", None), getattr(node, "iter", None)):
                    names.update(names_in(part) if part is not None else ())
            elif isinstance(node, FusedBlock):
                names.update(node.args + node.outputs)
                walk(node.nodes)

    walk(program.body)
    return names


def _assign(target: str, value: cst.BaseExpression, origin) -> HostStmt:
    return HostStmt(cst.Assign([cst.AssignTarget(cst.Name(target))], value), origin)


def speculation(program: Program, path: tuple, hits: int, samples: int, params, regions: dict, models: dict,
                backend: str, region_names: Namespace):
    """The path as one graph: (ONNX model, its signature without artifact, the Speculation node).

    NoSpeculation where the path loops, or fuse cannot build it as one graph (the reason given)."""
    run, decisions = path_run(program.body, path)
    called = {n.region.name for n in run if isinstance(n, RegionCall)}
    others = sorted(name for name in called if regions[name].backend != backend)
    if others:
        raise NoSpeculation(f"regions {', '.join(others)} on the path run on another backend than {backend}")
    fresh = Namespace(_names(program))
    snapshots: dict[tuple[str, int], str] = {}  # (name, its binding so far) -> output holding that value
    inserted: dict[int, list[HostStmt]] = {}  # position in the run -> snapshots taken before it
    guards = []
    for node, taken, at in decisions:
        bound_before = Counter(n for step in run[:at] for n in _binds(step))
        renames = {}
        for name in sorted(names_in(node.test)):
            if not bound_before[name]:  # a forward input (or a global): the host still holds it as it was
                continue
            key = (name, bound_before[name])
            if key not in snapshots:
                snapshots[key] = fresh.fresh(f"spec_{name}")
                inserted.setdefault(at, []).append(_assign(snapshots[key], cst.Name(name), node.origin))
            renames[name] = snapshots[key]
        guards.append(Guard(node, taken, renames))
    returned = run[-1]
    if returned.node.value is None:
        raise NoSpeculation("the path returns None")
    result = fresh.fresh("spec_result")
    steps = [s for k, node in enumerate(run[:-1]) for s in inserted.get(k, []) + [node]]
    steps += inserted.get(len(run) - 1, []) + [_assign(result, returned.node.value, returned.origin)]
    wanted = [result] + list(snapshots.values())
    probe = copy.copy(program)  # what reads the run's values afterwards: the speculation's outputs only
    probe.body = steps + [HostStmt(cst.Expr(cst.Tuple([cst.Element(cst.Name(n)) for n in wanted])),
                                   returned.origin)]
    name = region_names.fresh(f"speculate_L{program.source.first}")
    try:
        model, sig, block = _build(probe, steps, name, params, regions, models, backend)
    except Unfusable as exc:
        raise NoSpeculation(f"the path cannot run as one graph: {exc.args[0]}") from None
    if block.hoisted or block.extends or sorted(block.outputs) != sorted(wanted):
        raise NoSpeculation("the path's graph cannot return every value its decisions read (a list the host holds)")
    node = Speculation(name, block.args, block.outputs, result, guards, hits, samples)
    return model, sig, node


def speculate(st, backend, backend_for) -> str:
    """Start `st.program` with a speculative region of `backend` where one path dominates and the package with
    it still matches the original model on every natural input; what was done, or why not.
    `backend_for(name)`: the backend of that name, to run the other regions."""
    try:
        path, hits = dominant_path(st.exploration.paths)
        regions = {s.name: s for s in st.exported}
        scratch = os.path.join(st.workdir, ".scratch")
        models = {name: onnx.load(os.path.join(scratch, f"{name}.onnx")) for name, s in regions.items() if s.artifact}
        names = Namespace([s.name for s in st.signatures] + list(regions))
        model, sig, node = speculation(st.program, path, hits, len(st.exploration.paths), signature(st.spec),
                                       regions, models, backend.name, names)
    except NoSpeculation as exc:
        return f"not speculated: {exc}"
    onnx_path = os.path.join(scratch, f"{node.region}.onnx")
    onnx.save(model, onnx_path)
    sig = sig.with_artifact(backend.artifact(node.region))
    program = copy.copy(st.program)
    program.body = [node] + program.body
    try:
        backend.compile(onnx_path, os.path.join(st.workdir, sig.artifact))
        trial = HostTrial(st, backend_for, [[to_numpy(v) for v in inp] for inp in st.natural_inputs],
                          st.exploration.expected)
        for region in st.signatures + [sig]:
            trial.add(region)
        trial.check(trial.forward(program))
    except Exception as exc:  # refused by the backend, or not the original's answers: the general program only
        for made in artifact_files(os.path.join(st.workdir, sig.artifact)):
            if os.path.exists(made):
                os.remove(made)
        return f"not speculated: {type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
    st.program = program
    st.signatures.append(sig)
    return f"region {node.region} runs the path of {hits} of {node.samples} natural inputs ({node.path()})"
