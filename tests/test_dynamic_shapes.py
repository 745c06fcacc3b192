"""One package serves every size of the declared dynamic dims: no recompilation, eager-equal."""
import os

import numpy as np
import pytest
import torch

from conftest import MODELS, ZOO

DYNAMIC_ZOO = ["dynres_cnn", "batch_gated", "seq_classifier"]


def _listing(path):
    return sorted((os.path.relpath(os.path.join(root, f), path), os.path.getmtime(os.path.join(root, f)))
                  for root, _, files in os.walk(path) for f in files)


@pytest.mark.parametrize("name", DYNAMIC_ZOO)
def test_five_sizes_per_dynamic_dim(converted, name):
    import dycl
    from dycl.sizes import symbol_sizes
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


def test_dynamic_batch_at_its_edges(converted):
    import numpy as np
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "dynamic_edges.py"), check=6)
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(3)
    for batch in range(10):
        x = torch.randn(batch, 6, generator=gen)
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        got = net(x.numpy())
        assert got.shape == expected.shape, batch
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_check_runs_the_edges_of_every_dynamic_dim(tmp_path):
    from dycl.check import check_package
    from dycl.convert import ConvertOptions, convert
    from dycl.modelfile import load_model_file, resized_inputs

    # A package converted for batch 4 only: the check must find it fails at the small sizes.
    opts = ConvertOptions(os.path.join(MODELS, "dynamic_edges.py"), str(tmp_path / "fixed"), check=4)
    opts.fixed_sizes = {"batch": 4}
    result = convert(opts)
    spec = load_model_file(os.path.join(MODELS, "dynamic_edges.py"))
    edges = [(f"batch={b}", resized_inputs(spec.inputs, spec.params, spec.dynamic, "batch", b)) for b in (4, 1)]
    check = check_package(result.out, spec, result.exploration, 4, edges=edges)
    assert not check.passed
    assert check.failure.startswith("at batch=1: ")


def test_dims_the_samples_vary_become_dynamic(converted):
    """c_observed_dynamic declares no DYNAMIC, but its samples have lengths 16 and 32."""
    import json

    import dycl

    result = converted(os.path.join(MODELS, "c_observed_dynamic.py"), check=20)
    assert result.check.passed, result.check.failure
    assert result.observed_dynamic == [{"input": "x", "axis": 2, "symbol": "x_dim2", "sizes": [16, 32]}]
    manifest = json.load(open(os.path.join(result.out, "manifest.json")))
    assert manifest["signature"][0]["shape"] == [1, 4, "x_dim2"]
    report = open(os.path.join(result.out, "report.md")).read()
    assert "| `x` | 2 | `x_dim2` | 16, 32 |" in report
    net = dycl.load(result.out)
    for length in (12, 20, 40):  # sizes no sample had, on both sides of the shape decision
        for shift in (1.0, -1.0):
            x = 0.3 * torch.randn(1, 4, length) + shift
            with torch.no_grad():
                expected = result.spec.model(x).numpy()
            np.testing.assert_allclose(net(x.numpy()), expected, atol=1e-5)
