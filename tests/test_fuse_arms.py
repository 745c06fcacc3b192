"""fuse/arms: a shape decision the host can take before a fused run is taken there, with one graph per arm.

Each package is compared with the original model on inputs taking every arm of every decision, at several
sizes of each dynamic dim (an empty batch and NaN inputs included).
"""
import ast
import itertools
import json
import os

import numpy as np
import onnx
import torch

import dycl
from conftest import MODELS, ZOO


def _host_tests(package: str) -> list[str]:
    """The tests of host.py's `if`s (code, not comments)."""
    tree = ast.parse(open(os.path.join(package, "host.py")).read())
    return [ast.unparse(n.test) for n in ast.walk(tree) if isinstance(n, ast.If)]


def _graphs(package: str) -> dict[str, onnx.ModelProto]:
    """Each fused region's portable graph, by the regions it runs."""
    manifest = json.load(open(os.path.join(package, "manifest.json")))
    return {tuple(r["fuses"]): onnx.load(os.path.join(package, r["artifact"]))
            for r in manifest["regions"] if r.get("fuses")}


def _ops(graph) -> list[str]:
    ops = []
    for node in graph.node:
        ops.append(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                ops += _ops(attr.g)
    return ops


def _close(got, expected):
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_dynres_cnn_decides_the_image_width_in_the_host(converted):
    result = converted(os.path.join(ZOO, "dynres_cnn.py"), check=20)
    assert result.check.passed and result.check.eta == 0
    assert _host_tests(result.out) == ["x.shape[-1] > 48"]
    graphs = _graphs(result.out)
    assert len(graphs) == 2  # with and without the downsampling stage
    for fuses, model in graphs.items():
        ops = _ops(model.graph)
        assert ops.count("If") == 1 and "Shape" not in ops, (fuses, ops)  # the gate's If only
        skip = next(n for n in model.graph.node if n.op_type == "If").attribute
        skipped = next(a.g for a in skip if not any(n.op_type == "Conv" or n.op_type == "FusedConv"
                                                   for n in a.g.node))
        # the arm without the second block reads the features the gate pooled: it pools nothing again
        assert "GlobalAveragePool" not in [n.op_type for n in skipped.node], (fuses, [n.op_type for n in skipped.node])

    model, net = result.spec.model, dycl.load(result.out)
    gen = torch.Generator().manual_seed(5)
    seen = set()
    for batch, (height, width), colour in itertools.product([0, 1, 3], [(32, 8), (5, 48), (32, 49), (40, 64)],
                                                            [(1.0, 1.0, 1.0), (-1.0, -1.0, -1.0)]):
        x = torch.tensor(colour).view(1, 3, 1, 1) + 0.5 * torch.randn(batch, 3, height, width, generator=gen)
        with torch.no_grad():
            expected = model(x).numpy()
            feat = model.stem(x)
            feat = model.block1(model.down(feat) if width > 48 else feat)
            seen.add((width > 48, bool(torch.sigmoid(model.gate(feat)).mean() > 0.5)))
        _close(net(x.numpy()), expected)
    assert seen == {(False, False), (False, True), (True, False), (True, True)}
    x = torch.full((2, 3, 8, 64), float("nan"))
    with torch.no_grad():
        _close(net(x.numpy()), model(x).numpy())


def test_two_shape_decisions_in_the_host_and_the_third_in_the_graphs(converted):
    result = converted(os.path.join(MODELS, "shape_arms.py"), check=20)
    assert result.check.passed and result.check.eta == 0
    tests = _host_tests(result.out)
    assert sorted(tests) == ["x.shape[0] > 4", "x.shape[0] > 4", "x.shape[1] > 6"], tests
    graphs = _graphs(result.out)
    assert len(graphs) == 4
    for fuses, model in graphs.items():
        ops = _ops(model.graph)
        exits = "small_L31" in fuses  # the early exit's arms: no code after the decision that returns
        assert exits == ("head_L36_1" not in fuses) and ops.count("If") == (0 if exits else 2), (fuses, ops)

    model, net = result.spec.model, dycl.load(result.out)
    gen = torch.Generator().manual_seed(7)
    gates = set()
    for batch, length, shift in itertools.product([0, 1, 3, 5, 7], [1, 2, 3, 6, 7, 9], [1.0, -1.0]):
        x = torch.randn(batch, length, 6, generator=gen) + shift
        with torch.no_grad():
            expected = model(x).numpy()
            if 0 < batch <= 4:
                h = torch.relu(model.inp(x))
                if length > 6:
                    h = torch.nn.functional.avg_pool1d(h.transpose(1, 2), 2, ceil_mode=True).transpose(1, 2)
                gates.add(bool(torch.sigmoid(model.gate(h.mean(1)) + 4 * x.mean()).mean() > 0.5))
        _close(net(x.numpy()), expected)
    assert gates == {True, False}
    x = torch.full((2, 4, 6), float("nan"))
    with torch.no_grad():
        _close(net(x.numpy()), model(x).numpy())


def test_a_shape_decision_on_what_the_run_computes_stays_in_the_graph(converted):
    """`missing = 8 - x.shape[-1]; if missing > 0:` after a region, `if acc.shape[1] > 3:` after a loop that
    grows `acc`: the host holds neither value before the run."""
    for path in (os.path.join(MODELS, "c_library_state.py"), os.path.join(MODELS, "grown_shape_test.py")):
        result = converted(path, check=20)
        assert result.check.passed and result.fused
        assert _host_tests(result.out) == [], path
