"""A region's graph with its weights as inputs, named canonically, so that same-shaped regions share it.

TVM compiles every distinct graph with LLVM and links a shared library for
it: 0.3-3 s each. A ResNet's blocks are one graph with different weights, and
with the weights compiled in, BlockDrop-110 compiled 58 libraries (21 s of its
29 s conversion). Here each weight becomes a graph input after the region's
own inputs (one per use, so that the exporter's sharing of equal tensors
never tells two blocks apart), and every other name is replaced by one derived
from its position, so that the graphs of two blocks are the same bytes.

A weight is lifted only where it is plain data of an op that computes a new
array from it and from the region's inputs: a convolution's kernel, a matrix
product's operand, a normalisation's scale. Shape operands (a Reshape's
target, a Resize's scales) stay constants, since TVM needs them to know
shapes; so does anything that depends on the weights alone (it is folded at
compile time), and any use in a view (Reshape, Identity), which would make a
region's output an alias of its weights.
"""
from __future__ import annotations

import onnx
from onnx import helper, numpy_helper

from .tvm_params import RegionWeights

__all__ = ["lift_weights", "NUM_INPUT"]

NUM_INPUT = "dycl.num_input"  # metadata: how many leading graph inputs are the region's (the rest: weights)

# The inputs of each op where a weight may become a graph input.
_DATA_INPUTS = {
    "Conv": {1, 2}, "ConvTranspose": {1, 2}, "Gemm": {0, 1, 2}, "MatMul": {0, 1},
    "Add": {0, 1}, "Sub": {0, 1}, "Mul": {0, 1}, "Div": {0, 1},
    "BatchNormalization": {1, 2, 3, 4}, "InstanceNormalization": {1, 2}, "LayerNormalization": {1, 2},
    "GroupNormalization": {1, 2}, "PRelu": {1}, "Gather": {0}, "LSTM": {1, 2, 3}, "Where": {1, 2},
}
_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE}


def lift_weights(model: onnx.ModelProto) -> tuple[onnx.ModelProto, RegionWeights | None]:
    """`model` with its weights as inputs and canonical names, and the weights (None: nothing lifted).

    A graph with subgraphs (If, Loop) is only renamed where it is safe to: not at all.
    """
    graph = model.graph
    if model.functions or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in graph.node for a in n.attribute):
        return model, None
    inits = {t.name: t for t in graph.initializer}
    alias = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity" and n.input[0] in inits}
    outputs = {o.name for o in graph.output}
    nodes = [n for n in graph.node if not (n.output[0] in alias and n.output[0] not in outputs)]
    live = {i.name for i in graph.input if i.name not in inits}  # values that depend on the region's inputs
    params: list[tuple[str, onnx.TypeProto]] = []
    arrays: dict[str, int] = {}  # initializer -> its index among the lifted arrays
    uses: list[int] = []
    lifted_nodes = []
    for node in nodes:
        inputs = [alias.get(name, name) if name not in outputs else name for name in node.input]
        depends = any(name in live for name in inputs)
        for k, name in enumerate(inputs):
            tensor = inits.get(name)
            if depends and tensor is not None and _liftable(node.op_type, k, tensor):
                param = f"p{len(params)}"
                params.append((param, helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))))
                uses.append(arrays.setdefault(name, len(arrays)))
                inputs[k] = param
        if depends:
            live.update(o for o in node.output if o)
        lifted = onnx.NodeProto()
        lifted.CopyFrom(node)
        del lifted.input[:]
        lifted.input.extend(inputs)
        lifted_nodes.append(lifted)
    if not params:
        weights = None
    else:
        order = sorted(arrays, key=arrays.get)
        weights = RegionWeights([numpy_helper.to_array(inits[name]) for name in order], uses)
    return _canonical(model, lifted_nodes, params), weights


def _liftable(op_type: str, position: int, tensor: onnx.TensorProto) -> bool:
    return position in _DATA_INPUTS.get(op_type, ()) and tensor.data_type in _FLOATS \
        and tensor.data_location != onnx.TensorProto.EXTERNAL


def _canonical(model: onnx.ModelProto, nodes: list[onnx.NodeProto], params) -> onnx.ModelProto:
    """The graph of `nodes` with names from positions only: inputs, params, outputs kept; t<k>, c<k> else."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    keep = {i.name for i in graph.input} | {o.name for o in graph.output} | {p for p, _ in params} | {""}
    names: dict[str, str] = {}
    counts = {"c": 0, "t": 0}  # constants, other values

    def rename(name: str) -> str:
        if name in keep:
            return name
        if name not in names:
            kind = "c" if name in inits else "t"
            names[name] = f"{kind}{counts[kind]}"
            counts[kind] += 1
        return names[name]

    out_nodes = []
    for node in nodes:
        fresh = helper.make_node(node.op_type, [rename(n) for n in node.input], [rename(n) for n in node.output],
                                 domain=node.domain or None)
        fresh.attribute.extend(node.attribute)
        out_nodes.append(fresh)
    constants = []
    for name, new in names.items():
        if name in inits:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(inits[name])
            tensor.name = new
            tensor.ClearField("doc_string")
            constants.append(tensor)
    region_inputs = [i for i in graph.input if i.name not in inits]
    inputs = [_value(i.name, i.type) for i in region_inputs] + [_value(p, t) for p, t in params]
    lifted = helper.make_graph(out_nodes, "region", inputs, [_value(o.name, o.type) for o in graph.output],
                               initializer=constants)
    out = helper.make_model(lifted, opset_imports=list(model.opset_import), ir_version=model.ir_version,
                            producer_name="dycl")
    out.metadata_props.add(key=NUM_INPUT, value=str(len(region_inputs)))
    return out


def _value(name: str, type_proto: onnx.TypeProto) -> onnx.ValueInfoProto:
    info = onnx.ValueInfoProto()
    info.name = name
    info.type.CopyFrom(type_proto)
    return info
