"""Static facts the DyCL subjects keep in tensors and helpers fold at conversion time
(rewrite/constants.py, rewrite/returns.py): only the tests on run-time values stay decisions."""
import os

import numpy as np
import pytest

from conftest import MODELS


@pytest.mark.parametrize("name, decisions", [("c_tensor_counters", 2), ("c_constant_returns", 2),
                                             ("c_type_tests", 1)])
def test_only_the_confidence_tests_stay(converted, name, decisions):
    result = converted(os.path.join(MODELS, f"{name}.py"), check=20)
    assert result.check.passed and result.check.eta == 0
    assert len(result.program.decisions) == decisions
    assert all(d.dclass == "value" for d in result.program.decisions)


def test_constant_updated_in_place_matches_eager(converted):
    # Regions run eagerly (the torch backend): this checks what the front end made of the updates.
    # (ONNX export of `scale.mul_(2)` on a tensor created inside the region loses the update, with or
    # without folding: a region-export limit, not the front end's.)
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "constant_inplace.py"), backend="torch", check=5)
    assert result.check.passed and result.check.delta <= 1e-6
    x = torch.randn(1, 2)
    with torch.no_grad():
        expected, count = result.spec.model(x)
    got, got_count = dycl.load(result.out)(x.numpy())
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-6)
    assert int(got_count) == int(count) == 3 and str(got_count.dtype) == "int32"


def test_shared_constant_updated_in_place_is_refused():
    import importlib.util

    from rewrite import ConversionError, rewrite_model

    spec = importlib.util.spec_from_file_location("bad_shared_constant", os.path.join(MODELS, "bad_shared_constant.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ConversionError) as err:
        rewrite_model(module.get_model(), module.get_inputs())
    (diag,) = err.value.diagnostics
    assert diag.kind == "shared-constant"
    assert diag.loc.line == 11
