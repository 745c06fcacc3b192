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


def test_nan_exact_oracle_answers_as_torch_where_a_plain_one_does_not():
    """caption's greedy argmax over logits that hold a NaN: torch picks the NaN, onnxruntime's ArgMax skips it."""

    class Argmax(torch.nn.Module):
        def forward(self, x):
            return torch.argmax(x, dim=-1)

    x = torch.tensor([[0.5, float("nan"), 2.0, 1.0]])
    plain, exact = peers.Oracle(Argmax()), peers.Oracle(Argmax(), nan_exact=True)
    expected = Argmax()(x).numpy()
    assert (exact.runner(("p",), (x,))()[0] == expected).all()
    assert not (plain.runner(("p",), (x,))()[0] == expected).all()
    ops = [n.op_type for n in onnx.load_from_string(exact.graphs[("p",)]).graph.node]
    assert "IsNaN" in ops
