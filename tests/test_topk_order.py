"""dycl/topk_order.py: an unsorted top-k is exported and verified sorted, one order on every backend."""
import os

import numpy as np
import onnx
import pytest
import torch

from conftest import MODELS
from dycl.convert import ConvertOptions, StepFailed, convert
from dycl.topk_order import SortedTopk


def test_every_spelling_of_unsorted_topk_is_sorted_within():
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    want = torch.topk(x, 4, dim=-1)
    smallest = torch.topk(x, 4, dim=-1, largest=False)
    assert not torch.equal(torch.topk(x, 4, dim=-1, sorted=False).indices, want.indices)  # torch's own order
    with SortedTopk():
        for got in (torch.topk(x, 4, dim=-1, sorted=False), x.topk(4, -1, True, False),
                    torch.topk(x, 4, -1, True, False), x.topk(k=4, sorted=False)):
            assert torch.equal(got.indices, want.indices) and torch.equal(got.values, want.values)
        assert torch.equal(torch.topk(x, 4, -1, False, False).indices, smallest.indices)


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_unsorted_topk_leaving_its_region_converts(converted, backend):
    # onnxruntime's TopK with sorted=0 returned the 2 of 8 smallest first, torch sorted: the region's
    # verification refused "compiled output 0 differs from torch by ..." before the graph was sorted.
    import dycl

    result = converted(os.path.join(MODELS, "topk_unsorted.py"), backend=backend, check=8)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-6
    assert result.check.paths >= 2
    if backend == "onnxruntime":
        graphs = [onnx.load(os.path.join(result.out, "regions", f))
                  for f in os.listdir(os.path.join(result.out, "regions")) if f.endswith(".onnx")]
        flags = [a.i for g in graphs for n in g.graph.node if n.op_type == "TopK" for a in n.attribute
                 if a.name == "sorted"]
        assert flags == [1]
    net = dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(6, seed=4):
        with torch.no_grad():
            expected = result.spec.model(x)
        for e, g in zip(expected, net(x.numpy())):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-6, atol=1e-6)


def test_returning_torchs_unsorted_order_is_refused_by_the_check(tmp_path):
    opts = ConvertOptions(os.path.join(MODELS, "topk_unsorted_returned.py"), str(tmp_path / "out"), check=4)
    with pytest.raises(StepFailed) as info:
        convert(opts)
    assert info.value.step == "check", str(info.value)
    assert "with sorted=False, in out_L11 (forward L11): " in str(info.value)
    assert not (tmp_path / "out").exists()


def test_sort_and_argsort_are_stable_within():
    # onnxruntime sorts through TopK, which puts equal keys in index order; torch's CPU sort mixes them
    # from 16 elements on (JetMoE sorts expert ids, most of them equal)
    x = torch.randint(0, 4, (300,), generator=torch.Generator().manual_seed(0))
    up, down = x.sort(dim=0, stable=True).indices, x.sort(dim=0, descending=True, stable=True).indices
    assert not torch.equal(x.sort(0).indices, up)
    with SortedTopk():
        for got in (x.sort(0), torch.sort(x, 0), x.sort(dim=0), torch.sort(x), x.sort(), x.sort(stable=False)):
            assert torch.equal(got.indices, up)
        assert torch.equal(x.sort(0, True).indices, down) and torch.equal(torch.argsort(x, 0, True), down)
        assert torch.equal(x.argsort(0), up) and torch.equal(torch.argsort(x, dim=0), up)
