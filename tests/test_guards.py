"""`assert` and `raise` in forward stay checks in the package: same exception, same message."""
import os

import pytest
import torch

from conftest import MODELS
from dycl.compare import to_numpy

MODEL = os.path.join(MODELS, "guard_checks.py")


def _eager_error(model, *inputs) -> BaseException:
    with pytest.raises(Exception) as info, torch.no_grad():
        model(*inputs)
    return info.value


@pytest.mark.parametrize("backend", ["onnxruntime", "torch"])
def test_failing_checks_raise_as_in_eager(converted, backend):
    import dycl

    result = converted(MODEL, backend=backend, check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    scale = torch.tensor(1.5)
    bad = [
        (-10.0 * torch.ones(1, 8), scale),  # assert x.sum() > -40, "input sum too small"
        (1e5 * torch.ones(3, 8), scale),  # assert (h.abs() < 1e4).all()
        (torch.zeros(65, 8), scale),  # raise ValueError("batch {} exceeds 64".format(...))
    ]
    for inputs in bad:
        expected = _eager_error(model, *inputs)
        with pytest.raises(type(expected)) as info:
            net(*[to_numpy(v) for v in inputs])
        assert str(info.value) == str(expected)
        assert type(info.value) is type(expected)
    for inputs in result.spec.sample_inputs(4):  # passing every check, on both arms of the branch
        with torch.no_grad():
            expected = model(*inputs).numpy()
        assert abs(net(*[to_numpy(v) for v in inputs]) - expected).max() < 1e-5


def test_asserts_are_host_checks_in_the_host_source(converted):
    result = converted(MODEL, check=6)
    with open(os.path.join(result.out, "host.py")) as fh:
        host = fh.read()
    assert "raise AssertionError('input sum too small')" in host
    assert "raise ValueError('batch {} exceeds 64'.format(x.shape[0]))" in host
