"""Give TVM's graphs torch's (IEEE) answers for infinities and NaN where TVM's lowering loses them.

Extremes. TVM lowers every op that picks an extreme — ReduceMax/Min, MaxPool,
ArgMax/Min, and an n-ary Max/Min, which its ONNX front end writes as a stack
and a reduction — to a reduction that starts at the largest finite float, not
at an infinity. A window holding only -inf then answers -3.4e38 (ArgMax: index
-1), and `torch.maximum(h, h)` turns a -inf into -3.4e38, so that `+inf + -inf`
in the next Linear gives a number where torch gives NaN. (onnxruntime's
GlobalMaxPool does the same.) Rewritten: Max/Min of two or more inputs as a
chain of `Where(a < b, b, a)`, exact at every value (NaN is the NaN repair's,
`torch_nan`); a max/min reduction or pool as the node plus the same reduction
over "this element is above -inf" (below +inf for min), which says where the
window held nothing but the infinity; an ArgMax/Min that answered -1 as the
first element above -inf (below +inf), or 0.

Folds. TVM's simplifier applies `e - e = 0`, `e * 0 = 0` and `0 / e = 0` to
floats once fused kernels are inlined, where the first two are NaN for a NaN
or infinite e, and the third for a NaN or zero e. Rewritten: the node, then
NaN where e is such a value.
"""
from __future__ import annotations

import math

import onnx
from onnx import TensorProto, helper

from ..torch_nan import _attrs, _Emitter, _values

__all__ = ["repair", "OPS"]

OPS = frozenset({"Max", "Min", "ReduceMax", "ReduceMin", "MaxPool", "GlobalMaxPool", "ArgMax", "ArgMin", "Sub", "Mul",
                 "Div"})
_FOLDS = ("Sub", "Mul", "Div")
_MARK = "dycl: TVM IEEE semantics"
_MAXIMA = {"Max", "ReduceMax", "MaxPool", "GlobalMaxPool", "ArgMax"}


def _constant(em: _Emitter, x: str, value: float, hint: str) -> str:
    c = em.one("Constant", [], hint, value=helper.make_tensor("v", TensorProto.FLOAT, [], [value]))
    return em.one("CastLike", [c, x], hint)


def _emit(em: _Emitter, op_type: str, inputs: list[str], outputs: list[str], **attrs) -> None:
    node = helper.make_node(op_type, inputs, outputs, name=em.name(f"{op_type.lower()}_node"), **attrs)
    node.doc_string = _MARK
    em.nodes.append(node)


def _pairwise(node, em: _Emitter) -> None:
    # Max(a, b, ...) as Where(a < b, b, a) (Min: b < a), pairwise: broadcasting as Max does.
    maximum = node.op_type == "Max"
    inputs, (out,) = list(node.input), node.output
    result = inputs[0]
    for k, other in enumerate(inputs[1:], 1):
        target = out if k == len(inputs) - 1 else em.name("extreme")
        less = em.one("Less", [result, other] if maximum else [other, result], "less")
        _emit(em, "Where", [less, other, result], [target])
        result = target
    if len(inputs) == 1:
        _emit(em, "Identity", inputs, [out])


def _window(node, em: _Emitter) -> None:
    # The node, then where its window held no element beyond the infinity, that infinity.
    maximum = node.op_type in _MAXIMA
    x, out = node.input[0], node.output[0]
    inner = em.name("extreme")
    renamed = onnx.NodeProto()
    renamed.CopyFrom(node)
    renamed.output[0] = inner
    renamed.doc_string = _MARK
    em.nodes.append(renamed)
    inf = _constant(em, x, -math.inf if maximum else math.inf, "inf")
    beyond = em.one("CastLike", [em.one("Greater" if maximum else "Less", [x, inf], "finite_side"), x], "beyond")
    seen = em.name("seen")  # a max of 0/1 values: its lowest start is beaten by 0
    _emit(em, "ReduceMax" if node.op_type.startswith("Reduce") else node.op_type, [beyond, *node.input[1:]], [seen],
          **_attrs(node))  # (MaxPool's indices stay as the backend gives them)
    seen_b = em.one("Cast", [seen], "seen_b", to=TensorProto.BOOL)
    _emit(em, "Where", [seen_b, inner, inf], [out])


