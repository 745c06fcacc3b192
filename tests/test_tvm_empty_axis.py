"""TVM scans over an axis of length 0 (dycl/backends/tvm_empty_axis.py). Unrepaired, TVM's CumSum there
dies of SIGFPE or corrupts the heap, so each case runs in its own process: a crash fails the case."""
import json
import os
import subprocess
import sys

import pytest

CASE = r"""
import json, sys
import numpy as np
from onnx import TensorProto, helper
import onnx
from dycl.backends.tvm import TvmBackend

shape, axis, reverse, exclusive, directory = json.loads(sys.argv[1])
node = helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=reverse, exclusive=exclusive)
graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b", "c"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("axis", TensorProto.INT64, [], [axis])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), directory + "/g.onnx")
backend = TvmBackend()
backend.compile(directory + "/g.onnx", directory + "/g.so")
run = backend.load(directory + "/g.so", directory)
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
if x.size:
    x.flat[0], x.flat[-1] = np.inf, np.nan
for _ in range(50):  # a corrupted heap shows itself over repeated runs
    y = run([x])[0]
ref = np.flip(x, axis) if reverse else x
ref = np.cumsum(ref, axis=axis)
if exclusive:
    ref = np.concatenate([np.zeros_like(np.take(ref, [0], axis=axis)), np.delete(ref, -1, axis=axis)], axis=axis) \
        if x.shape[axis] else ref
ref = np.flip(ref, axis) if reverse else ref
print(json.dumps([list(y.shape), bool(np.allclose(y, ref, equal_nan=True))]))
"""


@pytest.mark.parametrize("shape,axis,reverse,exclusive", [
    ((1, 0, 4), 1, 0, 0),  # a router that saw no tokens
    ((1, 0, 4), -2, 1, 0),
    ((1, 0, 4), 1, 0, 1),
    ((2, 0, 0), 0, 0, 0),
    ((1, 5, 4), 1, 0, 0),  # and the same answers where the axis is not empty
    ((1, 5, 4), -2, 1, 1),
    ((3, 2, 4), 2, 1, 0),
])
def test_cumsum_on_tvm_at_every_length(tmp_path, shape, axis, reverse, exclusive):
    proc = subprocess.run([sys.executable, "-c", CASE, json.dumps([shape, axis, reverse, exclusive, str(tmp_path)])],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out_shape, matches = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tuple(out_shape) == shape
    assert matches


def test_switch_router_runs_on_tvm_at_zero_tokens(converted):
    # SwitchTransformers' router takes a cumsum over the tokens, and exploration runs it at 0 tokens:
    # unrepaired, the conversion aborted with heap corruption in 3 of 4 runs.
    from conftest import ROOT

    result = converted(os.path.join(ROOT, "tests", "corpus", "switch_capacity.py"), backend="tvm", check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4
    router = [s for s in result.signatures if s.origin.startswith("SwitchTransformersSparseMLP.forward")]
    assert router and all(s.backend == "tvm" for s in router)
