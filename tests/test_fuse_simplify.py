"""The fused graph's peephole clean-up: glue nodes go, every output keeps its value on every input."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from dycl.fuse.simplify import simplify


def _run(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _ops(graph) -> list[str]:
    ops = []
    for node in graph.node:
        ops.append(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                ops += _ops(attr.g)
    return ops


def _loop_model(counter_elem=T.INT64):
    """`while ...: x += k; if not (x.sum() > limit): break; t += 1; if t >= 3: break` (`while True:`):
    the glue a translated loop leaves in its body, around a region's `not`."""
    body = h.make_graph(
        [h.make_node("ReduceSum", ["x_in"], ["s"], keepdims=0),
         h.make_node("Greater", ["s", "limit"], ["over"]),
         h.make_node("Not", ["over"], ["under"]),  # what a region returns (torch's all() ends in Not)
         h.make_node("Reshape", ["under", "scalar"], ["item"]),  # `.item()` of a value already 0-d
         h.make_node("Not", ["item"], ["go_on"]),  # `if c: break`
         h.make_node("Add", ["t_in", "one"], ["t"]),
         h.make_node("GreaterOrEqual", ["t", "three"], ["done"]),
         h.make_node("Not", ["done"], ["more"]),
         h.make_node("And", ["go_on", "more"], ["both"]),
         h.make_node("And", ["both", "true"], ["cond"]),  # `while True:`
         h.make_node("Add", ["i", "zero"], ["target"]),  # `for k in range(n)`: k = i + 0
         h.make_node("Cast", ["target"], ["target_f"], to=T.FLOAT),
         h.make_node("Add", ["x_in", "target_f"], ["x"]),
         h.make_node("Mul", ["t", "one"], ["t_unused"])],  # read by nothing
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("x_in", T.FLOAT, None), h.make_tensor_value_info("t_in", counter_elem, None)],
        [h.make_tensor_value_info("cond", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, None),
         h.make_tensor_value_info("t", counter_elem, None)],
        initializer=[h.make_tensor("limit", T.FLOAT, [], [10.0]), h.make_tensor("scalar", T.INT64, [0], []),
                     h.make_tensor("one", counter_elem, [], [1]), h.make_tensor("three", counter_elem, [], [3]),
                     h.make_tensor("true", T.BOOL, [], [True]), h.make_tensor("zero", T.INT64, [], [0])])
    graph = h.make_graph(
        [h.make_node("Loop", ["", "go", "x0", "t0"], ["x_last", "t_last"], body=body)], "g",
        [h.make_tensor_value_info("x0", T.FLOAT, [4]), h.make_tensor_value_info("t0", counter_elem, [])],
        [h.make_tensor_value_info("x_last", T.FLOAT, None), h.make_tensor_value_info("t_last", counter_elem, None)],
        initializer=[h.make_tensor("go", T.BOOL, [], [True])])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("x0", [[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 3.5], [20.0, 0.0, 0.0, 0.0], [-9.0] * 4])
def test_loop_glue_goes_and_every_exit_gives_the_same_values(x0):
    model = _loop_model()
    feeds = {"x0": np.array(x0, np.float32), "t0": np.array(0, np.int64)}
    before = _run(model, feeds)
    simplify(model, {"under": []})
    after = _run(model, feeds)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    ops = _ops(model.graph)
    assert "Reshape" not in ops and "Not" not in ops and "Mul" not in ops
    assert ops.count("And") == 1 and ops.count("Add") == 2  # x + k, t + 1: no `+ 0`, no `and True`
    assert "Less" in ops and "GreaterOrEqual" not in ops  # `not (t >= 3)` on integers: t < 3


def test_float_comparisons_keep_their_not():
    """`not (a >= b)` is not `a < b` when a is NaN: on floats the Not stays."""
    model = _loop_model(counter_elem=T.FLOAT)
    simplify(model, {"under": []})
    ops = _ops(model.graph)
    assert "GreaterOrEqual" in ops and ops.count("Not") == 1
    feeds = {"x0": np.zeros(4, np.float32), "t0": np.array(np.nan, np.float32)}
    np.testing.assert_array_equal(_run(model, feeds)[0], _run(_loop_model(T.FLOAT), feeds)[0])


