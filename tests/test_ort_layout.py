"""The onnxruntime layout variant: blocked (NCHWc) tensors across If borders, equal to the portable graph.

Each graph is run on every path (both arms of each If) against onnxruntime's own level-ALL session of the
portable graph, and the variant's structure is checked: what the pass must rewrite, and what it must leave.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dycl.backends.onnxruntime import OnnxRuntimeBackend, graph_to_run

NCHWC = "com.microsoft.nchwc"
RNG = np.random.default_rng(0)


def _conv(name: str, source: str, out: str, cin: int, cout: int, inits: list) -> onnx.NodeProto:
    weights = (RNG.standard_normal((cout, cin, 3, 3)) * 0.2).astype(np.float32)
    inits.append(numpy_helper.from_array(weights, name + "_w"))
    inits.append(numpy_helper.from_array((RNG.standard_normal(cout) * 0.1).astype(np.float32), name + "_b"))
    return helper.make_node("Conv", [source, name + "_w", name + "_b"], [out], pads=[1, 1, 1, 1])


def _block(k: int, source: str, channels: int, summand: str | None = None, relu: bool = True):
    """If c{k}: relu(conv(relu(conv(source))) + summand) else source (a copy): a gated basic block."""
    summand = summand or source
    inits = []  # the branch's own weights, as dycl's fused graphs hold them (NCHWc needs constant weights)
    then = [_conv(f"first{k}", source, f"h{k}", channels, channels, inits),
            helper.make_node("Relu", [f"h{k}"], [f"a{k}"]),
            _conv(f"second{k}", f"a{k}", f"z{k}", channels, channels, inits),
            helper.make_node("Add", [f"z{k}", summand], [f"s{k}"])]
    if relu:
        then.append(helper.make_node("Relu", [f"s{k}"], [f"r{k}"]))
    out = then[-1].output[0]
    # a SkipNet gate on the block's output: a 1x1 map that convolves on, blocked
    then += [helper.make_node("GlobalAveragePool", [out], [f"pool{k}"]),
             _conv(f"gate{k}", f"pool{k}", f"gate{k}", channels, channels, inits)]
    shape = [1, channels, 8, 8]
    outputs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape),
               helper.make_tensor_value_info(f"gate{k}", TensorProto.FLOAT, [1, channels, 1, 1])]
    then_graph = helper.make_graph(then, f"then{k}", [], outputs, inits)
    else_graph = helper.make_graph(
        [helper.make_node("Identity", [source], [f"copy{k}"]), helper.make_node("Neg", [source], [f"neg{k}"]),
         helper.make_node("ReduceMean", [f"neg{k}"], [f"mean{k}"], axes=[2, 3])], f"else{k}", [],
        [helper.make_tensor_value_info(f"copy{k}", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info(f"mean{k}", TensorProto.FLOAT, [1, channels, 1, 1])])
    return helper.make_node("If", [f"c{k}"], [f"x{k}", f"g{k}"], then_branch=then_graph, else_branch=else_graph)


def _model(tmp_path, channels: int = 16, broadcast: bool = False, relu: bool = True, shaped: bool = True) -> str:
    """x → conv+relu → two gated residual blocks → (global pool, the feature map); `shaped=False`: no shapes."""
    inits: list = []
    nodes = [_conv("stem", "x", "stem", 3, channels, inits), helper.make_node("Relu", ["stem"], ["x0"])]
    summand = None
    if broadcast:  # a [1, C, 1, 1] operand, blocked too: a sum the NCHWc Conv cannot take
        nodes.append(helper.make_node("GlobalAveragePool", ["x0"], ["pooled"]))
        summand = "pooled"
    nodes += [_block(1, "x0", channels, summand, relu), _block(2, "x1", channels, relu=relu),
              helper.make_node("GlobalAveragePool", ["x2"], ["p"])]
    graph = helper.make_graph(
        nodes, "gated", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                         helper.make_tensor_value_info("c1", TensorProto.BOOL, []),
                         helper.make_tensor_value_info("c2", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, channels, 1, 1]),
         helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, channels, 8, 8]),
         *(helper.make_tensor_value_info(g, TensorProto.FLOAT, [1, channels, 1, 1]) for g in ("g1", "g2"))], inits,
        value_info=[helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, channels, 8, 8]) for n in ("x0", "x1")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    if not shaped:
        _unshape(model.graph)
    path = str(tmp_path / "gated.onnx")
    onnx.save(model, path)
    return path


def _unshape(graph) -> None:
    """Every value's shape unknown, as in a graph whose input dims are all dynamic."""
    del graph.value_info[:]
    for value in (*graph.input, *graph.output):
        value.type.tensor_type.ClearField("shape")
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _unshape(attr.g)


