"""Host code run inside one onnxruntime graph (ONNX If and Loop): the same answers as the host, on every path."""
import ast
import json
import os

import numpy as np
import onnx
import pytest

import dycl
from conftest import MODELS, ZOO
from dycl.compare import to_numpy

# Decisions (skipnet, blockdrop, moe, batch_gated), early exits (sdn, branchynet), loops (the decoders, act)
# loops with a break flag and decisions inside (c_break_continue), and returns on some paths of an arm
# only (golden_gated: `if g: ... else: if c: return ...` followed by more code); skipnet38 carries its
# LSTM gate's (h, c) tuple through every decision; ranet passes a list it builds to a region;
# c_gated_residual binds `x` and `shortcut` to one value on one arm.
FUSED = [os.path.join(ZOO, f"{m}.py") for m in ["skipnet", "skipnet38", "blockdrop", "moe", "batch_gated", "sdn",
                                                 "branchynet", "ranet",
                                                 "rnn_early_stop", "seq2seq", "caption", "act"]] \
    + [os.path.join(MODELS, f"{m}.py") for m in ["c_while_item_counter", "c_for_break_decoder", "c_nested_if",
                                                  "c_break_continue", "c_early_return", "golden_gated",
                                                  "c_gated_residual", "c_rnn_step_inputs", "c_break_before_update"]]


def _host_control(package: str) -> int:
    tree = ast.parse(open(os.path.join(package, "host.py")).read())
    return sum(isinstance(n, (ast.For, ast.While, ast.If)) for n in ast.walk(tree))


def _count_calls(net) -> list:
    """Count backend calls from now on: each region call appends one entry to the returned list."""
    calls = []
    for name, region in list(vars(net.regions).items()):
        def counted(*args, _region=region):
            calls.append(1)
            return _region(*args)
        setattr(net.regions, name, counted)
    return calls


def _needless_if_outputs(model) -> list[str]:
    """If outputs that both arms take from one outer value, or that repeat another output's pair of values.

    Each If output is a copy on every call: those values can be read without one.
    """
    def source(branch, k):
        out = branch.output[k].name
        node = next((n for n in branch.node if out in n.output), None)
        return node.input[0] if node is not None and node.op_type == "Identity" else out

    found = []

    def walk(graph):
        for node in graph.node:
            branches = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
            if node.op_type == "If":
                seen = set()
                for k, out in enumerate(node.output):
                    pair = (source(branches["then_branch"], k), source(branches["else_branch"], k))
                    if pair[0] == pair[1] or pair in seen:
                        found.append(out)
                    seen.add(pair)
            for branch in branches.values():
                walk(branch)

    walk(model.graph)
    return found


def _inner_copies(graph) -> list[str]:
    """Outputs of If branches and loop bodies that copy a value computed in the same subgraph.

    Such a value can be the subgraph's output as it is; only values from outside need the copy.
    """
    found = []
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                made = {out for n in attr.g.node for out in n.output if n.op_type != "Identity"}
                outputs = {o.name for o in attr.g.output}
                found += [n.output[0] for n in attr.g.node
                          if n.op_type == "Identity" and n.input[0] in made and n.output[0] in outputs
                          and n.input[0] not in outputs]  # one value in two outputs needs a copy
                found += _inner_copies(attr.g)
    return found


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        assert type(a) is type(b) and a == b


@pytest.mark.parametrize("path", FUSED, ids=lambda p: os.path.basename(p)[:-3])
def test_fused_graph_matches_the_host(converted, path):
    fused = converted(path, check=20)
    host = converted(path, check=20, fuse="none")
    assert fused.check.passed and host.check.passed

    manifest = json.load(open(os.path.join(fused.out, "manifest.json")))
    blocks = [r for r in manifest["regions"] if r.get("fuses")]
    assert blocks, fused.unfused
    # Every decision and loop moved into the graph; the host keeps none.
    assert _host_control(fused.out) == 0 and _host_control(host.out) > 0
    for block in blocks:
        graph = onnx.load(os.path.join(fused.out, block["artifact"]))
        assert not _needless_if_outputs(graph)
        assert not _inner_copies(graph.graph)

    a, b = dycl.load(fused.out), dycl.load(host.out)
    calls_a, calls_b = _count_calls(a), _count_calls(b)
    for inp in fused.spec.sample_inputs(24):
        args = [to_numpy(v) for v in inp]
        _same(a(*args), b(*args))
    assert sum(calls_a) < sum(calls_b)


@pytest.mark.parametrize("path", [os.path.join(ZOO, "caption.py"), os.path.join(ZOO, "seq2seq.py"),
                                  os.path.join(MODELS, "c_for_break_decoder.py")],
                         ids=lambda p: os.path.basename(p)[:-3])