def test_reshape_stays_where_the_shape_changes_or_is_unknown():
    """`.item()` of a [1] value reshapes it; without a known shape the Reshape stays too."""
    for dims, declared in (([1], None), (None, None)):
        graph = h.make_graph(
            [h.make_node("Reshape", ["x", "scalar"], ["y"]), h.make_node("Not", ["y"], ["z"])], "g",
            [h.make_tensor_value_info("x", T.BOOL, dims)], [h.make_tensor_value_info("z", T.BOOL, None)],
            initializer=[h.make_tensor("scalar", T.INT64, [0], [])])
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
        simplify(model, declared)
        assert _ops(model.graph) == ["Reshape", "Not"]


def test_model_outputs_keep_their_names():
    """A top-level output computed by a removable node keeps its node: the runtime reads outputs by name."""
    graph = h.make_graph([h.make_node("And", ["x", "true"], ["y"])], "g",
                         [h.make_tensor_value_info("x", T.BOOL, [])], [h.make_tensor_value_info("y", T.BOOL, None)],
                         initializer=[h.make_tensor("true", T.BOOL, [], [True])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    simplify(model)
    assert [o.name for o in model.graph.output] == ["y"] and _ops(model.graph) == ["And"]


def _counter_loop(op: str, start: int, limit: int, trips):
    """`t = start; while 40 > x.sum(): x += 1; t += 1; if not (t OP limit): break` with an optional trip count
    (a constant, a graph input, or none)."""
    body = h.make_graph(
        [h.make_node("Add", ["x_in", "onef"], ["x"]),
         h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         h.make_node("Greater", ["forty", "s"], ["small"]),
         h.make_node("Add", ["t_in", "one"], ["t"]),
         h.make_node(op, ["t", "limit"], ["under"]),
         h.make_node("And", ["small", "under"], ["cond"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("x_in", T.FLOAT, None), h.make_tensor_value_info("t_in", T.INT64, None)],
        [h.make_tensor_value_info("cond", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, None),
         h.make_tensor_value_info("t", T.INT64, None), h.make_tensor_value_info("x", T.FLOAT, None)],
        initializer=[h.make_tensor("onef", T.FLOAT, [], [1.0]), h.make_tensor("forty", T.FLOAT, [], [40.0]),
                     h.make_tensor("one", T.INT64, [], [1]), h.make_tensor("limit", T.INT64, [], [limit])])
    inits = [h.make_tensor("go", T.BOOL, [], [True]), h.make_tensor("t0", T.INT64, [], [start])]
    inputs = [h.make_tensor_value_info("x0", T.FLOAT, [4])]
    if trips == "input":
        inputs.append(h.make_tensor_value_info("m", T.INT64, []))
    elif trips is not None:
        inits.append(h.make_tensor("m", T.INT64, [], [trips]))
    graph = h.make_graph(
        [h.make_node("Loop", ["m" if trips is not None else "", "go", "x0", "t0"], ["x_last", "t_last", "xs"],
                     body=body)], "g", inputs,
        [h.make_tensor_value_info(n, e, None) for n, e in (("x_last", T.FLOAT), ("t_last", T.INT64), ("xs", T.FLOAT))],
        initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("op", ["Less", "LessOrEqual"])
@pytest.mark.parametrize("start,limit", [(0, 3), (2, 3), (5, 3), (3, 3), (-4, 20)])
@pytest.mark.parametrize("trips", [None, 2, 50, "input"])
def test_a_counter_bound_becomes_the_trip_count(op, start, limit, trips):
    """Both ways out (the counter, the sum) and a trip count of its own: the same iterations, the same values."""
    model = _counter_loop(op, start, limit, trips)
    simplify(model)
    assert op not in _ops(model.graph) and "And" not in _ops(model.graph)
    for x0 in (np.zeros(4, np.float32), np.full(4, 6.0, np.float32), np.full(4, 20.0, np.float32)):
        for m in ([0, 1, 4, 30] if trips == "input" else [None]):
            feeds = {"x0": x0} if m is None else {"x0": x0, "m": np.array(m, np.int64)}
            expected = _run(_counter_loop(op, start, limit, trips), feeds)
            got = _run(model, feeds)
            for a, b in zip(expected, got):
                assert a.shape == b.shape
                np.testing.assert_array_equal(a, b)


def test_a_counter_that_does_not_step_by_one_keeps_its_test():
    model = _counter_loop("Less", 0, 3, None)
    body = model.graph.node[0].attribute[0].g
    next(i for i in body.initializer if i.name == "one").int64_data[:] = [2]
    simplify(model)
    assert "Less" in _ops(model.graph) and model.graph.node[-1].input[0] == ""


def test_a_counter_nothing_reads_after_its_loop_is_no_longer_carried():
    """Once its test is the trip count, a counter read by nothing after the loop only feeds itself: it goes."""
    def model():
        m = _counter_loop("Less", 0, 3, None)
        del m.graph.output[1]  # t_last
        return m

    simplified = model()
    simplify(simplified)
    loop = simplified.graph.node[-1]
    assert list(loop.output) == ["x_last", "xs"] and len(loop.input) == 3 and _ops(simplified.graph).count("Add") == 1
    for x0 in (np.zeros(4, np.float32), np.full(4, 20.0, np.float32)):
        for a, b in zip(_run(model(), {"x0": x0}), _run(simplified, {"x0": x0})):
            np.testing.assert_array_equal(a, b)


def test_constant_nodes_become_initializers_of_their_graph():
    """In an If arm too (onnxruntime saved one such arm's constant twice); an output stays a node's."""
    def arm(name, value):
        return h.make_graph([h.make_node("Constant", [], [f"{name}_c"], value=h.make_tensor("v", T.FLOAT, [], [value])),
                             h.make_node("Add", ["x", f"{name}_c"], [f"{name}_y"]),
                             h.make_node("Constant", [], [f"{name}_out"], value=h.make_tensor("v", T.FLOAT, [], [value]))],
                            name, [], [h.make_tensor_value_info(f"{name}_y", T.FLOAT, None),
                                       h.make_tensor_value_info(f"{name}_out", T.FLOAT, None)])
    graph = h.make_graph([h.make_node("If", ["c"], ["y", "k"], then_branch=arm("then", 1.0), else_branch=arm("else", 2.0))],
                         "g", [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [2])],
                         [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("k", T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    simplify(model)
    for attr in model.graph.node[0].attribute:
        assert [n.op_type for n in attr.g.node] == ["Add", "Constant"] and len(attr.g.initializer) == 1
    for c, (y, k) in ((True, (1.0, 1.0)), (False, (2.0, 2.0))):
        got = _run(model, {"c": np.array(c), "x": np.zeros(2, np.float32)})
        np.testing.assert_array_equal(got[0], [y, y])
        assert got[1] == k


def _reductions_model(dims, opset=20):
    """torch's `any()`, `all()`, `not all()`, `any(1, keepdim=True)` and `all(-1)` of a bool `x`, each or'ed with `c`
    (a node that reads it: a model output would keep its node)."""
    nodes, inits = [], [h.make_tensor("zero", T.INT64, [], [0]), h.make_tensor("ax1", T.INT64, [1], [1]),
                        h.make_tensor("axl", T.INT64, [1], [-1])]

    def any_of(name, src, axes=None, keepdims=0):
        nodes.extend([h.make_node("Cast", [src], [f"{name}_i"], to=T.INT64),
                      h.make_node("ReduceSum", [f"{name}_i", *([axes] if axes else [])], [f"{name}_s"],
                                  keepdims=keepdims),
                      h.make_node("Greater", [f"{name}_s", "zero"], [f"{name}_any"])])
        return f"{name}_any"

    def negated(name, value):
        nodes.append(h.make_node("Not", [value], [f"{name}_not"]))
        return f"{name}_not"

    results = {"any": any_of("a", "x"),
               "all": negated("b", any_of("b", negated("bx", "x"))),
               "not_all": any_of("c", negated("cx", "x")),
               "any_dim": any_of("d", "x", "ax1", keepdims=1),
               "all_dim": negated("e", any_of("e", negated("ex", "x"), "axl"))}
    for name, value in results.items():
        nodes.append(h.make_node("Or", [value, "c"], [name]))
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.BOOL, dims),
                                      h.make_tensor_value_info("c", T.BOOL, [])],
                         [h.make_tensor_value_info(n, T.BOOL, None) for n in results], initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=9)


def test_any_and_all_become_bool_reductions():
    """Cast -> ReduceSum -> Greater(0) is any(); with a Not before it, not all(): one reduction each, the
    same values on every pattern (all True, all False, one different, rows that differ)."""
    model = _reductions_model([2, 3])
    simplify(model)
    ops = _ops(model.graph)
    assert not {"Cast", "ReduceSum", "Greater"} & set(ops)
    assert ops.count("ReduceMax") == 2 and ops.count("ReduceMin") == 3 and ops.count("Not") == 1  # not all(x)
    patterns = [np.ones((2, 3), bool), np.zeros((2, 3), bool), np.eye(2, 3, dtype=bool), ~np.eye(2, 3, dtype=bool),
                np.array([[True] * 3, [False] * 3])]
    for x in patterns:
        feeds = {"x": x, "c": np.array(False)}
        expected = _run(_reductions_model([2, 3]), feeds)
        got = _run(model, feeds)
        assert [(a.shape, a.dtype) for a in got] == [(a.shape, a.dtype) for a in expected]
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dims,opset,sums", [([0, 3], 20, 3), ([2, 0], 20, 5), (["n", 3], 20, 5), (None, 20, 5),
                                            ([2, 3], 17, 5)])
def test_any_and_all_stay_sums_where_a_reduced_set_may_be_empty_or_the_opset_is_older(dims, opset, sums):
    """onnxruntime refuses a bool reduction over nothing (any() of nothing is False, all() True), and before
    opset 20 none at all. [0, 3]: the reductions over its 3 columns qualify, those over everything do not."""
    model = _reductions_model(dims, opset)
    simplify(model)
    assert _ops(model.graph).count("ReduceSum") == sums
    for value in (False, True):
        feeds = {"x": np.full([d if d != "n" else 0 for d in dims or [0, 3]], value), "c": np.array(False)}
        for a, b in zip(_run(_reductions_model(dims, opset), feeds), _run(model, feeds)):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def _norm_model(op, keepdims=0, target=(-1,)):
    """`torch.norm(a - b)`: the difference flattened, then reduced over all axes."""
    graph = h.make_graph(
        [h.make_node("Sub", ["a", "b"], ["d"]), h.make_node("Reshape", ["d", "flat"], ["f"]),
         h.make_node(op, ["f"], ["y"], keepdims=keepdims)], "g",
        [h.make_tensor_value_info("a", T.FLOAT, [2, 3]), h.make_tensor_value_info("b", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[h.make_tensor("flat", T.INT64, [len(target)], list(target))])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceSum", "ReduceMax", "ReduceMean", "ReduceLogSumExp"])
def test_a_reduction_over_all_axes_reads_the_unflattened_value(op):
    model = _norm_model(op)
    simplify(model)
    assert _ops(model.graph) == ["Sub", op]
    rng = np.random.default_rng(0)
    for k in range(20):
        a, b = rng.standard_normal((2, 2, 3)).astype(np.float32) * (10.0 if k % 2 else 0.1)
        if k == 3:
            a[1, 2] = np.nan
        feeds = {"a": a, "b": b}
        expected, got = _run(_norm_model(op), feeds)[0], _run(model, feeds)[0]
        assert expected.shape == got.shape == () and expected.tobytes() == got.tobytes()


def test_a_flattening_stays_where_the_reduction_keeps_dims_or_the_shape_is_given():
    for keepdims, target in ((1, (-1,)), (0, (6,))):
        model = _norm_model("ReduceL2", keepdims, target)
        simplify(model)
        assert "Reshape" in _ops(model.graph)


def _decoder_loop(form: str, start: str, reads_cond: bool = False):
    """`while tok != 2` (form "not": `not (tok == 2)` of a [1] token) or `while h.sum(1) < 9` (form "less"), each
    test `.item()`'d to 0-d; the token carried and appended to a list (its copy). `start` is the Loop's initial
    condition: a constant, one computed from the input `m` (`m > 0`), or none."""
    test = [h.make_node("Equal", ["tok", "two"], ["hit"]), h.make_node("Reshape", ["hit", "scalar"], ["hit_0d"]),
            h.make_node("Not", ["hit_0d"], ["cond"])] if form == "not" else \
        [h.make_node("ReduceSum", ["h", "ax1"], ["s"], keepdims=0), h.make_node("Less", ["s", "nine"], ["low"]),
         h.make_node("Reshape", ["low", "scalar"], ["cond"])]
    vi = h.make_tensor_value_info
    uses_c = [h.make_node("Cast", ["c"], ["c_f"], to=T.FLOAT), h.make_node("Add", ["h", "c_f"], ["h_out"])]
    body = h.make_graph(
        [h.make_node("Add", ["h_in", "step"], ["h"]), h.make_node("ArgMax", ["h"], ["tok"], axis=-1, keepdims=0),
         *test, h.make_node("Identity", ["tok"], ["tok_copy"]), *(uses_c if reads_cond else [])],
        "body",
        [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("h_in", T.FLOAT, None), vi("tok_in", T.INT64, None)],
        [vi("cond", T.BOOL, []), vi("h_out" if reads_cond else "h", T.FLOAT, None), vi("tok", T.INT64, None),
         vi("tok_copy", T.INT64, None)],
        initializer=[h.make_tensor("step", T.FLOAT, [1, 4], [0.0, 0.5, 1.0, 0.0]),
                     h.make_tensor("two", T.INT64, [], [2]), h.make_tensor("scalar", T.INT64, [0], []),
                     h.make_tensor("ax1", T.INT64, [1], [1]), h.make_tensor("nine", T.FLOAT, [], [9.0])])
    nodes = [h.make_node("Greater", ["m", "zero"], ["go"])] if start == "computed" else []
    nodes.append(h.make_node("Loop", ["m", "" if start == "none" else "go", "h0", "tok0"],
                             ["h_last", "tok_last", "toks"], body=body))
    graph = h.make_graph(nodes, "g", [vi("h0", T.FLOAT, [1, 4]), vi("m", T.INT64, [])],
                         [vi("h_last", T.FLOAT, None), vi("tok_last", T.INT64, None), vi("toks", T.INT64, None)],
                         initializer=[h.make_tensor("tok0", T.INT64, [1], [0]), h.make_tensor("zero", T.INT64, [], [0])]
                         + ([h.make_tensor("go", T.BOOL, [], [True])] if start == "const" else []))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 20)], ir_version=9)


def _same_runs(expected_model, model):
    for h0 in ([[0.0, 0.0, 0.0, 0.0]], [[5.0, 0.0, 0.0, 0.0]], [[0.0, 0.0, 3.0, 0.0]], [[1.0, 9.0, 0.0, 0.0]]):
        for m in (0, 1, 3, 20):
            feeds = {"h0": np.array(h0, np.float32), "m": np.array(m, np.int64)}
            for a, b in zip(_run(expected_model, feeds), _run(model, feeds)):
                assert a.shape == b.shape and a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("form", ["not", "less"])
@pytest.mark.parametrize("start", ["const", "computed", "none"])
def test_a_loop_body_returns_its_one_element_condition_and_a_repeated_value_as_they_are(form, start):
    """onnxruntime's Loop takes a [1] condition: the Reshape to 0-d goes, and so does the Identity that gave the
    token a second name for the list; each exit (the test, the trip count, no trip at all) gives the same values."""
    model = _decoder_loop(form, start)
    simplify(model, {"tok": [1], "s": [1]})
    body = next(n for n in model.graph.node if n.op_type == "Loop").attribute[0].g
    assert not {"Reshape", "Identity"} & set(_ops(body))
    _same_runs(_decoder_loop(form, start), model)


def test_a_body_reading_its_condition_keeps_its_shape():
    model = _decoder_loop("not", "const", reads_cond=True)
    simplify(model, {"tok": [1]})
    body = next(n for n in model.graph.node if n.op_type == "Loop").attribute[0].g
    assert "Reshape" in _ops(body) and "Identity" not in _ops(body)
    _same_runs(_decoder_loop("not", "const", reads_cond=True), model)
