"""TVM graphs give torch's answers for infinities and NaN (dycl/backends/tvm_ieee.py), op by op."""
import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from dycl.backends import tvm_ieee
from dycl.backends.tvm import TvmBackend
from dycl.torch_nan import COMMON, repair

NINF, F = -np.inf, np.finfo(np.float32).max
# rows: a max beside -inf, only -inf, the lowest float among -inf, a NaN
X = np.array([[NINF, NINF, 1, 2], [NINF] * 4, [NINF, -F, NINF, NINF], [np.nan, 1, 2, NINF]], np.float32)
T = torch.from_numpy(X)
POOL = {"kernel_shape": [1, 2], "strides": [1, 2]}


def _graph(nodes, x_shape, out_type=TensorProto.FLOAT, inits=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", out_type, None)], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _tvm(tmp_path, model, x):
    repair(model, COMMON)  # as export does
    onnx.save(model, str(tmp_path / "g.onnx"))
    backend = TvmBackend()
    backend.compile(str(tmp_path / "g.onnx"), str(tmp_path / "g.so"))
    return backend.load(str(tmp_path / "g.so"), str(tmp_path))([x])[0]


CASES = {
    "ReduceMax": ([helper.make_node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)], X, T.amax(1)),
    "ReduceMin": ([helper.make_node("ReduceMin", ["x"], ["y"], axes=[1], keepdims=0)], -X, (-T).amin(1)),
    "ArgMax": ([helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], X, T.argmax(1)),
    "ArgMin": ([helper.make_node("ArgMin", ["x"], ["y"], axis=1, keepdims=0)], -X, (-T).argmin(1)),
    "Max": ([helper.make_node("Max", ["x", "x"], ["y"])], X, torch.maximum(T, T)),
    "Min": ([helper.make_node("Min", ["x", "x"], ["y"])], -X, torch.minimum(-T, -T)),
    "MaxPool": ([helper.make_node("MaxPool", ["x"], ["y"], **POOL)], X.reshape(1, 4, 1, 4),
                torch.nn.functional.max_pool2d(T.reshape(1, 4, 1, 4), (1, 2))),
    "GlobalMaxPool": ([helper.make_node("GlobalMaxPool", ["x"], ["y"])], X.reshape(1, 4, 1, 4),
                      T.reshape(1, 4, 1, 4).amax((2, 3), keepdim=True)),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_extremes_at_infinity(tmp_path, op):
    # TVM started these at -3.4e38 (+3.4e38 for min): a row of -inf gave -3.4e38, ArgMax -1.
    nodes, x, expected = CASES[op]
    out_type = TensorProto.INT64 if op.startswith("Arg") else TensorProto.FLOAT
    got = _tvm(tmp_path, _graph(nodes, x.shape, out_type), x)
    np.testing.assert_array_equal(got, expected.numpy())


def test_maximum_of_a_value_with_itself_then_a_matmul(tmp_path):
    # The fuzzer's finding: max(h, h) turned -inf into -3.4e38, so inf + -inf in the MatMul was not NaN.
    w = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    x = np.array([[np.inf, NINF, 1, 2]], np.float32)
    model = _graph([helper.make_node("Max", ["x", "x"], ["m"]), helper.make_node("MatMul", ["m", "w"], ["y"])],
                   x.shape, inits=[helper.make_tensor("w", TensorProto.FLOAT, [4, 3], w.ravel().tolist())])
    expected = torch.maximum(torch.from_numpy(x), torch.from_numpy(x)) @ torch.from_numpy(w)
    assert np.isnan(expected.numpy()).any()
    np.testing.assert_array_equal(_tvm(tmp_path, model, x), expected.numpy())


FOLDS = {  # inside a fused kernel TVM's simplifier folds these to 0
    "t - t": ([helper.make_node("Sub", ["t", "t"], ["y"])], lambda t: t - t),
    "t * 0": ([helper.make_node("Mul", ["t", "zero"], ["y"])], lambda t: t * 0.0),
    "0 * t": ([helper.make_node("Mul", ["zero", "t"], ["y"])], lambda t: 0.0 * t),
    "0 / t": ([helper.make_node("Div", ["zero", "t"], ["y"])], lambda t: 0.0 / t),
}


@pytest.mark.parametrize("fold", sorted(FOLDS))
def test_folds_keep_nan(tmp_path, fold):
    nodes, torch_fn = FOLDS[fold]
    x = np.array([[np.nan, np.inf, NINF, -1.0, 2.0]], np.float32)  # t = x + 1: NaN, inf, -inf, 0, 3
    inits = [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
    model = _graph([helper.make_node("Add", ["x", "one"], ["t"])] + nodes, x.shape, inits=inits)
    expected = torch_fn(torch.from_numpy(x) + 1).numpy()
    got = _tvm(tmp_path, model, x)
    assert np.array_equal(np.isnan(got), np.isnan(expected)), (got, expected)
    np.testing.assert_array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])


def test_repair_leaves_other_graphs_alone():
    model = _graph([helper.make_node("Sub", ["x", "one"], ["y"])], (1, 4),
                   inits=[helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    assert not tvm_ieee.repair(model)
    assert [n.op_type for n in model.graph.node] == ["Sub"]


def test_repairs_one_after_another_keep_names_unique_across_subgraphs():
    # Export repairs MaxPool into an If whose arms name their values nan_*; TVM's repairs ran next and
    # counted only the top-level names, so they reused one of the arms' names (SDN on TVM: "Graph must be in
    # single static assignment (SSA) form ... 'nan_nan_12' has been used as output names multiple times").
    from dycl.torch_nan import TVM_ONLY

    relus = [helper.make_node("Relu", [f"p{k}"], [f"p{k + 1}"]) for k in range(2)]
    model = _graph([helper.make_node("MaxPool", ["x"], ["p0"], **POOL), *relus, helper.make_node("Identity", ["p2"], ["y"])],
                   (1, 4, 1, 4))
    assert repair(model, COMMON) and repair(model, TVM_ONLY)
    outputs = []

    def collect(graph):
        for node in graph.node:
            outputs.extend(o for o in node.output if o)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    collect(attr.g)

    collect(model.graph)
    assert any(n.op_type == "If" for n in model.graph.node)
    assert len(outputs) == len(set(outputs)), sorted(o for o in outputs if outputs.count(o) > 1)
