"""A NaN anywhere in the input decides and computes as in torch, on every backend."""
import os

import numpy as np
import onnx
import pytest
import torch

from conftest import MODELS
from dycl.compare import RewriteMismatch, compare, to_numpy

MODEL = os.path.join(MODELS, "nan_decisions.py")


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_nan_at_every_position_takes_torch_branch(converted, backend):
    import dycl

    result = converted(MODEL, backend=backend, check=6)
    net = dycl.load(result.out)
    for position in range(result.spec.inputs[0].shape[1]):
        x = result.spec.inputs[0].clone()
        x[0, position] = float("nan")
        with torch.no_grad():
            expected = to_numpy(result.spec.model(x))
        got = net(x.numpy())
        assert got[0] == expected[0] == position, f"NaN at {position}: took another branch"
        compare(expected, got, f"NaN at {position}")


def test_compare_sees_nan_where_there_was_none():
    expected = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    with pytest.raises(RewriteMismatch, match="NaN at different positions"):
        compare(expected, np.array([1.0, 2.0, 3.0], dtype=np.float32), "out")
    inf = np.array([np.inf, np.nan, -np.inf], dtype=np.float32)
    assert compare(inf, inf.copy(), "out") == 0.0


def test_repair_leaves_integer_ops_and_is_idempotent():
    from onnx import TensorProto, helper

    from dycl.torch_nan import COMMON, repair

    x = helper.make_tensor_value_info("x", TensorProto.INT64, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2, 1])
    graph = helper.make_graph([helper.make_node("ArgMax", ["x"], ["y"], axis=1)], "g", [x], [y])
    assert not repair(helper.make_model(graph), COMMON)
    xf = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    model = helper.make_model(helper.make_graph([helper.make_node("ArgMax", ["x"], ["y"], axis=1)], "g", [xf], [y]))
    assert repair(model, COMMON)
    n = len(model.graph.node)
    assert not repair(model, COMMON) and len(model.graph.node) == n
    onnx.checker.check_model(model)


@pytest.mark.parametrize("dims, guarded", [([2, 3], False), (["n", 3], True), ([0, 3], True)])
def test_mean_of_nothing_is_guarded_only_where_the_shape_can_be_empty(dims, guarded):
    """torch's mean of nothing is NaN, onnxruntime's 0: the guard (a Size test) goes where x may be empty."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from dycl.torch_nan import COMMON, repair

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([helper.make_node("ReduceMean", ["x"], ["y"], keepdims=0)], "g",
                                                [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    assert repair(model, COMMON) == guarded
    assert ("Size" in [n.op_type for n in model.graph.node]) == guarded
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    shape = [0 if d == "n" else d for d in dims]
    (got,) = session.run(None, {"x": np.ones(shape, np.float32)})
    expected = torch.ones(shape).mean().numpy()
    np.testing.assert_array_equal(got, expected)


def test_compare_is_relative_above_one():
    # Found by the fuzzer (tests/models/fuzz_large_magnitudes.py): at 1e8 float32 results computed two ways
    # differ by units, which an absolute bound of 1e-4 called a wrong answer.
    assert compare(np.array([1e8], np.float32), np.array([1e8 + 8], np.float32), "out") == pytest.approx(8e-8)
    assert compare(np.array([0.5]), np.array([0.5002]), "out") == pytest.approx(2e-4)  # absolute below 1
    assert compare(np.array([-4e9]), np.array([-4.4e9]), "out") == pytest.approx(0.1)
    assert compare(np.array([np.inf]), np.array([3.0]), "out") == np.inf == compare(np.array([3.0]), np.array([np.inf]), "out")
    assert compare(2.0, 2.5, "out") == 0.25


def test_package_with_large_magnitudes_passes_its_check(converted):
    result = converted(os.path.join(MODELS, "fuzz_large_magnitudes.py"), check=20)
    assert result.check.passed and result.check.delta <= 1e-4


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("elem", [onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_repaired_arg_ops_answer_as_torch_does(op, elem, keepdims):
    """The first NaN wins, also over ±inf before it and over the largest finite value; without NaN, the
    first extreme. Float32 and float16 compare as float64 in five nodes; float64 keeps the mask repair."""
    import onnxruntime as ort
    import torch
    from onnx import helper

    from dycl.torch_nan import COMMON, repair

    big = {onnx.TensorProto.FLOAT: np.finfo(np.float32).max, onnx.TensorProto.FLOAT16: np.finfo(np.float16).max,
           onnx.TensorProto.DOUBLE: np.finfo(np.float64).max}[elem]
    dtype = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
             onnx.TensorProto.DOUBLE: np.float64}[elem]
    nan, inf = np.nan, np.inf
    rows = [[1, nan, 3, nan, 0], [inf, 2, nan, 1, -inf], [-inf, 2, nan, 1, inf], [big, inf, -big, -inf, 0],
            [-big, -inf, big, inf, -inf], [nan, nan, nan, nan, nan], [3, 1, 3, 1, 2], [0, 0, 0, 0, 0],
            [2, -inf, -inf, nan, 5]]
    x = np.array(rows, dtype=dtype)
    shape = [len(rows), 1] if keepdims else [len(rows)]
    model = helper.make_model(helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], axis=1, keepdims=keepdims)], "g",
        [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT64, shape)]),
        opset_imports=[helper.make_opsetid("", 17)])
    assert repair(model, COMMON)
    ops = [n.op_type for n in model.graph.node if n.op_type != "Constant"]
    assert len(ops) == (5 if elem != onnx.TensorProto.DOUBLE else 7), ops
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    fn = torch.argmax if op == "ArgMax" else torch.argmin
    expected = fn(torch.from_numpy(x.astype(np.float64) if elem == onnx.TensorProto.FLOAT16 else x), dim=1,
                  keepdim=bool(keepdims)).numpy()
    np.testing.assert_array_equal(got, expected)
