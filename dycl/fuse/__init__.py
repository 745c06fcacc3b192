"""Run a stretch of host code as one onnxruntime region: decisions as ONNX `If`, loops as `Loop`.

Every region call costs a backend call (about 10 µs in onnxruntime) and every
host loop a Python iteration, while a gated block or a decoder step often
costs less than that. onnxruntime runs control flow inside a graph, so where
a run of host nodes is region calls plus host code ONNX can express (scalar
counters, `.item()` comparisons, `.shape[i]`, `lst.append(v)` in a loop,
`if c: break` at a loop's end), the regions' graphs are inlined into one graph
with `If` and `Loop` nodes and the host calls it once. Python scalars travel
as 0-d tensors with Python's own precision (int64, float64, bool), so every
comparison decides as the host would. A shape decision the host can take
before the run stays in the host, with one graph per arm (see arms). Backends
without control flow (TVM) keep the host's decisions, which is what they need.
"""
from __future__ import annotations

import copy
import re

import libcst as cst
import onnx
from onnx import helper

from hostgen.fused import FusedBlock
from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall, code, host_nodes
from rewrite.names import Namespace

from ..runtime.signature import GRAPH, InputLeaf, OutputLeaf, Param, Port, RegionSignature
from .block import Block, Context, graph_outputs
from .graph import DTYPE_OF_KIND, NP_ELEM, Env, Graph, Tup, Unfusable, Val
from .runs import _empty_list, _returns, _runs, early_exit, names_outside, worth_it
from .addends import fold_addends
from .arms import MAX_SPLITS, arm_runs, host_decision
from .hoist import hoist
from .peel import peel
from .reuse import reuse
from .simplify import simplify

__all__ = ["Unfusable", "Fusion", "fuse_program", "called_regions"]


def _build(program: Program, run: list, name: str, params: list[Param], regions: dict[str, RegionSignature],
           models: dict[str, onnx.ModelProto], backend: str) -> tuple[onnx.ModelProto, RegionSignature, FusedBlock]:
    """The ONNX model running `run`, its region signature (no artifact yet), and the host's call."""
    called = called_regions(run)
    opsets = {(o.domain or "", o.version) for r in called if r in models for o in models[r].opset_import}
    if len(opsets) > 1:
        raise Unfusable("its regions use different ONNX opsets or custom domains")
    ctx = Context(program, run, regions, models, params)
    graph, env = Graph(ctx.names), Env(source=ctx.input)
    block = Block(ctx, graph, env, top=True, returning=_returns(run))
    for k, node in enumerate(run):
        try:
            if block.returning and early_exit(node):
                block.run(run[k:])  # an early exit: the rest of the run joins the arm that goes on
                break
            block.run([node])
            if block.partial is not None:  # returned on some paths: the rest runs under `if not done`
                block.finish(run[k + 1:])
                break
        except Unfusable as exc:
            exc.at = node
            raise
    returns = None
    outside = names_outside(program, {id(n) for n in run})
    if _in_loop(program.body, run[0]):  # the next iteration runs it again on what it leaves in the host
        outside |= set(ctx.inputs)
    if block.ret is not None:
        returns = _returned_names(ctx.returns)
        live, vals = returns, block.ret
    else:
        live = [n for n in env if env.bound(n) and n in outside and not _host_list(env[n])]
        vals = [env[n] for n in live]
    scans = ctx.scans if block.ret is None else {}  # a run that returns: nothing after it reads the lists
    vals = vals + list(scans.values())
    out_leaves = [leaf for v in vals for leaf in v.leaves()]
    if not out_leaves:  # onnxruntime runs no graph without outputs (dead stores leave such runs)
        raise Unfusable("nothing after it reads what it computes")
    outs = graph_outputs(graph, [v.name for v in out_leaves])  # copies only where ONNX needs them
    inputs = list(ctx.inputs.items())
    in_leaves = [leaf for _, v in inputs for leaf in v.leaves()]
    # Inputs get the rank and static dims the regions reading them declare, so that onnxruntime can plan.
    onnx_graph = helper.make_graph(graph.nodes, name, [helper.make_tensor_value_info(v.name, v.elem,
                                                                                     ctx.shapes.get(v.name))
                                                       for v in in_leaves],
                                   [helper.make_tensor_value_info(o, v.elem, None) for o, v in zip(outs, out_leaves)],
                                   initializer=graph.initializers)
    opset = max([v for _, v in opsets] or [17])
    ir = max([models[r].ir_version for r in called if r in models] or [8])
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="dycl",
                              ir_version=ir)
    hoist(model, ctx.shapes)
    simplify(model, ctx.shapes)
    peel(model, ctx.shapes)
    fold_addends(model, ctx.shapes)
    reuse(model)
    out_names = live + [f"{lst}_items" for lst in scans]
    origin = _span(run)
    fused = RegionSignature(
        name=name,
        origin=f"{origin.func} {origin.lines}",
        artifact=None,
        backend=backend,
        inputs=tuple(Port(n, _spec(v)) for n, v in inputs),
        outputs=tuple(Port(n, _spec(v)) for n, v in zip(out_names, vals)),
        input_leaves=tuple(InputLeaf(_dtype(v), None) for v in in_leaves),
        graph_inputs=tuple(range(len(in_leaves))),
        output_leaves=tuple(OutputLeaf(GRAPH, k) for k in range(len(out_leaves))),
        source_lines=(origin.first, origin.last),
        fuses=tuple(called),
    )
    # The host makes the empty lists that its loops' items extend, or that it reads afterwards.
    hoisted = [n for n in run if isinstance(n, HostStmt) and _empty_list(n.node)
               and (n.node.targets[0].target.value in scans
                    or returns is None and n.node.targets[0].target.value in outside
                    and n.node.targets[0].target.value not in live)]
    block = FusedBlock(name, [n for n, _ in inputs], out_names, [(lst, f"{lst}_items") for lst in scans],
                       hoisted, run, origin)
    if returns is not None:
        block.returns = ctx.returns[0][0]
    return model, fused, block


