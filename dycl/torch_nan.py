"""Make an exported graph treat NaN as torch does.

torch propagates NaN through every comparison-based op: `argmax`/`argmin`
return the first NaN's index, `max`/`amax`/`max_pool` return NaN where their
window holds one, `maximum`/`relu`/`clamp` keep a NaN element, and `topk`/`sort`
order NaN above +inf; and `mean` over no elements is NaN where onnxruntime's
ReduceMean gives 0 (TVM's ReduceSum and the like even leave such outputs
uninitialised). onnxruntime skips NaN in ArgMax/ArgMin, ReduceMax/Min
and MaxPool; TVM also drops it in Max/Min/Relu/Clip and TopK. A NaN in an input
then changes which branch the package takes.

`repair` rewrites each such node into the node plus a NaN test on its input,
so the graph computes torch's answer. The common case pays an `IsNaN` and a
`Where` beside the op, on the op's input only; MaxPool, whose input is large,
pays one sum over it, and computes the NaN mask only when the sum is NaN.
"""
from __future__ import annotations

import math
import sys

import onnx
from onnx import TensorProto, helper

from .onnx_graph import all_names

__all__ = ["repair", "COMMON", "TVM_ONLY"]

# Ops that every backend gets wrong (repaired at export); those TVM alone gets wrong (repaired before TVM
# compiles a graph). Nodes a repair writes are marked, so a graph is never repaired twice.
COMMON = frozenset({"ArgMax", "ArgMin", "ReduceMax", "ReduceMin", "MaxPool", "GlobalMaxPool", "ReduceMean"})
TVM_ONLY = frozenset({"Max", "Min", "Relu", "Clip", "TopK", "ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2",
                      "ReduceProd", "ReduceLogSumExp"})
_MARK = "dycl: torch NaN semantics"

_FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
_NARROW = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}  # exact and ordered as float64


class _Emitter:
    """New nodes and fresh value names for one graph."""

    def __init__(self, graph: onnx.GraphProto, opset: int, types: dict[str, int]):
        self.opset = opset
        self.types = types  # float values and their element types
        self.nodes: list[onnx.NodeProto] = []
        self.taken = all_names(graph)  # subgraphs' too: an earlier repair may have put its names in an If's arms
        self.count = 0

    def name(self, hint: str) -> str:
        while True:
            self.count += 1
            name = f"nan_{hint}_{self.count}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def op(self, op_type: str, inputs: list[str], hint: str, outputs: int = 1, **attrs) -> list[str]:
        names = [self.name(hint) for _ in range(outputs)]
        node = helper.make_node(op_type, inputs, names, name=self.name(f"{hint}_node"), **attrs)
        node.doc_string = _MARK
        self.nodes.append(node)
        return names

    def finish(self, op_type: str, inputs: list[str], output: str, **attrs) -> None:
        """The node writing the repaired op's own output."""
        node = helper.make_node(op_type, inputs, [output], name=self.name(f"{op_type.lower()}_node"), **attrs)
        node.doc_string = _MARK
        self.nodes.append(node)

    def collect(self, build) -> list[onnx.NodeProto]:
        """The nodes `build()` emits, kept apart (a subgraph's body)."""
        outer, self.nodes = self.nodes, []
        build()
        nodes, self.nodes = self.nodes, outer
        return nodes

    def one(self, op_type: str, inputs: list[str], hint: str, **attrs) -> str:
        return self.op(op_type, inputs, hint, **attrs)[0]

    def nan_like(self, x: str) -> str:
        """A NaN scalar of x's dtype."""
        nan = self.one("Constant", [], "nan", value=helper.make_tensor("v", TensorProto.FLOAT, [], [math.nan]))
        return self.one("CastLike", [nan, x], "nan")

    def inf_like(self, x: str) -> str:
        inf = self.one("Constant", [], "inf", value=helper.make_tensor("v", TensorProto.FLOAT, [], [math.inf]))
        return self.one("CastLike", [inf, x], "inf")

    def nan_mask(self, x: str) -> tuple[str, str]:
        """(IsNaN(x), the same as 0/1 in x's dtype)."""
        isnan = self.one("IsNaN", [x], "isnan")
        return isnan, self.one("CastLike", [isnan, x], "isnan_f")


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _rename(node: onnx.NodeProto, outputs: list[str]) -> onnx.NodeProto:
    """The node itself, writing to `outputs` instead."""
    new = onnx.NodeProto()
    new.CopyFrom(node)
    del new.output[:]
    new.output.extend(outputs)
    new.doc_string = _MARK
    return new


