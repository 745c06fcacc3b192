"""fuse/peel: a loop's first iteration peeled off so that the work it repeats runs once, with the same answers.

The loop here is ACT's: a carried flag the body resets to zeros, concatenated with an outer input and
projected; each case is run by onnxruntime before and after the peel, on loops that run no, one, two and
many iterations, stopped by the trip count or by the condition.
"""
import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dycl.fuse.peel import peel

RNG = np.random.default_rng(0)


def _loop_model(settles: bool = True, reads_iteration: bool = False, shaped: bool = False) -> onnx.ModelProto:
    """while n < limit (at most M times): s = tanh(cat([x, flag]) @ W + s @ U); flag = 0; n += 1.

    `shaped`: the flag settles to zeros of the shape the input `flag_shape` gives, so that a second iteration
    fails where that is not [1, 1].
    """
    inits = [numpy_helper.from_array(RNG.standard_normal((5, 4)).astype(np.float32), "W"),
             numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float32), "U"),
             numpy_helper.from_array(np.zeros((1, 1), np.float32), "zeros"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    nodes = [helper.make_node("Concat", ["x", "flag"], ["cat"], axis=1),
             helper.make_node("MatMul", ["cat", "W"], ["proj"]),
             helper.make_node("MatMul", ["s", "U"], ["rec"]),
             helper.make_node("Add", ["proj", "rec"], ["pre"]),
             helper.make_node("Tanh", ["pre"], ["s_out"]),
             helper.make_node("Add", ["n", "one"], ["n_out"]),
             helper.make_node("Cast", ["n_out"], ["n_float"], to=TensorProto.FLOAT),
             helper.make_node("Less", ["n_float", "limit"], ["go"])]
    if shaped:
        nodes.append(helper.make_node("ConstantOfShape", ["flag_shape"], ["flag_out"],
                                      value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])))
    elif settles:
        nodes.append(helper.make_node("Identity", ["zeros"], ["flag_out"]))
    else:  # the flag keeps changing: nothing repeats
        nodes.append(helper.make_node("Add", ["flag", "flag"], ["flag_out"]))
    if reads_iteration:
        nodes.append(helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT))
        nodes[-2:-1] = [helper.make_node("Mul", ["flag", "i_float"], ["flag_out"])]
    f = TensorProto.FLOAT
    body = helper.make_graph(
        nodes, "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                        helper.make_tensor_value_info("s", f, None), helper.make_tensor_value_info("flag", f, None),
                        helper.make_tensor_value_info("n", TensorProto.INT64, None)],
        [helper.make_tensor_value_info("go", TensorProto.BOOL, None), helper.make_tensor_value_info("s_out", f, None),
         helper.make_tensor_value_info("flag_out", f, None),
         helper.make_tensor_value_info("n_out", TensorProto.INT64, None)], inits)
    outer = [numpy_helper.from_array(np.zeros((1, 4), np.float32), "s0"),
             numpy_helper.from_array(np.ones((1, 1), np.float32), "flag0"),
             numpy_helper.from_array(np.array(0, np.int64), "n0")]
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "c0", "s0", "flag0", "n0"], ["s_T", "flag_T", "n_T"], body=body)], "act",
        [helper.make_tensor_value_info("x", f, [1, 4]), helper.make_tensor_value_info("limit", f, []),
         helper.make_tensor_value_info("M", TensorProto.INT64, []),
         helper.make_tensor_value_info("c0", TensorProto.BOOL, []),
         *([helper.make_tensor_value_info("flag_shape", TensorProto.INT64, [2])] if shaped else [])],
        [helper.make_tensor_value_info("s_T", f, None), helper.make_tensor_value_info("flag_T", f, None),
         helper.make_tensor_value_info("n_T", TensorProto.INT64, None)], outer)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _body_ops(model: onnx.ModelProto) -> list[str]:
    def walk(graph, inside):
        for node in graph.node:
            if inside:
                yield node.op_type
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    yield from walk(attr.g, inside or node.op_type == "Loop")

    return list(walk(model.graph, False))


