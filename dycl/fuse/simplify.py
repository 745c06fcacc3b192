"""Peephole clean-up of a fused graph: the glue that joining regions and host code leaves behind.

Inlining regions and translating host code one expression at a time leaves
nodes that compute nothing: `.item()`'s Reshape of a value that is already
0-d, `not` of a region's `not` (torch's `all()` ends in Not, a `break`'s
test adds another), `x and True` (a `while True:` loop's test), `i + 0` (a
`range(n)` target), a comparison negated on integers, and nodes whose
values nothing reads. onnxruntime removes none of these inside a Loop body
(its level-ALL graph keeps every one), and in a loop each costs about 0.3 µs
per iteration (CPU, one thread) on top of the oracle's straight-line graph.
Some glue computes something in more nodes than it needs: torch's `any()`
(a Cast, a sum and a comparison, one bool reduction from opset 20 on), the
Reshape to 1-d before `torch.norm`'s reduction over all axes, and a loop
body's outputs (see loop_outputs).

Every rewrite keeps each value's dtype, shape and contents; a graph's
outputs keep their names where they are the model's, and move to the value
they equal inside an `If` branch or `Loop` body (whose outputs are positional).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from ..onnx_graph import Names, attr, reads, subgraphs
from .loop_outputs import loop_outputs

__all__ = ["simplify"]

_INTS = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16, onnx.TensorProto.INT8,
         onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}
# not (a OP b) == a INVERSE b, for integers (with floats, a NaN makes both sides of each pair False)
_INVERSE = {"Less": "GreaterOrEqual", "GreaterOrEqual": "Less", "Greater": "LessOrEqual", "LessOrEqual": "Greater"}
_SMALL = 16  # initializers this small are read as constants
_REDUCE = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
           "ReduceProd", "ReduceSum", "ReduceSumSquare"}
_BROADCAST = {"Not", "And", "Or", "Xor", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Add", "Sub",
              "Mul", "Div", "Where"}  # output shape: the inputs' shapes broadcast


def simplify(model: onnx.ModelProto, declared: dict[str, list | None] | None = None) -> None:
    """Rewrite `model` in place: glue nodes removed, consumers reading what they computed from.

    `declared` gives the dims the inlined regions declare for values they read or compute, for
    values whose shape inference leaves open (a loop body's values derive from loop-carried ones, which
    ONNX types without a shape).
    """
    _initializers(model.graph)
    types = _types(model)
    for name, dims in (declared or {}).items():
        elem, shape = types.get(name, (None, None))
        if shape is None and dims is not None and None not in dims:
            types[name] = (elem, tuple(dims))
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1)
    pass_ = _Pass(types, opset, Names(model))
    pass_.graph(model.graph, top=True)
    _dead(model.graph)


def _initializers(graph) -> None:
    """Constant nodes (torch's export and the NaN repairs write them) as initializers of their graph.

    The rewrites read constants from initializers; and onnxruntime 1.32, saving a graph optimised at level
    EXTENDED whose nested If arms hold Constant nodes, wrote one arm's constant both as a node and as an
    initializer (an invalid model: MoE's fused graph once the router's ArgMax repair held Constants).
    """
    kept, outputs = [], {o.name for o in graph.output}
    for node in graph.node:
        for sub in subgraphs(node):
            _initializers(sub)
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") \
                and [a.name for a in node.attribute] == ["value"] and node.output[0] not in outputs:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)


def _types(model: onnx.ModelProto) -> dict[str, tuple]:
    """Name -> (element type, shape as a tuple of ints or None) for every value shape inference types."""
    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - no types: the rewrites that need them do not fire
        return {}
    types: dict[str, tuple] = {}

    def walk(graph):
        for info in (*graph.input, *graph.output, *graph.value_info):
            tensor = info.type.tensor_type
            dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
            static = dims if tensor.HasField("shape") and None not in dims else None
            types[info.name] = (tensor.elem_type, static)
        for init in graph.initializer:
            types[init.name] = (init.data_type, tuple(init.dims))
        for node in graph.node:
            for sub in subgraphs(node):
                walk(sub)

    walk(inferred.graph)
    return types


class _Pass:
    """One walk over the graphs, outer before inner; names are unique across the model."""

    def __init__(self, types: dict, opset: int, names: Names):
        self.types, self.opset, self.names = types, opset, names
        self.sub: dict[str, str] = {}  # a removed node's output -> the value it equals
        self.consts: dict[str, np.ndarray] = {}
        self.producer: dict[str, onnx.NodeProto] = {}

    def resolve(self, name: str) -> str:
        while name in self.sub:
            name = self.sub[name]
        return name

    def graph(self, graph, top: bool = False) -> None:
        for init in graph.initializer:
            if int(np.prod(init.dims)) <= _SMALL:
                self.consts[init.name] = numpy_helper.to_array(init)
        made = set()  # names nodes of this graph compute
        outputs = {o.name: o for o in graph.output}
        kept = []
        for node in graph.node:
            node.input[:] = [self.resolve(n) for n in node.input]
            for sub in subgraphs(node):
                self.graph(sub)
            if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
                self._bound(node, graph, kept)
                nodes, inits = loop_outputs(node, self.consts, self._shape, self.names)
                kept += nodes
                graph.initializer.extend(inits)
            same = self._equal_input(node)
            if same is not None and len(node.output) == 1:
                out = node.output[0]
                if out not in outputs:
                    self.sub[out] = same
                    continue
                if not top and same in made and same not in outputs:  # the branch or body returns it directly
                    outputs[out].name = same
                    outputs[same] = outputs.pop(out)
                    self.sub[out] = same
                    continue
            self._invert(node)
            self._flat_reduce(node)
            for new in self._any(node):  # the node, and one it now reads from
                kept.append(new)
                made.update(new.output)
                for out in new.output:
                    self.producer[out] = new
        del graph.node[:]
        graph.node.extend(kept)
        stale = [v for v in graph.value_info if v.name in self.sub]
        for v in stale:
            graph.value_info.remove(v)

    def _equal_input(self, node) -> str | None:
        """The input `node` computes a copy of (same dtype, shape and contents), if it does."""
        op, ins = node.op_type, list(node.input)
        if node.domain not in ("", "ai.onnx") or subgraphs(node):
            return None
        if op == "Reshape" and len(ins) == 2 and ins[1] in self.consts:
            shape = self.types.get(ins[0], (None, None))[1]
            target = self.consts[ins[1]]
            if shape is not None and target.ndim == 1 and tuple(int(v) for v in target) == shape:
                return ins[0]
        if op == "Not":
            inner = self.producer.get(ins[0])
            if inner is not None and inner.op_type == "Not" and inner.domain in ("", "ai.onnx"):
                return inner.input[0]
        if op in ("And", "Or") and len(ins) == 2:
            neutral = op == "And"  # x and True, x or False
            for k in (0, 1):
                value = self.consts.get(ins[k])
                if value is not None and value.ndim == 0 and value.dtype == bool and bool(value) == neutral:
                    return ins[1 - k]
        if op in ("Add", "Sub", "Mul") and len(ins) == 2:
            identity = 1 if op == "Mul" else 0
            for k in ((0, 1) if op != "Sub" else (1,)):
                value, other = self.consts.get(ins[k]), self.types.get(ins[1 - k])
                if value is not None and value.ndim == 0 and value.dtype.kind in "iu" and int(value) == identity \
                        and other is not None and other[0] in _INTS and other[0] == self.types.get(ins[k], (None,))[0]:
                    return ins[1 - k]
        return None

    def _invert(self, node) -> None:
        """`Not(a < b)` on integers becomes `a >= b` (one node; the comparison goes if nothing else reads it)."""
        if node.op_type != "Not" or node.domain not in ("", "ai.onnx"):
            return
        inner = self.producer.get(node.input[0])
        if inner is None or inner.op_type not in _INVERSE or inner.domain not in ("", "ai.onnx"):
            return
        if not all(self.types.get(n, (None,))[0] in _INTS for n in inner.input):
            return
        node.op_type = _INVERSE[inner.op_type]
        node.input[:] = list(inner.input)

    def _flat_reduce(self, node) -> None:
        """A reduction over all axes (to a 0-d value) reads what `Reshape(x, [-1])` flattened: x itself
        (`torch.norm(h - h_prev)`). The Reshape goes if nothing else reads it."""
        if not _op(node, *_REDUCE) or attr(node, "keepdims", 1) != 0 or attr(node, "noop_with_empty_axes", 0) \
                or attr(node, "axes") is not None or len([n for n in node.input if n]) != 1:
            return
        flat = self.producer.get(node.input[0])
        target = self.consts.get(flat.input[1]) if _op(flat, "Reshape") else None
        if target is not None and target.ndim == 1 and target.tolist() == [-1]:
            node.input[0] = flat.input[0]

    def _any(self, node) -> list:
        """torch's `any(b)`, `Cast(b, int64) -> ReduceSum -> Greater(., 0)`, as `ReduceMax(b)`, and its `any(not x)`
        (`not all(x)`; `all(x)` is its Not) as `Not(ReduceMin(x))`: the node and the one it now reads.

        Bool reductions came with opset 20, and onnxruntime refuses them over nothing (where `any` is False and `all`
        True): only where the reduced dims are known and none is 0.
        """
        if self.opset < 20 or not _op(node, "Greater") or len(node.input) != 2:
            return [node]
        zero, total = self.consts.get(node.input[1]), self.producer.get(node.input[0])
        if zero is None or zero.ndim != 0 or zero.dtype.kind not in "iu" or int(zero) != 0 \
                or not _op(total, "ReduceSum"):
            return [node]
        cast = self.producer.get(total.input[0])
        if not _op(cast, "Cast") or attr(cast, "to") != onnx.TensorProto.INT64 \
                or self.types.get(cast.input[0], (None,))[0] != onnx.TensorProto.BOOL:
            return [node]
        axes = total.input[1:2] if len(total.input) > 1 and total.input[1] else []
        keep = attr(total, "keepdims", 1)
        shape = None if attr(total, "noop_with_empty_axes", 0) else self._reduced(cast.input[0], axes, keep)
        if shape is None:
            return [node]
        negated = self.producer.get(cast.input[0])
        del node.attribute[:]
        if _op(negated, "Not"):
            every = self.names.fresh(f"{node.output[0]}_all")
            self.types[every] = (onnx.TensorProto.BOOL, shape)
            node.op_type, node.input[:] = "Not", [every]
            return [onnx.helper.make_node("ReduceMin", [negated.input[0], *axes], [every], name=every,
                                          keepdims=keep), node]
        node.op_type, node.input[:] = "ReduceMax", [cast.input[0], *axes]
        node.attribute.extend([onnx.helper.make_attribute("keepdims", keep)])
        return [node]

    def _reduced(self, name: str, axes: list[str], keep: int) -> tuple | None:
        """The shape of `name` reduced over `axes` (all where none), if known and every reduced set is non-empty."""
        shape = self._shape(name)
        if shape is None:
            return None
        picked = set(range(len(shape)))
        if axes:
            given = self.consts.get(axes[0])
            if given is None or given.ndim != 1 or given.size == 0 \
                    or any(not -len(shape) <= a < len(shape) for a in given):
                return None
            picked = {int(a) % len(shape) for a in given}
        if any(shape[a] <= 0 for a in picked):
            return None
        return tuple(1 if a in picked else d for a, d in enumerate(shape) if keep or a not in picked)

    def _shape(self, name: str) -> tuple | None:
        """`name`'s static shape: from shape inference or the regions, else broadcast from its producer's inputs
        (a comparison of a region's value that shape inference could not type in a loop body)."""
        shape = self.types.get(name, (None, None))[1]
        node = self.producer.get(name)
        if shape is None and _op(node, *_BROADCAST) and len(node.output) == 1:
            shapes = [self._shape(n) for n in node.input]
            if shapes and None not in shapes:
                try:
                    shape = tuple(np.broadcast_shapes(*shapes))
                except ValueError:
                    return None
                self.types[name] = (self.types.get(name, (None,))[0], shape)
        return shape

    def _bound(self, loop, graph, kept: list) -> None:
        """`and t < K` in a Loop body's condition, with `t` carried from a constant and one more each
        iteration, as the Loop's trip count (capped once, before the loop) instead of two nodes per iteration."""
        body = next(a.g for a in loop.attribute if a.name == "body")
        made = {out: node for node in body.node for out in node.output}
        both = made.get(body.output[0].name)
        if both is None or both.op_type != "And" or both.domain not in ("", "ai.onnx"):
            return
        outputs = {o.name for o in body.output}
        for k in (0, 1):
            rest, trips = both.input[1 - k], self._trips(loop, body, made, both.input[k])
            if trips is None or rest not in made or rest in outputs:
                continue
            name = f"{both.output[0]}_trips"
            bound = onnx.helper.make_tensor(name, onnx.TensorProto.INT64, [], [trips])
            if loop.input[0] in self.consts:
                bound = onnx.helper.make_tensor(name, onnx.TensorProto.INT64, [],
                                                [min(trips, int(self.consts[loop.input[0]]))])
            elif loop.input[0]:
                graph.initializer.append(onnx.helper.make_tensor(f"{name}_most", onnx.TensorProto.INT64, [], [trips]))
                kept.append(onnx.helper.make_node("Min", [loop.input[0], f"{name}_most"], [name], name=name))
                bound = None
            if bound is not None:
                graph.initializer.append(bound)
            loop.input[0] = name
            body.output[0].name = rest  # the And goes with nothing reading it
            return

    def _trips(self, loop, body, made: dict, term: str) -> int | None:
        """The iterations after which `term` (`t < K` or `t <= K`, t the new value of a counter) turns False."""
        compare = made.get(term)
        if compare is None or compare.op_type not in ("Less", "LessOrEqual") or compare.domain not in ("", "ai.onnx"):
            return None
        count, limit = compare.input
        step = made.get(count)
        if step is None or step.op_type != "Add" or step.domain not in ("", "ai.onnx"):
            return None
        slots = [k for k, out in enumerate(body.output[1:len(body.input) - 1]) if out.name == count]
        if len(slots) != 1 or 2 + slots[0] >= len(loop.input):
            return None
        carried, start = body.input[2 + slots[0]].name, loop.input[2 + slots[0]]
        one = [x for x in step.input if x != carried]
        if len(one) != 1 or len(step.input) != 2 or carried not in step.input:
            return None
        values = [self.consts.get(n) for n in (one[0], limit, start)]
        if any(v is None or v.ndim != 0 or v.dtype != np.int64 for v in values) or int(values[0]) != 1:
            return None
        last = int(values[1]) - int(values[2]) + (compare.op_type == "LessOrEqual")
        return max(last, 1) if abs(last) < 2 ** 62 else None


def _op(node, *ops: str) -> bool:
    return node is not None and node.op_type in ops and node.domain in ("", "ai.onnx")


def _unread_carried(loop, used: set) -> None:
    """Drop the loop-carried values nothing reads after the loop and that only feed themselves inside
    (a counter whose test became the trip count): their update runs no more."""
    body = next(a.g for a in loop.attribute if a.name == "body")
    removed = True
    while removed:
        removed = False
        for k in range(len(body.input) - 2):
            if loop.output[k] in used:
                continue
            others = [o.name for j, o in enumerate(body.output) if j != 1 + k]
            if body.input[2 + k].name in _needed(body, others):
                continue
            del loop.input[2 + k], loop.output[k], body.input[2 + k], body.output[1 + k]
            removed = True
            break


def _needed(graph, names: list[str]) -> set:
    """The names computing `names` in `graph` reads (a backward slice)."""
    needed = set(names)
    for node in reversed(graph.node):
        if any(o in needed for o in node.output):
            needed.update(node.input)
            for sub in subgraphs(node):
                reads(sub, needed)
    return needed


def _dead(graph) -> None:
    """Drop nodes, loop-carried values and initializers nothing reads; a node's inner graphs once the
    graph around knows which of the node's outputs are read."""
    used = {o.name for o in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(o and o in used for o in node.output):
            kept.append(node)
            if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
                _unread_carried(node, used)
            used.update(node.input)
            for sub in subgraphs(node):
                _dead(sub)
                reads(sub, used)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    unread = [init for init in graph.initializer if init.name not in used]
    for init in unread:
        graph.initializer.remove(init)
