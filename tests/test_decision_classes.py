"""A decision is shape-determined only where no tensor value can change it: those may be folded
when every run took one arm. Everything else stays a run-time decision."""
import os

import numpy as np
import pytest
import torch

from conftest import MODELS

import dycl


@pytest.mark.parametrize("fuse", ["none", "all"])
def test_tensor_truthiness_and_list_length_are_value_decisions(converted, fuse):
    path = os.path.join(MODELS, "value_truthiness.py")
    result = converted(path, check=10, fuse=fuse)
    assert result.check.passed, result.check.failure
    assert [d.dclass for d in result.program.decisions] == ["value"] * 5
    assert result.program.static_decisions == 0
    net = dycl.load(result.out)
    # The arms no sample takes: t == 0, and two or three of the three gates open.
    for x in (torch.zeros(1, 2), torch.full((1, 2), 2.5), torch.full((1, 2), 5.0)):
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-6)


def test_decision_on_a_scalar_input_is_not_folded(converted):
    result = converted(os.path.join(MODELS, "value_scalar_input.py"), check=10)
    assert result.check.passed, result.check.failure
    assert [d.dclass for d in result.program.decisions] == ["value"]
    net = dycl.load(result.out)
    x = torch.randn(1, 2)
    for k in (2, 3, 7):  # the samples' k, and two that take the other arm
        with torch.no_grad():
            expected = result.spec.model(x, k).numpy()
        np.testing.assert_allclose(net(x.numpy(), k), expected, rtol=1e-5, atol=1e-6)


def test_shape_test_on_a_value_shaped_tensor_is_not_folded(converted):
    result = converted(os.path.join(MODELS, "value_shaped_test.py"), check=10)
    assert result.check.passed, result.check.failure
    assert result.program.static_decisions == 0
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(1)
    for selected in (0, 1, 2, 3, 6):  # 0-2 take the arm no sample took
        x = torch.randn(6, 4, generator=gen)
        x[:, 0] = x[:, 0].abs() + 0.1
        x[selected:, 0] = -x[selected:, 0]
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-6)


def test_shape_test_on_shapes_of_shapes_is_still_folded(converted):
    # `if x.dim() == 3:` on a static input cannot change: folded, as before.
    result = converted(os.path.join(MODELS, "c_zeros_device.py"), check=20)
    assert result.program.static_decisions >= 1


def test_scalar_read_in_a_loop_is_a_value_decision_after_it(converted):
    # Found by the fuzzer (tests/models/fuzz_loop_item_score.py): `score = h.mean().item()` in a while loop,
    # tested after it, was classified shape-determined from the `0.0` it held before the loop, and folded.
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(MODELS), "..", "scripts"))
    import fuzz

    path = os.path.join(MODELS, "fuzz_loop_item_score.py")
    result = converted(path, check=10)
    tests = [d for d in result.program.decisions if "score" in repr(d)]
    assert tests and all(d.dclass == "value" for d in tests)
    net, module = dycl.load(result.out), fuzz._import(path)
    arms = set()
    for inputs in module.sample_inputs(40, seed=5) + module.edge_inputs():
        with torch.no_grad():
            expected = tuple(t.numpy() for t in result.spec.model(*inputs))
            h = result.spec.model.layers[0](inputs[0]) + inputs[1]
        arms.add(bool(h.mean().item() >= 2.0))
        assert fuzz.same(expected, net(*[t.numpy() for t in inputs])) == ""
    assert arms == {True, False}  # the score goes both ways