def _in_loop(nodes: list, first) -> bool:
    """Whether `first` is in the body of a host loop in `nodes`."""
    return any(isinstance(n, Loop) and any(m is first for m in host_nodes(n.body)) for n in host_nodes(nodes))


def _host_list(value) -> bool:
    """An empty list the host made before the call (what its loops append comes stacked, see extends)."""
    return isinstance(value, Tup) and value.is_list and not value.items


_LINE_SUFFIX = re.compile(r"_L\d+(_\d+)*$")  # generated names: `out_L42_1` is `out` from line 42


def _returned_names(returns: list[tuple[bool, list]]) -> list[str]:
    """Names for returned values: the variable every return gives in that position, or the stem all
    their names share (`out` for `out_L42`, `out_L43`), else `returned_k`."""
    shapes = {(is_tuple, len(values)) for is_tuple, values in returns}
    if len(shapes) != 1:
        raise Unfusable("the returns give values of different shapes")
    names = []
    for k in range(len(returns[0][1])):
        given = {code(values[k]) for _, values in returns}
        stems = {_LINE_SUFFIX.sub("", g) for g in given}
        name = stems.pop() if len(stems) == 1 and all(isinstance(v[k], cst.Name) for _, v in returns) \
            else f"returned_{k}"
        names.append(name if name not in names else f"returned_{k}")
    return names


def _span(run: list):
    """Source lines of `run`, nested nodes included (inlined code from other functions does not count)."""
    origins = [n.region.origin if isinstance(n, RegionCall) else n.origin for n in host_nodes(run)]
    origin = origins[0]
    for other in origins[1:]:
        origin = origin.span(other)
    return origin


def called_regions(nodes: list) -> list[str]:
    """The regions host nodes call, in order; a fused block calls its own region only."""
    return list(dict.fromkeys(node.region.name if isinstance(node, RegionCall) else node.region
                              for node in host_nodes(nodes) if isinstance(node, (RegionCall, FusedBlock))))


class Fusion:
    """One run of host nodes built as graphs, and the node in its place; the host tree is never changed in place.

    `parts` are (model, region signature) per graph; `block` is their FusedBlock, or the host `If` of a shape
    decision taken before the run (see arms) with a FusedBlock (or the plain host nodes) per arm. `decided`
    maps each such decision of the run to its host `If`.
    """

    def __init__(self, run: list, parts: list[tuple[onnx.ModelProto, RegionSignature]], block,
                 decided: dict | None = None):
        self.run, self.parts, self.block = run, parts, block
        self.decided = decided or {}
        self.origin = _span(run)

    def applied(self, program: Program) -> Program | None:
        """A new program whose tree has the block in place of the run; None where the run is no longer in the
        tree (an earlier fusion took it). Nodes are shared; the lists and ifs and loops holding the run are
        copied, and the program's decisions and loops name the copies."""
        copies: dict[int, object] = dict(self.decided)
        body = _replaced(program.body, self.run, [self.block], copies)
        if body is None:
            return None
        new = copy.copy(program)
        new.body = body
        new.decisions = [copies.get(id(d), d) for d in program.decisions]
        new.loops = [copies.get(id(lp), lp) for lp in program.loops]
        return new


def _replaced(nodes: list, run: list, new: list, copies: dict) -> list | None:
    """`nodes` with `run` (found by identity, in them or in an arm or body below) replaced by the nodes `new`."""
    for k, node in enumerate(nodes):
        if node is run[0]:
            if len(nodes) - k < len(run) or any(a is not b for a, b in zip(nodes[k:], run)):
                return None
            return nodes[:k] + new + nodes[k + len(run):]
        for arm in ("body", "orelse") if isinstance(node, If) else ("body",) if isinstance(node, Loop) else ():
            inner = _replaced(getattr(node, arm), run, new, copies)
            if inner is not None:
                changed = copy.copy(node)
                setattr(changed, arm, inner)
                copies[id(node)] = changed
                return nodes[:k] + [changed] + nodes[k + 1:]
    return None


