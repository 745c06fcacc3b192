"""The differential fuzzer (scripts/fuzz.py): a fixed slice of its programs, its comparison, its findings."""
import os

import numpy as np
import pytest

from conftest import MODELS, ROOT
from dycl.convert import ConvertOptions, convert
from rewrite import ConversionError


def test_unreached_code_is_a_diagnostic(tmp_path, monkeypatch):
    # Found by the fuzzer: a region no input reaches failed the conversion in step explore, with
    # no diagnostic. It is refused like any unsupported construct, at the code's line.
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(os.path.join(MODELS, "fuzz_unreached_loop.py"), str(tmp_path / "out"), check=4))
    assert info.value.format() == """\
tests/models/fuzz_unreached_loop.py:23:13: error: no input reached this code, even with every decision forced \
[unreached-code]
                h = torch.tanh(h)
                ^
  Explanation: its region (h_L23) is exported at the shapes seen when the model runs, and no sample input took \
the path to it; forcing each `.item()`/tensor decision both ways did not reach it either (decisions on shapes and \
on Python values cannot be forced)
  Hint: add sample_inputs() that take this path, or remove the code if it can never run

1 error: the model cannot be converted as written."""
    assert not (tmp_path / "out").exists()


def test_unrolled_loop_fuses_each_iteration_apart(converted):
    # Found by the fuzzer: the graphs fused from one stretch of an unrolled loop shared a name,
    # so the last one built replaced the others' artifact.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_unrolled_fusion.py"), check=6)
    assert result.check.passed, result.check.failure
    blocks = [m["name"] for m in result.region_meta if m.get("fuses")]
    assert len(blocks) >= 2 and len(set(blocks)) == len(blocks)
    net = dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(8, seed=3):
        with torch.no_grad():
            expected = result.spec.model(x)[0].numpy()
        np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)


def test_region_behind_two_decisions_gets_the_dynamic_dim(converted):
    # Found by the fuzzer: the region after `elif ...: else:` was reached at one batch size only.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_elif_dims.py"), check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    arms = set()
    for rows in (1, 3, 7):
        for shift in (3.0, -3.0):  # sums far above zero (first arm) and far below (the last else)
            x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(rows)) + shift
            with torch.no_grad():
                arms.add(bool(model.layers[0](x).sum() > 0))
                expected = model(x)[0].numpy()
            np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
    assert arms == {True, False}