def _compiled(tmp_path, src: str):
    art = str(tmp_path / "regions" / "gated.onnx")
    (tmp_path / "regions").mkdir(exist_ok=True)
    backend = OnnxRuntimeBackend()
    backend.compile(src, art)
    return backend, art


def _assert_same_on_every_path(src: str, call) -> None:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    portable = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    for c1, c2 in itertools.product([False, True], repeat=2):
        feeds = [x, np.array(c1), np.array(c2)]
        expected = portable.run(None, dict(zip(["x", "c1", "c2"], feeds)))
        got = call(feeds)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=f"path c1={c1} c2={c2}")


def _nodes(graph, inside_if: bool = False):
    for node in graph.node:
        yield node, inside_if
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attr.g, True)


def _variant(art: str) -> onnx.ModelProto:
    graph, optimise = graph_to_run(art)
    assert not optimise and graph.endswith(".nchwc"), "no layout variant for this machine"
    return onnx.load(graph, load_external_data=False)


def _blocked_machine() -> bool:
    """Whether onnxruntime uses NCHWc kernels on this CPU at all."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])
    w = numpy_helper.from_array(np.ones((16, 16, 3, 3), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "probe", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        so.optimized_model_filepath = f"{tmp}/probe.onnx"
        ort.InferenceSession(helper.make_model(graph).SerializeToString(), so, providers=["CPUExecutionProvider"])
        return any(n.domain == NCHWC for n in onnx.load(so.optimized_model_filepath).graph.node)


pytestmark = pytest.mark.skipif(not _blocked_machine(), reason="onnxruntime has no NCHWc kernels on this CPU")


@pytest.mark.parametrize("relu", [True, False])
def test_blocked_tensors_cross_if_borders(tmp_path, relu):
    src = _model(tmp_path, relu=relu)
    backend, art = _compiled(tmp_path, src)
    variant = _variant(art)
    nodes = list(_nodes(variant.graph))
    assert not [n for n, inside in nodes if inside and n.op_type == "ReorderInput"], "a border still reorders"
    sums = [n for n, inside in nodes if inside and n.domain == NCHWC and n.op_type == "Conv" and len(n.input) == 4]
    assert len(sums) == 2, "the residual Add is not the NCHWc Conv's sum"
    activations = [helper.get_attribute_value(a) for n in sums for a in n.attribute if a.name == "activation"]
    assert activations == ([b"Relu", b"Relu"] if relu else [])
    # the graph's outputs (its pool, its map, each gate) and x1 for the skip arm's plain Neg: no reorder of a
    # full map per border, and the pooled map a gate convolves stays blocked
    assert [n.op_type == "ReorderOutput" for n, _ in nodes].count(True) == 6
    assert not [n for n, _ in nodes if n.domain == "" and n.op_type in ("Add", "Relu")]
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def test_unknown_shapes_fuse_and_a_run_time_mismatch_falls_back_to_the_portable_graph(tmp_path):
    """With no shapes known, the sum is fused; where it broadcasts after all, onnxruntime's NCHWc Conv refuses
    it at run time, and the region runs its portable graph from then on: the right answer, with a warning."""
    src = _model(tmp_path, broadcast=True, shaped=False)
    backend, art = _compiled(tmp_path, src)
    branch = next(a.g for a in next(n for n in _variant(art).graph.node if n.op_type == "If").attribute
                  if a.name == "then_branch")
    assert any(n.op_type == "Conv" and len(n.input) == 4 for n in branch.node), "the sum was not fused"
    call = backend.load(art, str(tmp_path))
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    call([x, np.array(False), np.array(False)])  # the skip arm: the variant runs
    with pytest.warns(RuntimeWarning, match="layout variant failed"):
        call([x, np.array(True), np.array(False)])
    _assert_same_on_every_path(src, call)


def test_onnxruntimes_own_sum_of_unknown_shapes_becomes_the_convs_sum(tmp_path):
    """Two maps convolved in one branch and added, shapes unknown: onnxruntime adds them through 5-D views
    (Reshape, Add, Reshape); the pass makes that the second Conv's sum and Relu, as with known shapes."""
    inits: list = []
    branch: list = []
    then = [_conv("main", "x0", "main", 16, 16, branch),
            helper.make_node("Conv", ["x0", "short_w"], ["short"]),
            helper.make_node("Add", ["main", "short"], ["sum"]), helper.make_node("Relu", ["sum"], ["out"])]
    branch.append(numpy_helper.from_array((RNG.standard_normal((16, 16, 1, 1)) * 0.2).astype(np.float32), "short_w"))
    then_graph = helper.make_graph(then, "then", [], [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                                   branch)
    else_graph = helper.make_graph([helper.make_node("Identity", ["x0"], ["copy"])], "else", [],
                                   [helper.make_tensor_value_info("copy", TensorProto.FLOAT, None)])
    nodes = [_conv("stem", "x", "stem", 3, 16, inits), helper.make_node("Relu", ["stem"], ["x0"]),
             helper.make_node("If", ["c1"], ["y"], then_branch=then_graph, else_branch=else_graph),
             helper.make_node("GlobalAveragePool", ["y"], ["p"])]
    graph = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                                  helper.make_tensor_value_info("c1", TensorProto.BOOL, []),
                                                  helper.make_tensor_value_info("c2", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)], inits)
    src = str(tmp_path / "residual.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)
    backend, art = _compiled(tmp_path, src)
    inside = [n for n, inner in _nodes(_variant(art).graph) if inner]
    assert not [n for n in inside if n.op_type in ("Reshape", "Add", "Relu")]
    assert [len(n.input) == 4 for n in inside if n.op_type == "Conv"].count(True) == 1
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def test_variant_is_deterministic(tmp_path):
    src = _model(tmp_path)
    files = []
    for k in range(2):
        art = str(tmp_path / f"regions{k}" / "gated.onnx")
        (tmp_path / f"regions{k}").mkdir()
        OnnxRuntimeBackend().compile(src, art)
        files.append([open(p, "rb").read() for p in OnnxRuntimeBackend.files(art)])
    assert len(files[0]) == 5 and files[0] == files[1]


def test_padded_channels_are_left_alone(tmp_path):
    """12 channels pad to a block: a reorder round trip is not the identity there, so nothing crosses."""
    src = _model(tmp_path, channels=12)
    backend, art = _compiled(tmp_path, src)
    graph, optimise = graph_to_run(art)
    assert optimise and graph == art, "a layout variant was written for padded channels"
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def test_broadcast_sum_is_not_fused(tmp_path):
    src = _model(tmp_path, broadcast=True)
    backend, art = _compiled(tmp_path, src)
    variant = _variant(art)
    first_then = next(n for n in variant.graph.node if n.op_type == "If").attribute
    branch = next(a.g for a in first_then if a.name == "then_branch")
    assert any(n.op_type == "Add" for n in branch.node), "a broadcasting Add was fused into a Conv's sum"
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def _guarded(tmp_path, plain_reader: bool) -> str:
    """x0 → If c1: -x0 (plain) else x0 (blocked) → conv: a guard whose rare arm computes in plain layout."""
    inits: list = []
    nodes = [_conv("stem", "x", "stem", 3, 16, inits), helper.make_node("Relu", ["stem"], ["x0"])]
    shape = [1, 16, 8, 8]
    then = helper.make_graph([helper.make_node("Neg", ["x0"], ["neg"])], "then", [],
                             [helper.make_tensor_value_info("neg", TensorProto.FLOAT, shape)])
    other = helper.make_graph([helper.make_node("Identity", ["x0"], ["copy"])], "else", [],
                              [helper.make_tensor_value_info("copy", TensorProto.FLOAT, shape)])
    nodes += [helper.make_node("If", ["c1"], ["x1"], then_branch=then, else_branch=other),
              _conv("head", "x1", "y", 16, 16, inits), helper.make_node("GlobalAveragePool", ["y"], ["p"])]
    outputs = [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 16, 1, 1])]
    if plain_reader:
        nodes.append(helper.make_node("Sigmoid", ["x1"], ["plain"]))
        outputs.append(helper.make_tensor_value_info("plain", TensorProto.FLOAT, shape))
    graph = helper.make_graph(
        nodes, "guarded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                           helper.make_tensor_value_info("c1", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("c2", TensorProto.BOOL, [])], outputs, inits,
        value_info=[helper.make_tensor_value_info("x1", TensorProto.FLOAT, shape)])
    path = str(tmp_path / "guarded.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("plain_reader", [False, True])
def test_arms_without_a_blocked_form_reorder_themselves(tmp_path, plain_reader):
    """Only where nothing after the If reads its output plain: else both arms would pay a reorder."""
    src = _guarded(tmp_path, plain_reader)
    backend, art = _compiled(tmp_path, src)
    graph, optimise = graph_to_run(art)
    if plain_reader:
        assert optimise, "the If's output is read plain: the arms must stay as they are"
    else:
        variant = _variant(art)
        nodes = list(_nodes(variant.graph))
        reorders = [(n.op_type, inside) for n, inside in nodes if n.op_type.startswith("Reorder")]
        assert reorders.count(("ReorderInput", True)) == 1 and ("ReorderInput", False) not in reorders
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def _fusion(tmp_path, scale: float, mode: str = "nearest") -> str:
    """RANet's fusion in a branch: conv(concat(a, resize(b))), a and b blocked maps from outside."""
    inits: list = []
    nodes = [_conv("a", "x", "a0", 3, 16, inits), helper.make_node("Relu", ["a0"], ["a"]),
             helper.make_node("MaxPool", ["a"], ["small"], kernel_shape=[2, 2], strides=[2, 2]),
             _conv("b", "small", "b", 16, 16, inits)]
    branch: list = []
    attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric" if mode == "nearest" else "half_pixel"}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    then = [helper.make_node("Resize", ["b", "", "scales"], ["up"], **attrs),
            helper.make_node("Concat", ["a", "up"] if scale == 2 else ["up", "up"], ["cat"], axis=1),
            _conv("fuse", "cat", "fused", 32, 16, branch)]
    branch.append(numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales"))
    shape = [1, 16, 8, 8] if scale == 2 else None
    then_graph = helper.make_graph(then, "then", [], [helper.make_tensor_value_info("fused", TensorProto.FLOAT, shape)],
                                   branch)
    else_graph = helper.make_graph([helper.make_node("Identity", ["b"], ["copy"])], "else", [],
                                   [helper.make_tensor_value_info("copy", TensorProto.FLOAT, None)])
    nodes += [helper.make_node("If", ["c1"], ["y"], then_branch=then_graph, else_branch=else_graph),
              helper.make_node("GlobalAveragePool", ["y"], ["p"])]
    graph = helper.make_graph(
        nodes, "fusion", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                          helper.make_tensor_value_info("c1", TensorProto.BOOL, []),
                          helper.make_tensor_value_info("c2", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 16, 1, 1])], inits)
    path = str(tmp_path / "fusion.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_concat_and_resize_run_blocked(tmp_path, mode):
    src = _fusion(tmp_path, 2, mode)
    backend, art = _compiled(tmp_path, src)
    nodes = [n for n, inside in _nodes(_variant(art).graph) if inside]
    assert [n.op_type for n in nodes if n.domain == NCHWC] == ["Upsample", "Conv"]
    assert sorted(n.op_type for n in nodes if n.domain == "") == ["Concat", "Identity"]
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def test_fractional_resize_stays_plain(tmp_path):
    src = _fusion(tmp_path, 1.5)
    backend, art = _compiled(tmp_path, src)
    graph, _ = graph_to_run(art)
    branch = [n for n, inside in _nodes(onnx.load(graph, load_external_data=False).graph) if inside]
    assert "Resize" in [n.op_type for n in branch if n.domain == ""]
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))


