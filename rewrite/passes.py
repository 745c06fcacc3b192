"""The rewrite's passes, in order, over one state: from `forward`'s source to a Program.

    parse              model            -> FunctionSource (forward's libcst tree), Namespace
    partial_eval       FunctionSource   -> lowered tree (Stmt / IfNode / LoopNode), parameters
    build              lowered tree     -> host tree (RegionCall / HostStmt / If / Loop), regions
    tail_merge         host tree        -> host tree: a region after an `if` moved into its arms
    merge_across_host  host tree        -> host tree: regions separated by host statements joined
    liveness           host tree        -> Program: each region's inputs and outputs, dead code gone

`liveness` sends the runner back to `build` while a region would return a shape the host reads (the
build is redone with those shapes read in the host). After each pass from `build` on, `verify` checks
the program's invariants, and `on_pass(name, state)` sees the state (`dycl convert --dump-after`).
"""
from __future__ import annotations

from typing import Callable

import libcst as cst
import torch
from torch import nn

from .build import Builder
from .cfg import Program, Region, RegionCall, code, host_nodes
from .classify import CONTAINER, SCALAR, TENSOR, Kinds
from .diagnostics import ConversionError
from .dump import lowered_text, program_text
from .kinds import ValueKind
from .liveness import assign_region_signatures
from .merge import merge_across_host, tail_merge
from .names import Namespace
from .partial_eval import PartialEvaluator
from .source import function_source
from .verify import verify
from .walk import find

__all__ = ["PASSES", "PASS_NAMES", "RewriteState", "run_passes"]


class RewriteState:
    """What the passes read and write; a pass fills in the fields the next one needs."""

    def __init__(self, model: nn.Module, example_inputs: tuple, fixed: dict[str, bool] | None):
        self.model, self.example_inputs, self.fixed = model, example_inputs, fixed
        self.src = None  # FunctionSource of forward (parse)
        self.names: Namespace | None = None
        self.taken: frozenset[str] = frozenset()  # the names taken before the first build
        self.evaluator: PartialEvaluator | None = None
        self.params: list[str] = []
        self.lowered: list | None = None  # partial_eval
        self.origin = None
        self.host_shapes: set[str] = set()  # shapes the host reads itself (liveness -> build)
        self.kinds: Kinds | None = None
        self.builder: Builder | None = None
        self.body: list | None = None  # the host tree (build on)
        self.program: Program | None = None

    def dump(self) -> str:
        """The program as it stands: source text of forward, of the lowered tree, or of host and regions."""
        if self.program is not None:
            return program_text(self.program)
        if self.lowered is not None:
            return lowered_text(self.lowered, self.params)
        return code(self.src.node) + "\n" if self.src is not None else ""


def _parse(st: RewriteState) -> None:
    src = function_source(type(st.model).forward)
    if src is None:
        raise TypeError(f"cannot read the source of {type(st.model).__qualname__}.forward: dycl rewrites forward's "
                        "Python source, so the model class must be defined in a .py file")
    st.src = src
    st.names = Namespace({n.value for n in find(src.node, cst.Name)})


def _partial_eval(st: RewriteState) -> None:
    evaluator = st.evaluator = PartialEvaluator(st.model, st.names)
    forward_params = [p.name.value for p in st.src.node.params.params][1:]
    evaluator.tensor_inputs = {p: p for p, v in zip(forward_params, st.example_inputs) if isinstance(v, torch.Tensor)}
    st.params, st.lowered, st.origin = evaluator.lower_forward(len(st.example_inputs))
    if evaluator.diagnostics:
        raise ConversionError(evaluator.diagnostics)
    if len(st.example_inputs) != len(st.params):
        raise TypeError(f"forward takes {len(st.params)} inputs ({', '.join(st.params)}) but "
                        f"{len(st.example_inputs)} were given")
    st.taken = st.names.checkpoint()


def _kind_of(value) -> ValueKind:
    if isinstance(value, torch.Tensor):
        return TENSOR
    if isinstance(value, (tuple, list, dict)):
        return CONTAINER
    return SCALAR


def _build(st: RewriteState) -> None:
    st.names.rollback(st.taken)  # again, with shapes the host reads where a region would return them as numbers
    kinds = st.kinds = Kinds({p: _kind_of(v) for p, v in zip(st.params, st.example_inputs)})
    # A Python scalar or container input is a run-time value like a tensor's: `if k > 2:` is never folded.
    kinds.value_derived.update(p for p in st.params if kinds.get(p) != TENSOR)
    st.builder = Builder(kinds, st.names, st.fixed, st.host_shapes)
    st.body = st.builder.build(st.lowered, kinds)
    if st.builder.diagnostics:
        raise ConversionError(st.builder.diagnostics)


def _tail_merge(st: RewriteState) -> None:
    st.body = tail_merge(st.body, st.builder.new_region)


def _merge_across_host(st: RewriteState) -> None:
    st.body = merge_across_host(st.body)


def _liveness(st: RewriteState) -> str | None:
    variables = set(st.params) | st.kinds.seen
    st.body = assign_region_signatures(st.body, st.params, variables)
    returned = {name for r in _regions_in(st.body) for name in r.outputs} & st.builder.region_shapes
    if returned:
        st.host_shapes |= returned
        return "build"
    return None


PASSES: list[tuple[str, Callable[[RewriteState], str | None]]] = [
    ("parse", _parse),
    ("partial_eval", _partial_eval),
    ("build", _build),
    ("tail_merge", _tail_merge),
    ("merge_across_host", _merge_across_host),
    ("liveness", _liveness),
]
PASS_NAMES = [name for name, _ in PASSES]


def run_passes(st: RewriteState, on_pass: Callable[[str, RewriteState], None] | None = None) -> Program:
    """Run PASSES in order (a pass may name an earlier one to run again from); return the Program."""
    i = 0
    while i < len(PASSES):
        name, run = PASSES[i]
        again = run(st)
        if st.body is not None:
            st.program = _program(st)
            verify(st.program)
        if on_pass is not None:
            on_pass(name, st)
        i = PASS_NAMES.index(again) if again else i + 1
    return st.program


def _program(st: RewriteState) -> Program:
    in_tree = {id(n) for n in host_nodes(st.body)}
    builder, evaluator = st.builder, st.evaluator
    program = Program(type(st.model).__qualname__, st.params, st.body, _regions_in(st.body),
                      [d for d in builder.decisions if id(d) in in_tree], st.origin,
                      evaluator.static_decisions + len(st.fixed or {}), evaluator.globals)
    program.loops = [lp for lp in builder.loops if id(lp) in in_tree]
    program.defaults = evaluator.defaults
    program.length_checks = evaluator.length_checks
    program.written = dict(builder.written)
    return program


def _regions_in(body) -> list[Region]:
    return [n.region for n in host_nodes(body) if isinstance(n, RegionCall)]
