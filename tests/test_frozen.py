"""Values computed from tensors are never frozen into a graph; the check handles empty outputs."""
import os

import numpy as np
import pytest
import torch

from conftest import MODELS
from dycl.check import decisions_of
from dycl.convert import ConvertOptions, StepFailed, convert


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_roll_by_a_value_from_a_tensor(converted, backend):
    import dycl

    result = converted(os.path.join(MODELS, "rolled_by_value.py"), backend=backend, check=6)
    net = dycl.load(result.out)
    shifts = set()
    for (x,) in result.spec.sample_inputs(20, seed=5):
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, atol=1e-5)
        shifts.add(int(x.argmax()) % 5)
    assert len(shifts) >= 3  # the inputs roll by different amounts


def test_frozen_kernel_is_refused_at_export(tmp_path):
    opts = ConvertOptions(os.path.join(MODELS, "frozen_kernel.py"), str(tmp_path / "out"), check=6)
    with pytest.raises(StepFailed) as info:
        convert(opts)
    assert info.value.step == "export"
    assert "on other input values of the same shapes: the graph froze a value computed from a tensor" \
        in str(info.value)
    assert "(forward L15)" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_decisions_of_empty_and_zero_size_outputs():
    assert decisions_of(np.zeros((1, 0), np.float32)) == [[1, 0]]
    assert decisions_of(np.zeros((0, 4), np.float32)) == [[0, 4]]
    assert decisions_of((np.zeros((2, 3), np.float32), np.zeros((0,), np.int64))) == [[0, 0], [0]]
    assert decisions_of(np.full((), 2.0, np.float32)) == [None]
