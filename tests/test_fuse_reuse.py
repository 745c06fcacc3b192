"""fuse/reuse: an If arm or loop body reads what the graph around it already computed instead of computing it again.

The graph here is a gated head's: the gate pools `x` before the decision, and the arm that skips the gated
work pools `x` again for the classifier. Each case runs in onnxruntime before and after the pass, on inputs
taking both arms.
"""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from dycl.fuse.reuse import reuse

F = TensorProto.FLOAT
RNG = np.random.default_rng(0)


def _gated(arm_nodes, arm_inits=(), outer_extra=(), arm_inputs=()) -> onnx.ModelProto:
    """gate = mean(Flatten(GAP(x)) @ Wg) > 0; if gate: y = Relu(x) pooled; else: <arm_nodes> giving `y_else`."""
    inits = [numpy_helper.from_array(RNG.standard_normal((4, 1)).astype(np.float32), "Wg"),
             numpy_helper.from_array(RNG.standard_normal((4, 3)).astype(np.float32), "Wh"),
             numpy_helper.from_array(np.array([0, -1], np.int64), "shape_outer"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    outer = [helper.make_node("GlobalAveragePool", ["x"], ["pooled"]),
             helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
             helper.make_node("Reshape", ["pooled", "shape_outer"], ["reshaped"]),
             helper.make_node("MatMul", ["flat", "Wg"], ["score"]),
             helper.make_node("ReduceMean", ["score"], ["mean"], keepdims=0),
             helper.make_node("Greater", ["mean", "zero"], ["gate"]), *outer_extra]
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                              helper.make_node("GlobalAveragePool", ["r"], ["rp"]),
                              helper.make_node("Flatten", ["rp"], ["rf"], axis=1),
                              helper.make_node("MatMul", ["rf", "Wh"], ["y_then"])],
                             "then", [], [helper.make_tensor_value_info("y_then", F, None)])
    orelse = helper.make_graph(arm_nodes, "else", list(arm_inputs), [helper.make_tensor_value_info("y_else", F, None)],
                               list(arm_inits))
    nodes = outer + [helper.make_node("If", ["gate"], ["y"], then_branch=then, else_branch=orelse)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["b", 4, "h", "w"])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def _inputs():
    """Inputs whose gate opens and inputs whose gate closes."""
    return [(RNG.standard_normal((2, 4, 5, 3)) + shift).astype(np.float32) for shift in np.linspace(-3, 3, 7)]


def _else(model):
    node = next(n for n in model.graph.node if n.op_type == "If")
    return next(a.g for a in node.attribute if a.name == "else_branch")


def _else_ops(model) -> list[str]:
    return [n.op_type for n in _else(model).node]


def _same_answers(before, after):
    gates = set()
    for x in _inputs():
        np.testing.assert_array_equal(_run(before, x), _run(after, x))
        flat = x.mean(axis=(2, 3))
        gates.add(bool((flat @ numpy_helper.to_array(before.graph.initializer[0])).mean() > 0))
    assert gates == {True, False}  # both arms ran


def test_an_arm_reads_the_pooled_features_the_gate_computed():
    model = _gated([helper.make_node("GlobalAveragePool", ["x"], ["p2"]),
                    helper.make_node("Flatten", ["p2"], ["f2"], axis=1),
                    helper.make_node("MatMul", ["f2", "Wh"], ["y_else"])])
    before = onnx.ModelProto()
    before.CopyFrom(model)
    assert reuse(model) == 2
    assert _else_ops(model) == ["MatMul"]
    assert _else(model).node[0].input[0] == "flat"
    _same_answers(before, model)


def test_what_differs_is_computed_again():
    """A different attribute (Flatten's axis), an op that draws random numbers, a value the arm defines itself
    under an outer name, a node after the If: none of them is reused."""
    arm = [helper.make_node("Flatten", ["pooled"], ["f0"], axis=0),
           helper.make_node("RandomUniformLike", ["pooled"], ["noise"], seed=1.0),
           helper.make_node("Sub", ["noise", "noise"], ["zeros"]),
           helper.make_node("GlobalAveragePool", ["x"], ["pooled_again"]),
           helper.make_node("Relu", ["pooled"], ["later_twin"]),
           helper.make_node("Add", ["pooled_again", "zeros"], ["p"]),
           helper.make_node("Add", ["p", "later_twin"], ["q"]),
           helper.make_node("Flatten", ["q"], ["f2"], axis=1),
           helper.make_node("MatMul", ["f2", "Wh"], ["y_else"])]
    model = _gated(arm, outer_extra=[helper.make_node("RandomUniformLike", ["pooled"], ["outer_noise"], seed=1.0)])
    model.graph.node.append(helper.make_node("Relu", ["pooled"], ["after_if"]))
    before = onnx.ModelProto()
    before.CopyFrom(model)
    assert reuse(model) == 1  # the pooling only
    assert _else_ops(model) == ["Flatten", "RandomUniformLike", "Sub", "Relu", "Add", "Add", "Flatten", "MatMul"]
    _same_answers(before, model)

    shadowing = _gated([helper.make_node("Relu", ["x"], ["pooled"]),  # the arm's own `pooled`
                        helper.make_node("Flatten", ["pooled"], ["f2"], axis=1),
                        helper.make_node("MatMul", ["f2", "Wh"], ["y_else"])])
    assert reuse(shadowing) == 0


def test_constants_compare_by_value_and_an_arm_output_gets_a_copy():
    """The arm's Reshape has its own shape constant, equal to the outer one: its output is the outer Reshape's.
    It is also the arm's output, which must be made inside the arm: an Identity."""
    arm_inits = [numpy_helper.from_array(np.array([0, -1], np.int64), "shape_arm")]
    model = _gated([helper.make_node("Reshape", ["pooled", "shape_arm"], ["r2"]),
                    helper.make_node("Identity", ["r2"], ["y_else_pre"]),
                    helper.make_node("MatMul", ["y_else_pre", "Wh"], ["y_else"])], arm_inits)
    # an output of the arm that a reused node made: Reshape feeding the output directly
    direct = _gated([helper.make_node("GlobalAveragePool", ["x"], ["y_else"])])
    before, direct_before = onnx.ModelProto(), onnx.ModelProto()
    before.CopyFrom(model)
    direct_before.CopyFrom(direct)
    assert reuse(model) == 1
    assert _else_ops(model) == ["Identity", "MatMul"]
    _same_answers(before, model)
    assert reuse(direct) == 1 and _else_ops(direct) == ["Identity"]
    for x in _inputs():
        np.testing.assert_array_equal(_run(direct_before, x), _run(direct, x))


def test_a_loop_body_reads_what_was_computed_before_the_loop():
    inits = [numpy_helper.from_array(np.array(3, np.int64), "trips"), numpy_helper.from_array(np.array(True), "go")]
    body = helper.make_graph([helper.make_node("Relu", ["x"], ["rx"]),
                              helper.make_node("Add", ["acc", "rx"], ["acc_out"]),
                              helper.make_node("Identity", ["c"], ["c_out"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("acc", F, None)],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("acc_out", F, None)])
    nodes = [helper.make_node("Relu", ["x"], ["relu"]),
             helper.make_node("Loop", ["trips", "go", "relu"], ["y"], body=body)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    before = onnx.ModelProto()
    before.CopyFrom(model)
    assert reuse(model) == 1
    assert [n.op_type for n in model.graph.node[1].attribute[0].g.node] == ["Add", "Identity"]
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(_run(before, x), _run(model, x))