def _build_split(program: Program, run: list, names: Namespace, params: list[Param],
                 regions: dict[str, RegionSignature], models: dict[str, onnx.ModelProto], backend: str,
                 splits: int = MAX_SPLITS) -> Fusion:
    """The fusion of `run`, with the shape decisions the host can take first taken in the host (see arms):
    a graph per arm worth one, the plain host nodes for an arm that is not."""
    k = host_decision(run) if splits else None
    if k is None:
        model, fused, block = _build(program, run, names.fresh(f"block_L{_span(run).first}"), params, regions,
                                     models, backend)
        return Fusion(run, [(model, fused)], block)
    parts, decided, arms = [], {}, []
    for arm in arm_runs(run, k):
        if not worth_it(arm):
            arms.append(arm)
            continue
        probe = copy.copy(program)  # the program as the arm's path has it: what the arm's graph reads and leaves
        probe.body = _replaced(program.body, run, arm, {})
        inner = _build_split(probe, arm, names, params, regions, models, backend, splits - 1)
        parts += inner.parts
        decided.update(inner.decided)
        arms.append([inner.block])
    if not parts:
        raise Unfusable("neither arm of the decision is worth a graph of its own")
    decision = copy.copy(run[k])
    decision.body, decision.orelse = arms
    decided[id(run[k])] = decision
    return Fusion(run, parts, decision, decided)


def fuse_program(program: Program, params: list[Param], regions: dict[str, RegionSignature],
                 models: dict[str, onnx.ModelProto], backend: str) -> tuple[list[Fusion], list[str]]:
    """Every run worth a graph of `backend` (one that runs ONNX control flow), built against the unchanged
    program; and why the others were not built. Only regions `backend` compiled are inlined."""
    fusions, reasons = [], []
    names = Namespace(regions)  # runs may start on one line (a helper inlined before each block): one name each
    work = _runs(program.body, regions, backend)
    while work:
        nodes, start, end = work.pop(0)
        run = nodes[start:end]
        origin = _span(run)
        split = None  # why a shape decision the host could take first stays in the graph
        if host_decision(run) is not None:
            checkpoint = names.checkpoint()
            try:
                fusions.append(_build_split(program, run, names, params, regions, models, backend))
                continue
            except Exception as exc:  # noqa: BLE001 - the decision stays in the graph, as an ONNX If
                names.rollback(checkpoint)
                decision = run[host_decision(run)]
                split = (f"{decision.origin.func} {decision.origin.lines}: decision {decision.decision} is taken in "
                         f"the graph, not in the host before it ({type(exc).__name__}: "
                         f"{(str(exc).strip().splitlines() or [''])[0]})")
        try:
            model, fused, block = _build(program, run, names.fresh(f"block_L{origin.first}"), params, regions, models,
                                         backend)
        except Unfusable as exc:  # keep the node it failed on in the host; try the code around and inside it
            if exc.at is None:  # the run as a whole (its outputs): nothing smaller to try
                reasons.append(f"{origin.func} {origin.lines}: {exc.args[0]}")
                continue
            k = start + next(i for i, n in enumerate(run) if n is exc.at)
            where = exc.at.region.origin if isinstance(exc.at, RegionCall) else exc.at.origin
            reasons.append(f"{where.func} {where.lines}: {exc.args[0]}")
            work += [(nodes, a, b) for a, b in ((start, k), (k + 1, end)) if worth_it(nodes[a:b])]
            if isinstance(exc.at, If):
                work += _runs(exc.at.body, regions, backend) + _runs(exc.at.orelse, regions, backend)
            elif isinstance(exc.at, Loop):
                work += _runs(exc.at.body, regions, backend)
            continue
        except Exception as exc:  # a bug in building the graph must never fail the conversion: host keeps it
            reasons.append(f"{origin.func} {origin.lines}: no graph built ({type(exc).__name__}: "
                           f"{(str(exc).strip().splitlines() or [''])[0]})")
            continue
        fusions.append(Fusion(run, [(model, fused)], block))
        if split:
            reasons.append(split)
    return fusions, reasons


def _spec(val) -> dict:
    if isinstance(val, Tup):
        return {"t": "list" if val.is_list else "tuple", "items": [_spec(item) for item in val.items]}
    return {"t": "array"} if val.kind == "array" else {"t": "scalar", "dtype": DTYPE_OF_KIND[val.kind]}


def _dtype(val: Val) -> str:
    if val.kind != "array":
        return DTYPE_OF_KIND[val.kind]
    return {v: k for k, v in NP_ELEM.items()}.get(val.elem, "float32")
