"""Library helpers folded at conversion time (tests/models/library_helpers.py): `len()` of a `*args`
parameter, `inspect.signature()` of a method, `x is not None` on forward's tensor input, and an
assert and a raise whose messages are implicitly concatenated f-strings."""
import os

import pytest
import torch

from conftest import MODELS
from dycl.compare import to_numpy

MODEL = os.path.join(MODELS, "library_helpers.py")


def test_library_helpers_fold_and_match(converted):
    result = converted(MODEL, check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4 and result.check.paths >= 2
    # `x is not None`, the signature check and the chunking test all fold: the two data-dependent
    # tests stay, and the batch-size check.
    assert sorted(d.dclass for d in result.program.decisions) == ["shape", "value", "value"]


def test_concatenated_fstring_message_is_kept(converted):
    import dycl

    result = converted(MODEL, check=20)
    net = dycl.load(result.out)
    bad = torch.full((2, 8), 1e6)
    with pytest.raises(AssertionError) as eager, torch.no_grad():
        result.spec.model(bad)
    with pytest.raises(AssertionError) as package:
        net(to_numpy(bad))
    assert str(package.value) == str(eager.value) == "net: activations above 10000.0"
    big = torch.zeros(65, 8)
    with pytest.raises(ValueError) as eager, torch.no_grad():
        result.spec.model(big)
    with pytest.raises(ValueError) as package:
        net(to_numpy(big))
    assert str(package.value) == str(eager.value) == "net: a batch of 65 rows, more than 64"
