"""Input projections hoisted out of fused loops: same outputs on every trip count, fewer nodes per iteration."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from dycl.fuse.hoist import hoist

B, V, E, H, STEPS = 2, 7, 5, 6, 4
RNG = np.random.default_rng(0)


def _run(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _init(name, shape):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def _cell(row_nodes, extra_inits=(), h_rows=B):
    """A loop of `h = tanh(h @ W_hh.T + b_hh + row @ W_ih.T + b_ih)` for M trips (and while the sum of h
    stays below a limit), `row` computed by `row_nodes` from the iteration number; scans h."""
    body = h.make_graph(
        [*row_nodes,
         h.make_node("Gemm", ["row", "w_ih", "b_ih"], ["x_part"], transB=1),
         h.make_node("Gemm", ["h_in", "w_hh", "b_hh"], ["h_part"], transB=1),
         h.make_node("Add", ["h_part", "x_part"], ["pre"]),
         h.make_node("Tanh", ["pre"], ["h_out"]),
         h.make_node("ReduceSum", ["h_out"], ["total"], keepdims=0),
         h.make_node("Less", ["total", "limit"], ["go_on"]),
         h.make_node("Identity", ["h_out"], ["h_scan"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("h_in", T.FLOAT, None)],
        [h.make_tensor_value_info("go_on", T.BOOL, None), h.make_tensor_value_info("h_out", T.FLOAT, None),
         h.make_tensor_value_info("h_scan", T.FLOAT, None)],
        [_init("w_hh", [H, H]), _init("b_hh", [H]), _init("w_ih", [H, E]), _init("b_ih", [H]), *extra_inits])
    graph = h.make_graph(
        [h.make_node("Loop", ["M", "true", "h0"], ["h_last", "hs"], body=body)],
        "g",
        [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("h0", T.FLOAT, [h_rows, H]),
         h.make_tensor_value_info("toks", T.INT64, [STEPS, B]), h.make_tensor_value_info("x", T.FLOAT, [B, STEPS, E]),
         h.make_tensor_value_info("xt", T.FLOAT, [B, E, STEPS]),
         h.make_tensor_value_info("limit", T.FLOAT, [])],
        [h.make_tensor_value_info("h_last", T.FLOAT, None), h.make_tensor_value_info("hs", T.FLOAT, None)],
        [numpy_helper.from_array(np.array(True), "true")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])


def _embedding_loop(h_rows=B):
    """`row = embed[toks[i]]`: a constant table."""
    return _cell([h.make_node("Gather", ["toks", "i"], ["tok"], axis=0),
                  h.make_node("Gather", ["embed", "tok"], ["row"], axis=0)], [_init("embed", [V, E])], h_rows)


def _sequence_loop():
    """`row = x[:, i]`: a graph input read from inside the loop."""
    return _cell([h.make_node("Gather", ["x", "i"], ["row"], axis=1)])


def _feeds(trips, limit=1e9, h_rows=B):
    return {"M": np.array(trips, np.int64), "h0": RNG.standard_normal((h_rows, H)).astype(np.float32),
            "toks": RNG.integers(0, V, (STEPS, B)).astype(np.int64),
            "x": RNG.standard_normal((B, STEPS, E)).astype(np.float32),
            "xt": RNG.standard_normal((B, E, STEPS)).astype(np.float32), "limit": np.array(limit, np.float32)}


def _body_ops(model) -> list[str]:
    return [n.op_type for n in model.graph.node[-1].attribute[0].g.node]


def _same(before, after, feeds):
    want, got = _run(before, feeds), _run(after, feeds)
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("trips", [0, 1, 2, STEPS])
@pytest.mark.parametrize("make", [_embedding_loop, _sequence_loop])
def test_hoisted_loop_keeps_outputs_and_runs_one_product_per_iteration(make, trips):
    before = make()
    after = onnx.ModelProto()
    after.CopyFrom(before)
    assert hoist(after, {"h_in": [B, H]}) == 1
    assert _body_ops(after).count("Gemm") == 1 and "Add" not in _body_ops(after)
    for limit in (1e9, 0.0):  # every trip, and a stop after the first (the condition, not the count)
        _same(before, after, _feeds(trips, limit))


def test_sequence_projection_runs_once_before_the_loop():
    after = _sequence_loop()
    hoist(after, {"h_in": [B, H]})
    top = [n.op_type for n in after.graph.node]
    assert top.index("MatMul") < top.index("Loop")
    gather = next(n for n in after.graph.node[-1].attribute[0].g.node if n.op_type == "Gather")
    assert gather.input[0] != "x"


def test_products_of_unknown_shape_keep_their_add():
    """Without the carried state's shape, a Gemm's one-way broadcast of C might not match `+`."""
    before = _embedding_loop()
    after = onnx.ModelProto()
    after.CopyFrom(before)
    assert hoist(after) == 1
    assert _body_ops(after).count("Gemm") == 1 and "Add" in _body_ops(after)
    _same(before, after, _feeds(3))


def test_state_that_broadcasts_keeps_its_add():
    """`h` with one row plus two gathered rows: `+` broadcasts both ways, a Gemm's C would not."""
    before = _embedding_loop(h_rows=1)
    after = onnx.ModelProto()
    after.CopyFrom(before)
    hoist(after, {"h_in": [1, H]})
    assert "Add" in _body_ops(after)
    _same(before, after, _feeds(1, h_rows=1))


def test_gather_along_the_product_axis_stays():
    """`xt[:, :, i]` (xt: [B, E, steps]) takes a column of the axis a row-wise product would read."""
    model = _cell([h.make_node("Gather", ["xt", "i"], ["row"], axis=2)])
    assert hoist(model, {"h_in": [B, H]}) == 0
    assert _body_ops(model).count("Gemm") == 2


def test_rows_the_loop_computes_stay():
    """A table the body computes (here from the carried state) can change each iteration."""
    model = _cell([h.make_node("Unsqueeze", ["h_in", "one"], ["sq"]),
                   h.make_node("Gather", ["sq", "i"], ["row"], axis=1)],
                  [numpy_helper.from_array(np.array([1], np.int64), "one")])
    assert hoist(model, {"h_in": [B, H]}) == 0