def test_a_list_a_fused_loop_builds_is_stacked_in_its_graph(converted, path):
    """`torch.stack(tokens, dim=1)` after a loop that runs at least once: the loop's stacked items, axis moved
    in the graph; the host neither splits them into a list nor joins it again."""
    result = converted(path, check=20)
    assert result.check.passed and result.check.eta == 0
    code = [line.strip() for line in open(os.path.join(result.out, "host.py")) if not line.strip().startswith("#")]
    assert not [line for line in code if "np.stack" in line or ".extend(" in line or line.endswith("= []")]
    assert len([line for line in code if "= regions." in line]) == 1


def test_measured_fusion_keeps_a_graph_only_where_it_was_faster(converted):
    """The default: every correct block is timed against the host; the slower side goes, with the timings."""
    result = converted(os.path.join(ZOO, "branchynet.py"), check=20, fuse="measured")
    assert result.check.passed and result.check.eta == 0
    timed_out = [u for u in result.unfused if "as one graph it ran in" in u]
    assert bool(result.fused) != bool(timed_out), (result.fused, result.unfused)
    if timed_out:
        assert _host_control(result.out) > 0 and "µs in the host" in timed_out[0]


def test_samples_reach_every_exit_of_the_fused_loop():
    """c_while_item_counter's samples stop it after zero iterations, on its test, its `break` and its cap."""
    from dycl.modelfile import load_model_file

    spec = load_model_file(os.path.join(MODELS, "c_while_item_counter.py"))
    counts = {spec.model(*inp)[1] for inp in spec.sample_inputs(24)}
    assert {0, 1, 6} <= counts and counts - {0, 1, 6}, counts


def test_report_says_where_each_decision_runs(converted):
    result = converted(os.path.join(ZOO, "skipnet.py"), check=20)
    report = open(os.path.join(result.out, "report.md")).read()
    assert "## Host code run inside graphs" in report
    assert report.count("(ONNX If)") == len(result.program.decisions) > 0
    host = open(os.path.join(result.out, "host.py")).read()
    assert "run as one region" in host and "#   if gate_prob.item() > 0.5:" in host


def test_code_left_in_the_host_says_why(converted):
    # c_outputs_structures returns a list of 2 or 3 arrays, depending on a decision: no graph output has that type.
    result = converted(os.path.join(MODELS, "c_outputs_structures.py"), check=20)
    assert "forward L30: `feats` has a different type on each arm of decision L30" in result.unfused, result.unfused
    report = open(os.path.join(result.out, "report.md")).read()
    assert "Left in the host" in report


@pytest.mark.parametrize("text", ["a // b", "a % b", "a * b - 3", "-a + b", "a < b", "a != b and not a == 0",
                                  "a * 0.5 >= b", "b // 2.5"])