def _nan_guarded_pool(tmp_path) -> str:
    """torch_nan's MaxPool guard: pool plainly unless the map's total is NaN, then put NaN where torch does."""
    inits: list = [numpy_helper.from_array(np.array(np.nan, np.float32), "nan")]
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    nodes = [_conv("stem", "x", "stem", 3, 16, inits), helper.make_node("Relu", ["stem"], ["x0"]),
             helper.make_node("MaxPool", ["x0"], ["pooled"], **pool),
             helper.make_node("ReduceSum", ["x0"], ["total"], keepdims=0),
             helper.make_node("IsNaN", ["total"], ["any_nan"])]
    then = helper.make_graph(
        [helper.make_node("IsNaN", ["x0"], ["isnan"]), helper.make_node("Cast", ["isnan"], ["isnan_f"], to=1),
         helper.make_node("MaxPool", ["isnan_f"], ["saw"], **pool),
         helper.make_node("Cast", ["saw"], ["saw_b"], to=TensorProto.BOOL),
         helper.make_node("Where", ["saw_b", "nan", "pooled"], ["exact"])], "then", [],
        [helper.make_tensor_value_info("exact", TensorProto.FLOAT, [1, 16, 4, 4])])
    other = helper.make_graph([helper.make_node("Identity", ["pooled"], ["plain"])], "else", [],
                              [helper.make_tensor_value_info("plain", TensorProto.FLOAT, [1, 16, 4, 4])])
    nodes += [helper.make_node("If", ["any_nan"], ["y"], then_branch=then, else_branch=other),
              _conv("head", "y", "z", 16, 16, inits), helper.make_node("GlobalAveragePool", ["z"], ["p"])]
    graph = helper.make_graph(nodes, "nan_guard", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 16, 1, 1])], inits,
                              value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])])
    path = str(tmp_path / "nan_guard.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_nan_guard_tests_the_blocked_map_and_only_its_rare_arm_reorders(tmp_path):
    src = _nan_guarded_pool(tmp_path)
    backend, art = _compiled(tmp_path, src)
    top = _variant(art).graph
    assert next(n for n in top.node if n.op_type == "ReduceSum").input[0] not in {"x0"}, "the guard reorders"
    assert [n.op_type for n in top.node if n.domain == NCHWC] == ["Conv", "MaxPool", "Conv", "GlobalAveragePool",
                                                                   "ReorderOutput"]
    so = ort.SessionOptions()
    portable = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    call = backend.load(art, str(tmp_path))
    for poison in (None, (0, 1, 2, 3), (0, 2, 7, 7)):  # no NaN; NaN in the map (ReLU keeps NaN) at two places
        x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
        if poison:
            x[poison] = np.nan
        expected, got = portable.run(None, {"x": x}), call([x])
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-5, equal_nan=True)
        assert np.isnan(got[0]).any() == bool(poison)


def test_another_machine_gets_the_portable_graph(tmp_path):
    src = _model(tmp_path)
    backend, art = _compiled(tmp_path, src)
    key_path = art[:-len(".onnx")] + ".nchwc.json"
    with open(key_path, encoding="utf-8") as fh:
        key = json.load(fh)
    assert key["cpu"] and key["onnxruntime"] == ort.__version__
    key["cpu"] = [f for f in key["cpu"] if not f.startswith("AVX512")] or ["NONE"]
    with open(key_path, "w", encoding="utf-8") as fh:
        json.dump(key, fh)
    assert graph_to_run(art) == (art, True)
    _assert_same_on_every_path(src, backend.load(art, str(tmp_path)))
    assert set(OnnxRuntimeBackend.files(art)) >= {art, art[:-5] + ".nchwc", key_path}
