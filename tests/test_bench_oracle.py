"""The benchmark's oracle: one graph per path that still computes what the path's decisions read."""
import os
import sys

import numpy as np
import onnx
import torch

from conftest import ROOT, ZOO
from dycl.modelfile import load_model_file

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import peers  # noqa: E402


def _convs(graph: bytes) -> int:
    return sum(node.op_type == "Conv" for node in onnx.load_from_string(graph).graph.node)


def test_oracle_keeps_the_work_behind_decisions():
    spec = load_model_file(os.path.join(ZOO, "branchynet.py"))
    model, deep = spec.model, spec.sample_inputs(3)[2]  # low contrast: past both side branches to the final exit
    with torch.no_grad():
        expected = model(*deep).numpy()
    kept, dead = peers.Oracle(model), peers.Oracle(model, decisions=False)
    for oracle in (kept, dead):
        np.testing.assert_allclose(oracle.runner(("deep",), deep)()[0], expected, rtol=1e-4, atol=1e-5)
    # Three backbone stages either way; the two side branches' convs decide the exits, so only
    # the oracle that keeps decisions runs them (a plain trace turns the entropies into constants).
    assert _convs(dead.graphs[("deep",)]) == 3
    assert _convs(kept.graphs[("deep",)]) == 5
