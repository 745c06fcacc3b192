"""One package serves every size of the declared dynamic dims: no recompilation, eager-equal."""
import os

import numpy as np
import pytest
import torch

from conftest import ZOO

DYNAMIC_ZOO = ["dynres_cnn", "batch_gated", "seq_classifier"]


def _listing(path):
    return sorted((os.path.relpath(os.path.join(root, f), path), os.path.getmtime(os.path.join(root, f)))
                  for root, _, files in os.walk(path) for f in files)


@pytest.mark.parametrize("name", DYNAMIC_ZOO)
def test_five_sizes_per_dynamic_dim(converted, name):
    import dycl
    from dycl.convert import symbol_sizes
    from dycl.modelfile import resized_inputs

    result = converted(os.path.join(ZOO, f"{name}.py"), check=20)
    spec = result.spec
    assert spec.dynamic, "zoo model declares no dynamic dims"
    before = _listing(result.out)
    net = dycl.load(result.out)
    params = spec.params
    samples = spec.sample_inputs(6)
    for symbol, base in sorted(symbol_sizes(spec, spec.inputs).items()):
        sizes = sorted({1, max(1, base // 2), base, base + 1, base + 5, 2 * base + 3, 3 * base + 7})
        assert len(sizes) >= 5
        for size in sizes:
            for sample in samples:
                inputs = resized_inputs(sample, params, spec.dynamic, symbol, size)
                with torch.no_grad():
                    expected = spec.model(*inputs).numpy()
                got = net(*[v.numpy() for v in inputs])
                np.testing.assert_allclose(got, expected, atol=1e-4, err_msg=f"{symbol}={size}")
                assert (got.argmax(-1) == expected.argmax(-1)).all()
    assert _listing(result.out) == before  # nothing written after conversion


def test_shape_decision_stays_in_the_host(converted):
    result = converted(os.path.join(ZOO, "dynres_cnn.py"), check=20)
    classes = {d.dclass for d in result.program.decisions}
    assert "shape" in classes and "value" in classes
    host = open(os.path.join(result.out, "host.py")).read()
    assert "if x.shape[-1] > 48:" in host
