"""Loop-invariant addends of a recurrent Gemm's gates folded into its bias: same outputs, fewer Adds per iteration."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from dycl.fuse.addends import fold_addends

H = 4
RNG = np.random.default_rng(1)


def _run(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _gru_loop(rows=2, addend_rows=None, inside=False):
    """A GRU-like step: r, z, n = split(h @ W.T + b); r += xr; z += xz (xr, xz from outside the loop,
    or computed in the body when `inside`); h = tanh(n * sigmoid(r)) * sigmoid(z); M trips, scanning h."""
    addend_rows = addend_rows or rows
    pre = [h.make_node("Neg", ["xr"], ["xr_body"])] if inside else []
    xr = "xr_body" if inside else "xr"
    body = h.make_graph(
        [*pre,
         h.make_node("Gemm", ["h_in", "w", "b"], ["g"], transB=1),
         h.make_node("Split", ["g", "widths"], ["r0", "z0", "n"], axis=1),
         h.make_node("Add", ["r0", xr], ["r"]),
         h.make_node("Add", ["xz", "z0"], ["z"]),
         h.make_node("Sigmoid", ["r"], ["rs"]),
         h.make_node("Sigmoid", ["z"], ["zs"]),
         h.make_node("Mul", ["n", "rs"], ["nr"]),
         h.make_node("Tanh", ["nr"], ["t"]),
         h.make_node("Mul", ["t", "zs"], ["h_out"]),
         h.make_node("Identity", ["h_out"], ["h_scan"]),
         h.make_node("Identity", ["c"], ["c_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("h_in", T.FLOAT, None)],
        [h.make_tensor_value_info("c_out", T.BOOL, None), h.make_tensor_value_info("h_out", T.FLOAT, None),
         h.make_tensor_value_info("h_scan", T.FLOAT, None)],
        [numpy_helper.from_array(RNG.standard_normal((3 * H, H)).astype(np.float32), "w"),
         numpy_helper.from_array(RNG.standard_normal(3 * H).astype(np.float32), "b"),
         numpy_helper.from_array(np.array([H, H, H], np.int64), "widths")])
    graph = h.make_graph(
        [h.make_node("Loop", ["M", "", "h0"], ["h_last", "hs"], body=body)], "g",
        [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("h0", T.FLOAT, [rows, H]),
         h.make_tensor_value_info("xr", T.FLOAT, [addend_rows, H]), h.make_tensor_value_info("xz", T.FLOAT, [rows, H])],
        [h.make_tensor_value_info("h_last", T.FLOAT, None), h.make_tensor_value_info("hs", T.FLOAT, None)])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])


def _feeds(trips, rows=2, addend_rows=None):
    return {"M": np.array(trips, np.int64), "h0": RNG.standard_normal((rows, H)).astype(np.float32),
            "xr": RNG.standard_normal((addend_rows or rows, H)).astype(np.float32),
            "xz": RNG.standard_normal((rows, H)).astype(np.float32)}


def _folded(model, declared):
    after = onnx.ModelProto()
    after.CopyFrom(model)
    return after, fold_addends(after, declared)


def _body_ops(model):
    return [n.op_type for n in model.graph.node[-1].attribute[0].g.node]


@pytest.mark.parametrize("trips", [0, 1, 3])
def test_gate_addends_join_the_bias_before_the_loop(trips):
    before = _gru_loop()
    after, count = _folded(before, {"h_in": [2, H]})
    assert count == 1
    assert "Add" not in _body_ops(after)
    assert [n.op_type for n in after.graph.node][:-1] == ["Concat", "Add"]  # once, before the loop
    feeds = _feeds(trips)
    for want, got in zip(_run(before, feeds), _run(after, feeds)):
        assert want.shape == got.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_addend_that_broadcasts_stays():
    """A [1, H] addend on [2, H] gates: `+` broadcasts it, the bias of a Gemm would too, but only the
    folded shape that matches exactly is taken (the other Add stays)."""
    before = _gru_loop(addend_rows=1)
    after, count = _folded(before, {"h_in": [2, H]})
    assert count == 1 and _body_ops(after).count("Add") == 1
    feeds = _feeds(2, addend_rows=1)
    for want, got in zip(_run(before, feeds), _run(after, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_addend_the_body_computes_stays():
    before = _gru_loop(inside=True)
    after, count = _folded(before, {"h_in": [2, H]})
    assert count == 1 and _body_ops(after).count("Add") == 1  # xz folds, the body's own -xr does not


def test_unknown_state_shape_folds_nothing():
    before = _gru_loop()
    after, count = _folded(before, {})
    assert count == 0 and _body_ops(after).count("Add") == 2


def test_product_the_body_returns_as_it_is_is_left_alone():
    """Found by tests/models/fuzz_unrolled_fusion.py: a Gemm whose only use is the body's output."""
    body = h.make_graph(
        [h.make_node("Gemm", ["h_in", "w", "b"], ["h_out"], transB=1), h.make_node("Identity", ["c"], ["c_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("h_in", T.FLOAT, None)],
        [h.make_tensor_value_info("c_out", T.BOOL, None), h.make_tensor_value_info("h_out", T.FLOAT, None)],
        [numpy_helper.from_array(RNG.standard_normal((H, H)).astype(np.float32), "w"),
         numpy_helper.from_array(RNG.standard_normal(H).astype(np.float32), "b")])
    graph = h.make_graph([h.make_node("Loop", ["M", "", "h0"], ["h_last"], body=body)], "g",
                         [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("h0", T.FLOAT, [2, H])],
                         [h.make_tensor_value_info("h_last", T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    assert fold_addends(model, {"h_in": [2, H]}) == 0