def _arg(node, em: _Emitter) -> None:
    # -1 where every element is -inf (ArgMin: +inf) or the lowest float: the first above -inf, else 0.
    maximum = node.op_type == "ArgMax"
    x, (out,) = node.input[0], node.output
    inner = em.name("arg")
    renamed = onnx.NodeProto()
    renamed.CopyFrom(node)
    renamed.output[0] = inner
    renamed.doc_string = _MARK
    em.nodes.append(renamed)
    inf = _constant(em, x, -math.inf if maximum else math.inf, "inf")
    beyond = em.one("CastLike", [em.one("Greater" if maximum else "Less", [x, inf], "finite_side"), x], "beyond")
    first = em.name("first")
    _emit(em, "ArgMax", [beyond], [first], **_attrs(node))
    zero = em.one("Constant", [], "zero", value=helper.make_tensor("v", TensorProto.INT64, [], [0]))
    _emit(em, "Where", [em.one("Less", [inner, zero], "missed"), first, inner], [out])


def _zeros(graph: onnx.GraphProto) -> set[str]:
    """Values that are constants holding only zeros."""
    from onnx import numpy_helper

    found = {i.name for i in graph.initializer if not numpy_helper.to_array(i).any()}
    for n in graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value" \
                and not numpy_helper.to_array(n.attribute[0].t).any():
            found.add(n.output[0])
    return found


def _folded(node, zeros: set[str]) -> str | None:
    """The value `e` of `e - e`, `e * 0` or `0 / e`, which TVM folds to 0."""
    a, b = node.input[0], node.input[1]
    if node.op_type == "Sub":
        return a if a == b else None
    if node.op_type == "Div":
        return b if a in zeros else None
    return b if a in zeros else a if b in zeros else None


def _guard(node, em: _Emitter, e: str) -> None:
    # The node, then NaN where e is NaN or infinite (0 * inf, inf - inf), or for 0 / e, NaN or 0.
    inner = em.name("folded")
    renamed = onnx.NodeProto()
    renamed.CopyFrom(node)
    renamed.output[0] = inner
    renamed.doc_string = _MARK
    em.nodes.append(renamed)
    if node.op_type == "Div":
        other = em.one("Equal", [e, _constant(em, e, 0.0, "zero")], "zero_divisor")
    else:
        other = em.one("IsInf", [e], "isinf")
    nonfinite = em.one("Or", [em.one("IsNaN", [e], "isnan"), other], "nan_result")
    _emit(em, "Where", [nonfinite, _constant(em, inner, math.nan, "nan"), inner], [node.output[0]])


_REPAIRS = {"Max": _pairwise, "Min": _pairwise, "ReduceMax": _window, "ReduceMin": _window, "MaxPool": _window,
            "GlobalMaxPool": _window, "ArgMax": _arg, "ArgMin": _arg}


def repair(model: onnx.ModelProto) -> bool:
    """Rewrite `model`'s float max/min nodes and folded `e - e`, `e * 0`, `0 / e` (see the module's docstring);
    True if any was."""
    graph = model.graph
    if not any(n.op_type in OPS and n.doc_string != _MARK for n in graph.node):
        return False
    floats, _ = _values(model)
    zeros = _zeros(graph)
    em = _Emitter(graph, next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1), floats)
    changed = False
    for node in graph.node:
        if node.op_type not in OPS or node.doc_string == _MARK or not any(i in floats for i in node.input[:1 + (
                node.op_type in _FOLDS)]):
            em.nodes.append(node)
        elif node.op_type in _FOLDS:
            e = _folded(node, zeros)
            if e is None:
                em.nodes.append(node)
            else:
                _guard(node, em, e)
                changed = True
        else:
            _REPAIRS[node.op_type](node, em)
            changed = True
    if changed:
        del graph.node[:]
        graph.node.extend(em.nodes)
    return changed