def test_repeated_work_runs_once_with_the_same_answers():
    original = _loop_model()
    peeled = onnx.ModelProto()
    peeled.CopyFrom(original)
    assert peel(peeled) == 1
    assert _body_ops(original).count("MatMul") == 2 and _body_ops(peeled).count("MatMul") == 1
    before, after = _session(original), _session(peeled)
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    runs = set()
    for trips, go, limit in itertools.product([0, 1, 2, 3, 10], [False, True], [0.5, 1.5, 2.5, 100.0]):
        feeds = {"x": x, "limit": np.array(limit, np.float32), "M": np.array(trips, np.int64), "c0": np.array(go)}
        expected, got = before.run(None, feeds), after.run(None, feeds)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e, err_msg=f"M={trips} c0={go} limit={limit}")
        runs.add(int(expected[2]))
    assert runs == {0, 1, 2, 3, 10}, "the cases did not cover loops of no, one, two, three and many iterations"


def _ifs(model: onnx.ModelProto) -> int:
    def walk(graph):
        for node in graph.node:
            yield node.op_type
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    yield from walk(attr.g)

    return list(walk(model.graph)).count("If")


def test_work_that_cannot_fail_runs_once_without_a_second_if():
    """With every shape the repeated work reads static, and only ops that cannot fail on data, the work
    runs right after the first iteration, and the loop's own zero trips stand for the If."""
    original = _loop_model()
    peeled = onnx.ModelProto()
    peeled.CopyFrom(original)
    assert peel(peeled, {"s": [1, 4], "flag": [1, 1], "n": []}) == 1
    assert _ifs(peeled) == 1 and _body_ops(peeled).count("MatMul") == 1  # the If on the first iteration only
    before, after = _session(original), _session(peeled)
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    for trips, go, limit in itertools.product([0, 1, 2, 3, 10], [False, True], [0.5, 1.5, 2.5, 100.0]):
        feeds = {"x": x, "limit": np.array(limit, np.float32), "M": np.array(trips, np.int64), "c0": np.array(go)}
        for e, g in zip(before.run(None, feeds), after.run(None, feeds)):
            np.testing.assert_array_equal(g, e, err_msg=f"M={trips} c0={go} limit={limit}")


def test_repeated_work_runs_only_where_a_second_iteration_would():
    """Work that fails on the settled values fails where the second iteration would have, and nowhere else."""
    original = _loop_model(shaped=True)
    peeled = onnx.ModelProto()
    peeled.CopyFrom(original)
    assert peel(peeled, {"s": [1, 4], "n": []}) == 1  # the flag's shape is data: not known statically
    assert _ifs(peeled) == 2
    before, after = _session(original), _session(peeled)
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    wide = np.array([1, 2], np.int64)
    for trips, limit in [(1, 100.0), (5, 0.5), (0, 100.0)]:  # one iteration or none: no second to fail
        feeds = {"x": x, "limit": np.array(limit, np.float32), "M": np.array(trips, np.int64), "c0": np.array(True),
                 "flag_shape": wide}
        for e, g in zip(before.run(None, feeds), after.run(None, feeds)):
            np.testing.assert_array_equal(g, e)
    feeds = {"x": x, "limit": np.array(100.0, np.float32), "M": np.array(3, np.int64), "c0": np.array(True),
             "flag_shape": np.array([1, 1], np.int64)}
    for e, g in zip(before.run(None, feeds), after.run(None, feeds)):
        np.testing.assert_array_equal(g, e)
    feeds["flag_shape"] = wide
    for session in (before, after):
        with pytest.raises(Exception, match="MatMul"):
            session.run(None, feeds)


@pytest.mark.parametrize("kind", ["flag keeps changing", "body reads the iteration number"])
def test_loops_without_settled_work_are_left_alone(kind):
    model = _loop_model(settles=False) if kind == "flag keeps changing" else _loop_model(reads_iteration=True)
    text = model.SerializeToString()
    assert peel(model) == 0
    assert model.SerializeToString() == text