def _arg(node, em: _Emitter) -> None:
    # Where x has a NaN along the axis, torch answers the first NaN's index: ArgMax of the NaN mask.
    x, (out,) = node.input[0], node.output
    if em.types.get(x) in _NARROW:
        _arg_widened(node, em)
        return
    inner = em.name("arg")
    em.nodes.append(_rename(node, [inner]))
    _, mask = em.nan_mask(x)
    attrs = _attrs(node)
    first_nan = em.one("ArgMax", [mask], "first_nan", **attrs)
    keepdims, axis = attrs.get("keepdims", 1), attrs.get("axis", 0)
    if em.opset < 18:
        any_nan = em.one("ReduceMax", [mask], "any_nan", keepdims=keepdims, axes=[axis])
    else:
        any_nan = em.one("ReduceMax", [mask, _axes(em, [axis])], "any_nan", keepdims=keepdims)
    em.finish("Where", [em.one("Cast", [any_nan], "any_nan_b", to=TensorProto.BOOL), first_nan, inner], out)


def _arg_widened(node, em: _Emitter) -> None:
    """ArgMax/ArgMin of float32 (or narrower) values, compared as float64, where a NaN can rank beyond ±inf.

    The cast is exact and keeps the order; capping at the largest finite double moves ±inf just inside,
    still beyond every narrower float, and each NaN becomes ±inf: one arg op over the key answers the first
    NaN where there is one, else the values' own first extreme. Five nodes where the mask-based repair
    takes seven (IsNaN, mask, two arg ops, any-NaN reduce and cast, Where); in a loop body every node
    costs about 0.3 us per iteration on onnxruntime's CPU.
    """
    top = node.op_type == "ArgMax"
    wide = em.one("Cast", [node.input[0]], "wide", to=TensorProto.DOUBLE)
    cap = em.one("Constant", [], "cap", value=helper.make_tensor("v", TensorProto.DOUBLE, [],
                                                                   [sys.float_info.max if top else -sys.float_info.max]))
    inf = em.one("Constant", [], "inf", value=helper.make_tensor("v", TensorProto.DOUBLE, [],
                                                                   [math.inf if top else -math.inf]))
    capped = em.one("Min" if top else "Max", [wide, cap], "capped")
    key = em.one("Where", [em.one("IsNaN", [node.input[0]], "isnan"), inf, capped], "key")
    em.finish(node.op_type, [key], node.output[0], **_attrs(node))


def _axes(em: _Emitter, axes: list[int]) -> str:
    return em.one("Constant", [], "axes", value=helper.make_tensor("v", TensorProto.INT64, [len(axes)], axes))


def _window(node, em: _Emitter) -> None:
    # ReduceMax/Min: the same reduction over the NaN mask says which outputs saw a NaN.
    x, out = node.input[0], node.output[0]
    inner = em.name("reduce")
    em.nodes.append(_rename(node, [inner]))
    em.finish("Where", [_saw_nan(node, em, x, "ReduceMax"), em.nan_like(inner), inner], out)


def _saw_nan(node, em: _Emitter, x: str, op: str) -> str:
    """Bool: which outputs of `node` (a reduction or pooling of x) have a NaN in their window."""
    _, mask = em.nan_mask(x)
    seen = em.one(op, [mask, *node.input[1:]], "saw_nan", **_attrs(node))
    return em.one("Cast", [seen], "saw_nan_b", to=TensorProto.BOOL)


def _pool(node, em: _Emitter) -> None:
    # MaxPool reads a large tensor: a pooled NaN mask would cost as much again as the pool. One sum over
    # x (NaN if x holds a NaN) guards it, so the common case pays that sum and an If only.
    x, out = node.input[0], node.output[0]
    inner = em.name("pool")
    em.nodes.append(_rename(node, [inner, *node.output[1:]]))  # MaxPool's indices: as the backend gives them
    total = em.one("ReduceSum", [x], "total", keepdims=0)
    exact = em.collect(lambda: em.finish("Where", [_saw_nan(node, em, x, node.op_type), em.nan_like(inner), inner],
                                         em.name("pool_nan")))
    plain = em.collect(lambda: em.finish("Identity", [inner], em.name("pool_plain")))
    branches = {key: helper.make_graph(nodes, em.name(key), [],
                                       [helper.make_tensor_value_info(nodes[-1].output[0], em.types[x], None)])
                for key, nodes in (("then_branch", exact), ("else_branch", plain))}
    em.finish("If", [em.one("IsNaN", [total], "any_nan")], out, **branches)


