"""ONNX `LSTM` nodes as the primitive ops they stand for, for backends that lack the op.

TVM's Relax ONNX front end (0.27) has no `LSTM`, so every region with an
`nn.LSTM` or `nn.LSTMCell` (SkipNet's recurrent gate policy) fell back to
onnxruntime. A forward LSTM over a sequence of known length is a fixed chain
of MatMul, Add, Sigmoid, Tanh and Mul per step (ONNX's gate order i, o, f, c):

    gates = X_t·Wᵀ + H·Rᵀ + Wb + Rb;  C = σ(f)⊙C + σ(i)⊙tanh(c);  H = σ(o)⊙tanh(C)

which is what this pass writes in the node's place. Nodes it cannot express
exactly (reverse or bidirectional, peepholes, clipping, other activations,
`sequence_lens`, missing initial states, a sequence length unknown at
conversion) are left as they are, for the backend to refuse.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

__all__ = ["lower_lstm"]

_DEFAULT_ACTIVATIONS = [b"Sigmoid", b"Tanh", b"Tanh"]


def lower_lstm(model: onnx.ModelProto) -> int:
    """Replace every LSTM node of `model`'s main graph that has an exact primitive form; how many were."""
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset < 13 or not any(n.op_type == "LSTM" for n in model.graph.node):
        return 0
    seq_lengths = _seq_lengths(model)
    graph, nodes, lowered = model.graph, [], 0
    for k, node in enumerate(graph.node):
        steps = seq_lengths.get(node.input[0]) if node.op_type == "LSTM" else None
        if steps is None or not _plain(node):
            nodes.append(node)
            continue
        nodes += _Lowering(graph, f"{node.name or 'lstm'}_{k}").lstm(node, steps)
        lowered += 1
    del graph.node[:]
    graph.node.extend(nodes)
    return lowered


def _seq_lengths(model: onnx.ModelProto) -> dict[str, int]:
    """The static first dim of every value shape inference knows it for."""
    inferred = shape_inference.infer_shapes(model).graph
    out = {}
    for info in list(inferred.value_info) + list(inferred.input):
        dims = info.type.tensor_type.shape.dim
        if dims and dims[0].HasField("dim_value"):
            out[info.name] = dims[0].dim_value
    return out


def _plain(node: onnx.NodeProto) -> bool:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    inputs = list(node.input) + [""] * (8 - len(node.input))
    return (attrs.get("direction", b"forward") == b"forward" and "clip" not in attrs
            and attrs.get("input_forget", 0) == 0 and attrs.get("layout", 0) == 0
            and not attrs.get("activation_alpha") and not attrs.get("activation_beta")
            and list(attrs.get("activations", _DEFAULT_ACTIVATIONS)) == _DEFAULT_ACTIVATIONS
            and inputs[4] == "" and inputs[7] == "" and inputs[5] != "" and inputs[6] != "")


class _Lowering:
    """Emits the nodes of one LSTM, with fresh names under `prefix`."""

    def __init__(self, graph: onnx.GraphProto, prefix: str):
        self.graph, self.prefix, self.count, self.nodes = graph, prefix, 0, []

    def _name(self) -> str:
        self.count += 1
        return f"{self.prefix}/{self.count}"

    def op(self, op_type: str, inputs: list[str], outputs: list[str] | None = None, **attrs) -> str:
        outputs = outputs or [self._name()]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self._name(), **attrs))
        return outputs[0]

    def const(self, values) -> str:
        name = self._name()
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
        return name

    def lstm(self, node: onnx.NodeProto, steps: int) -> list[onnx.NodeProto]:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        hidden = attrs["hidden_size"]
        x, w, r = node.input[:3]
        axis0 = self.const([0])
        w_t = self.op("Transpose", [self.op("Squeeze", [w, axis0])])  # [input, 4h]
        r_t = self.op("Transpose", [self.op("Squeeze", [r, axis0])])  # [hidden, 4h]
        bias = None
        if len(node.input) > 3 and node.input[3]:
            b = self.op("Squeeze", [node.input[3], axis0])  # [8h]: Wb then Rb
            bias = self.op("Add", [self._slice(b, 0, 4 * hidden, 0), self._slice(b, 4 * hidden, 8 * hidden, 0)])
        h = self.op("Squeeze", [node.input[5], axis0])  # [batch, hidden]
        c = self.op("Squeeze", [node.input[6], axis0])
        ys = []
        for t in range(steps):
            x_t = self.op("Squeeze", [self._slice(x, t, t + 1, 0), axis0])  # [batch, input]
            gates = self.op("Add", [self.op("MatMul", [x_t, w_t]), self.op("MatMul", [h, r_t])])
            if bias is not None:
                gates = self.op("Add", [gates, bias])
            i, o, f, g = (self._slice(gates, q * hidden, (q + 1) * hidden, 1) for q in range(4))
            c = self.op("Add", [self.op("Mul", [self.op("Sigmoid", [f]), c]),
                                self.op("Mul", [self.op("Sigmoid", [i]), self.op("Tanh", [g])])])
            h = self.op("Mul", [self.op("Sigmoid", [o]), self.op("Tanh", [c])])
            ys.append(self.op("Unsqueeze", [h, axis0]))  # [1, batch, hidden]
        outputs = list(node.output) + [""] * (3 - len(node.output))
        if outputs[0]:
            seq = self.op("Concat", ys, axis=0) if len(ys) > 1 else ys[0]
            self.op("Unsqueeze", [seq, self.const([1])], [outputs[0]])  # [seq, 1, batch, hidden]
        if outputs[1]:
            self.op("Unsqueeze", [h, axis0], [outputs[1]])
        if outputs[2]:
            self.op("Unsqueeze", [c, axis0], [outputs[2]])
        return self.nodes

    def _slice(self, value: str, start: int, end: int, axis: int) -> str:
        return self.op("Slice", [value, self.const([start]), self.const([end]), self.const([axis])])
