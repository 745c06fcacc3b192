"""Host loops run whole as one onnxruntime `Loop`: same answers as the host loop, at every trip count."""
import ast
import json
import os

import numpy as np
import pytest

import dycl
from conftest import MODELS, ZOO
from dycl.explore import to_numpy

DECODERS = ["rnn_early_stop", "seq2seq", "caption", "act"]


def _host_loops(package: str) -> int:
    tree = ast.parse(open(os.path.join(package, "host.py")).read())
    return sum(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree))


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        assert type(a) is type(b) and a == b


@pytest.mark.parametrize("path", [os.path.join(ZOO, f"{m}.py") for m in DECODERS]
                         + [os.path.join(MODELS, "c_while_item_counter.py"),
                            os.path.join(MODELS, "c_for_break_decoder.py")])
def test_fused_loop_matches_the_host_loop(converted, path):
    fused = converted(path, check=20)
    host = converted(path, check=20, fuse_loops=False)
    assert fused.check.passed and host.check.passed

    manifest = json.load(open(os.path.join(fused.out, "manifest.json")))
    loop_regions = [r for r in manifest["regions"] if r["name"].startswith("loop_")]
    assert loop_regions and all(r["fuses"] for r in loop_regions)
    assert _host_loops(fused.out) == 0 and _host_loops(host.out) == len(loop_regions)

    a, b = dycl.load(fused.out), dycl.load(host.out)
    inputs = fused.spec.sample_inputs(24)
    for inp in inputs:
        args = [to_numpy(v) for v in inp]
        _same(a(*args), b(*args))


def test_fused_loop_covers_every_exit():
    """The samples above stop c_while_item_counter on zero iterations, its test, its `break` and its cap."""
    from dycl.modelfile import load_model_file

    spec = load_model_file(os.path.join(MODELS, "c_while_item_counter.py"))
    counts = {spec.model(*inp)[1] for inp in spec.sample_inputs(24)}
    assert {0, 1, 6} <= counts and counts - {0, 1, 6}, counts


def test_loop_left_in_the_host_says_why(converted):
    result = converted(os.path.join(MODELS, "c_while_continue.py"), check=20)
    assert result.unfused and "decision" in result.unfused[0]
    report = open(os.path.join(result.out, "report.md")).read()
    assert "Loops left in the host" in report and "host loop" in report