def test_host_expressions_compute_as_python_does(text):
    """Host arithmetic moved into a graph keeps Python's semantics (floor division, the sign of %, float64)."""
    import itertools

    import libcst as cst
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from dycl.fuse.expr import Expr
    from dycl.fuse.graph import Env, Graph, Names, Val

    names = Names()
    graph = Graph(names)
    env = Env(source=lambda n: Val(n, "int"))
    expr = Expr(graph, env)
    node = cst.parse_expression(text)
    out = expr.test(node) if any(op in text for op in ("<", ">", "=", " and ")) else expr(node)
    model = helper.make_model(helper.make_graph(
        graph.nodes, "t", [helper.make_tensor_value_info(n, TensorProto.INT64, []) for n in "ab"],
        [helper.make_tensor_value_info(out.name, out.elem, [])], initializer=graph.initializers),
        opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for a, b in itertools.product([-7, -3, 0, 4, 9], [-4, -1, 3, 5]):
        (got,) = session.run(None, {"a": np.array(a, np.int64), "b": np.array(b, np.int64)})
        want = eval(text, {}, {"a": a, "b": b})
        assert got.item() == want, (text, a, b, got, want)


@pytest.mark.parametrize("cond", [True, False], ids=["if", "loop"])
@pytest.mark.parametrize("text", ["g.item() > 0.5", "g.item() <= 0.1", "g.item() != -2", "not g.item() < 3",
                                  "k.item() == 2", "k.item() > 2.5", "g.item() < 0.99", "g.item() >= 0.1",
                                  "g.item() > 0.1", "g.item() == 0.1", "g.item() < 1e39", "g.item() > -1e39"])
def test_if_conditions_on_item_compare_as_python_does(text, cond):
    """`a.item() OP literal` in an If's or a loop's test compares on `a` itself, in its own type, where that
    gives every value Python's answer: a literal exact in that type, or a float's neighbour in an ordering."""
    import libcst as cst
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from dycl.fuse.expr import Expr
    from dycl.fuse.graph import Env, Graph, Names, Val

    graph = Graph(Names())
    elems = {"g": TensorProto.FLOAT, "k": TensorProto.INT64}
    expr = Expr(graph, Env(source=lambda n: Val(n, "array", elems[n])))
    out = expr.test(cst.parse_expression(text), cond=cond)
    ops = [n.op_type for n in graph.nodes]
    direct = "== 0.1" not in text and "2.5" not in text  # 0.1 is no float32 to equal; 2.5 is not an int
    assert ("Cast" not in ops) == direct and ops.count("Reshape") == (0 if direct and cond else 1), ops
    model = helper.make_model(helper.make_graph(
        graph.nodes, "t", [helper.make_tensor_value_info(n, e, [1, 1]) for n, e in elems.items()],
        [helper.make_tensor_value_info(out.name, out.elem, None)], initializer=graph.initializers),
        opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tenth = np.float32(0.1)
    near = [np.nextafter(np.float32(v), np.float32(d)) for v in (0.1, 0.99) for d in (-1, 2)]
    big = np.finfo(np.float32).max
    for g in [0.5, np.nextafter(np.float32(0.5), 1), 0.25, tenth, np.nextafter(tenth, 0), -2, 3, np.nan,
              np.float32(0.99), *near, big, -big, np.inf, -np.inf]:
        for k in [1, 2, 3]:
            arrays = {"g": np.full((1, 1), g, np.float32), "k": np.full((1, 1), k, np.int64)}
            (got,) = session.run(None, arrays)
            want = eval(text, {}, {"g": arrays["g"], "k": arrays["k"]})
            assert got.size == 1 and bool(got.item()) == want, (text, g, k, got, want)


LOOP_OVER_BATCH = os.path.join(MODELS, "loop_over_batch.py")


def test_loop_over_dynamic_batch_fuses_and_serves_every_size(converted):
    import torch

    result = converted(LOOP_OVER_BATCH, check=6)
    net = dycl.load(result.out)
    # the fused graph declares its input's rank and static width, so that onnxruntime can plan; not its batch
    fused = [m for m in (onnx.load(os.path.join(result.out, "regions", f), load_external_data=False)
                         for f in os.listdir(os.path.join(result.out, "regions")) if f.endswith(".onnx"))
             if any(n.op_type == "Loop" for n in m.graph.node)]
    assert fused, "the loop over the batch was not fused"
    dims = [[d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
            for i in fused[0].graph.input]
    assert [None, 6] in dims, dims
    gen = torch.Generator().manual_seed(2)
    for batch in range(7):
        x = torch.randn(batch, 6, generator=gen)
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, atol=1e-5)


@pytest.mark.parametrize("failure", ["compile", "build"])
def test_fusion_that_fails_leaves_the_code_in_the_host(tmp_path, monkeypatch, failure):
    import dycl.fuse
    from dycl.backends.onnxruntime import OnnxRuntimeBackend
    from dycl.convert import ConvertOptions, convert

    if failure == "compile":
        compile_region = OnnxRuntimeBackend.compile

        def compile_refusing_blocks(self, onnx_path, artifact_path):
            if os.path.basename(onnx_path).startswith("block_"):
                raise RuntimeError("[ONNXRuntimeError] : 10 : INVALID_GRAPH : a stand-in for a refused graph")
            return compile_region(self, onnx_path, artifact_path)

        monkeypatch.setattr(OnnxRuntimeBackend, "compile", compile_refusing_blocks)
        reason = "onnxruntime refused the graph: [ONNXRuntimeError] : 10 : INVALID_GRAPH"
    else:
        def broken_build(*args, **kwargs):
            raise IndexError("a stand-in for a bug in the graph builder")

        monkeypatch.setattr(dycl.fuse, "_build", broken_build)
        reason = "no graph built (IndexError: a stand-in for a bug in the graph builder)"
    opts = ConvertOptions(LOOP_OVER_BATCH, str(tmp_path / "out"), check=4)
    opts.fuse = "all"
    result = convert(opts)
    assert result.check.passed and not result.fused
    assert any(reason in why for why in result.unfused), result.unfused


def test_a_fusion_makes_a_new_program_and_leaves_the_old_one_as_it_was(converted):
    # fuse.Fusion.applied: the tree is never changed in place; the ifs and lists on the way to the run are copied
    from dycl.fuse import Fusion
    from hostgen.fused import FusedBlock
    from rewrite.cfg import If, host_nodes

    result = converted(os.path.join(MODELS, "golden_gated.py"), check=20, fuse="none")
    program = result.program
    before = list(host_nodes(program.body))
    inner = next(n for n in program.body if isinstance(n, If))
    run = inner.orelse[:1]  # a run nested in an arm
    block = FusedBlock("block_test", [], [], [], [], run, run[0].region.origin if hasattr(run[0], "region")
                       else run[0].origin)
    new = Fusion(run, [], block).applied(program)
    assert list(host_nodes(program.body)) == before  # unchanged
    copied = next(n for n in new.body if isinstance(n, If) and n.decision == inner.decision)
    assert copied is not inner and copied.orelse[0] is block and copied.body is inner.body
    assert copied in new.decisions and inner not in new.decisions and inner in program.decisions
    assert Fusion(run, [], block).applied(new) is None  # its run is no longer in that tree