def _elementwise(node, em: _Emitter) -> None:
    # Max/Min/Relu/Clip: the result is NaN wherever an input is (Clip's bounds are not data).
    data = list(node.input) if node.op_type in ("Max", "Min") else [node.input[0]]
    (out,) = node.output
    result = em.name("elementwise")
    em.nodes.append(_rename(node, [result]))
    for k, x in enumerate(data):
        isnan = em.one("IsNaN", [x], "isnan")
        target = out if k == len(data) - 1 else em.name("keep_nan")
        em.finish("Where", [isnan, em.nan_like(result), result], target)
        result = target


def _over_nothing(node, em: _Emitter, value: float) -> None:
    # A reduction over no elements: torch's mean is NaN (0/0), onnxruntime's ReduceMean gives 0; TVM's
    # ReduceSum and the like leave their output uninitialised. When x is empty every output element,
    # if there is any, reduces nothing: one Size test, free in the common case.
    x, (out,) = node.input[0], node.output
    inner = em.name("reduce")
    em.nodes.append(_rename(node, [inner]))
    zero = em.one("Constant", [], "zero", value=helper.make_tensor("v", TensorProto.INT64, [], [0]))
    empty = em.one("Equal", [em.one("Size", [x], "size"), zero], "empty")
    identity = em.one("Constant", [], "identity", value=helper.make_tensor("v", TensorProto.FLOAT, [], [value]))
    em.finish("Where", [empty, em.one("CastLike", [identity, inner], "identity"), inner], out)


_IDENTITY = {"ReduceMean": math.nan, "ReduceSum": 0.0, "ReduceSumSquare": 0.0, "ReduceL1": 0.0, "ReduceL2": 0.0,
             "ReduceProd": 1.0, "ReduceLogSumExp": -math.inf}


def _topk(node, em: _Emitter) -> None:
    # torch ranks NaN above +inf (first when largest, last when not): rank it as +inf, gather the values
    # from x. Only a row holding both NaN and +inf can still order those two differently from torch.
    x = node.input[0]
    values, indices = node.output
    attrs = _attrs(node)
    key = em.one("Where", [em.one("IsNaN", [x], "isnan"), em.inf_like(x), x], "key")
    _, idx = em.op("TopK", [key, *node.input[1:]], "topk", outputs=2, **attrs)
    em.finish("Identity", [idx], indices)
    em.finish("GatherElements", [x, idx], values, axis=attrs.get("axis", -1))


_REPAIRS = {"ArgMax": _arg, "ArgMin": _arg, "ReduceMax": _window, "ReduceMin": _window,
            "MaxPool": _pool, "GlobalMaxPool": _pool, "Max": _elementwise, "Min": _elementwise,
            "Relu": _elementwise, "Clip": _elementwise, "TopK": _topk,
            **{op: (lambda node, em: _over_nothing(node, em, _IDENTITY[node.op_type])) for op in _IDENTITY}}


def _values(model: onnx.ModelProto) -> tuple[dict[str, int], set[str]]:
    """Float values of the graph with their element types, and the values whose static shape holds elements."""
    graph = onnx.shape_inference.infer_shapes(model).graph
    values = (*graph.input, *graph.value_info, *graph.output)
    floats = {v.name: v.type.tensor_type.elem_type for v in values if v.type.tensor_type.elem_type in _FLOATS}
    filled = {v.name for v in values if v.type.tensor_type.HasField("shape")
              and all(d.HasField("dim_value") and d.dim_value > 0 for d in v.type.tensor_type.shape.dim)}
    return floats, filled


def _wanted(node: onnx.NodeProto, ops: frozenset) -> bool:
    return node.op_type in ops and node.doc_string != _MARK


def repair(model: onnx.ModelProto, ops: frozenset) -> bool:
    """Rewrite the ops in `ops` that read a float tensor to torch's NaN semantics; True if any was."""
    graph = model.graph
    if not any(_wanted(n, ops) for n in graph.node):
        return False
    floats, filled = _values(model)
    em = _Emitter(graph, next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1), floats)
    changed = False
    for node in graph.node:
        # a reduction of a tensor whose static shape holds elements never reduces nothing
        over_nothing = node.op_type in _IDENTITY and node.input[0] not in filled
        if _wanted(node, ops) and (node.input[0] in floats and node.op_type not in _IDENTITY or over_nothing):
            _REPAIRS[node.op_type](node, em)
            changed = True
        else:
            em.nodes.append(node)
    if changed:
        del graph.node[:]
        graph.node.extend(em.nodes)
    return changed
