"""Keep TVM's kernels off axes of length 0, where their lowering reads or writes outside the buffers.

CumSum. TVM's scan over an axis of length 0 divides by that length (the
process dies of SIGFPE) or, fused into a bigger kernel, writes past its
output and corrupts the converting process's heap, which then aborts at some
later, unrelated place. Such axes are ordinary in dynamic code: a router that
sees no tokens, a prefix of length 0. Rewritten: the scan runs over the input
with one zero appended along the axis (prepended for a reverse scan), and the
extra element is sliced off again. The answer is the same at every length,
NaN and infinities included, since the zero is added to nothing that is kept.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper, numpy_helper

from ..onnx_graph import all_names

__all__ = ["repair"]

_MARK = "dycl: TVM empty axis"
_INT64_MAX = 2**63 - 1


def _constants(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    found = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = node.attribute[0].t
    return found


class _Names:
    def __init__(self, graph: onnx.GraphProto):
        self.taken = all_names(graph)  # initializers, node names and subgraphs' too, as the NaN repairs take them
        self.count = 0

    def __call__(self, hint: str) -> str:
        while True:
            self.count += 1
            name = f"empty_{hint}_{self.count}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def _node(nodes: list, names: _Names, op_type: str, inputs: list[str], output: str | None = None, **attrs) -> str:
    output = output or names(op_type.lower())
    node = helper.make_node(op_type, inputs, [output], name=names(f"{op_type.lower()}_node"), **attrs)
    node.doc_string = _MARK
    nodes.append(node)
    return output


def _ints(nodes: list, names: _Names, values: list[int]) -> str:
    return _node(nodes, names, "Constant", [], value=helper.make_tensor("v", TensorProto.INT64, [len(values)], values))


def _padded_cumsum(node, axis: int, opset: int, nodes: list, names: _Names) -> None:
    # A zero shaped like x with the axis at length 1, from no shape arithmetic (TVM's front end takes
    # little of it): the sum over the axis, as bool, xor itself, back in x's type.
    x, axis_input = node.input[0], node.input[1]
    if opset >= 13:
        total = _node(nodes, names, "ReduceSum", [x, _ints(nodes, names, [axis])], keepdims=1)
    else:
        total = _node(nodes, names, "ReduceSum", [x], axes=[axis], keepdims=1)
    truth = _node(nodes, names, "Cast", [total], to=TensorProto.BOOL)
    zero = _node(nodes, names, "CastLike", [_node(nodes, names, "Xor", [truth, truth]), x])
    reverse = any(a.name == "reverse" and a.i for a in node.attribute)
    padded = _node(nodes, names, "Concat", [zero, x] if reverse else [x, zero], axis=axis)
    scanned = names("scan")
    scan = helper.make_node("CumSum", [padded, axis_input], [scanned], name=node.name or names("cumsum_node"))
    scan.attribute.extend(node.attribute)
    scan.doc_string = _MARK
    nodes.append(scan)
    starts, ends = ([1], [_INT64_MAX]) if reverse else ([0], [-1])
    _node(nodes, names, "Slice", [scanned, _ints(nodes, names, starts), _ints(nodes, names, ends),
                                  _ints(nodes, names, [axis])], output=node.output[0])


def repair(model: onnx.ModelProto) -> bool:
    """Rewrite `model`'s top-level CumSum nodes as above; True if any was. A CumSum whose axis is not a
    constant is left as it is (torch's export always gives a constant)."""
    graph = model.graph
    if not any(n.op_type == "CumSum" and n.doc_string != _MARK for n in graph.node):
        return False
    constants, names, nodes = _constants(graph), _Names(graph), []
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    changed = False
    for node in graph.node:
        axis = constants.get(node.input[1]) if node.op_type == "CumSum" and len(node.input) > 1 else None
        if axis is None or node.doc_string == _MARK:
            nodes.append(node)
            continue
        _padded_cumsum(node, int(numpy_helper.to_array(axis).reshape(-1)[0]), opset, nodes, names)
        changed = True
    if changed:
        del graph.node[:]
        graph.node.extend(nodes)
    return changed
