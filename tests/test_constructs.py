"""Each construct, end to end: converted, and equal to the original on inputs taking every arm.

The model files in tests/models/c_*.py were written to the model-file
convention without looking at dycl's internals; each one's sample_inputs
take both arms of every data-dependent branch.
"""
import glob
import os

import pytest

from conftest import MODELS

CONSTRUCTS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(MODELS, "c_*.py")))


def _assert_both_arms(result):
    for decision in result.program.decisions:
        if decision.dclass == "value":
            arms = {taken for d, taken in result.exploration.natural_arms if d == decision.decision}
            assert arms == {True, False}, f"decision {decision.decision} only went {arms} on the samples"


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_construct_onnxruntime(converted, name):
    result = converted(os.path.join(MODELS, f"{name}.py"), check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4
    assert result.check.paths >= 2
    _assert_both_arms(result)


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_construct_torch_backend(converted, name):
    result = converted(os.path.join(MODELS, f"{name}.py"), backend="torch", check=20)
    assert result.check.passed, result.check.failure
    assert result.check.delta <= 1e-5


def test_constant_shape_decision_is_folded(converted):
    result = converted(os.path.join(MODELS, "c_zeros_device.py"), check=20)
    # `if x.dim() == 3:` cannot change for a static input signature: folded, only the taken arm compiled.
    assert all(d.dclass == "value" for d in result.program.decisions)
    assert result.program.static_decisions >= 1


def test_outputs_keep_their_structure(converted):
    import numpy as np

    import dycl
    from dycl.compare import to_numpy

    result = converted(os.path.join(MODELS, "c_outputs_structures.py"), check=20)
    net = dycl.load(result.out)
    for inp in result.spec.sample_inputs(6):
        expected = to_numpy(result.spec.model(*inp))
        got = net(*[to_numpy(v) for v in inp])
        assert type(got) is type(expected)
        assert list(got) == list(expected) if isinstance(got, dict) else len(got) == len(expected)
        for key in expected:
            e, g = expected[key], got[key]
            assert type(g) is type(e), key
            if isinstance(e, np.ndarray):
                np.testing.assert_allclose(g, e, atol=1e-5)
            elif isinstance(e, (list, tuple)):
                assert len(g) == len(e)
            else:
                assert g == e


def test_loop_body_is_one_region_called_once_per_iteration(converted):
    result = converted(os.path.join(MODELS, "c_for_break_decoder.py"), check=20)
    (loop,) = result.program.loops
    exp = result.exploration
    assert loop.kind == "for"
    assert exp.loop_iterations[loop.decision] > 20  # several iterations per sample
    assert exp.loop_calls[loop.decision] == exp.loop_iterations[loop.decision]


def test_growing_state_gets_a_symbolic_dim(converted):
    import json

    # Kept in the host (fuse="none"): the loop's own region sees the state grow.
    result = converted(os.path.join(MODELS, "c_growing_state.py"), check=20, fuse="none")
    with open(os.path.join(result.out, "manifest.json")) as fh:
        manifest = json.load(fh)
    (region,) = manifest["regions"]
    assert region["input_leaves"] == [{"dtype": "int64", "shape": [1, "i0_d1"]}]
    # The same compiled region ran at every length exploration saw.
    assert len(result.exploration.records[region["name"]].examples) >= 3


def test_declared_dynamic_batch_serves_every_size(converted):
    import numpy as np
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "c_dynamic_batch.py"), check=20)
    net = dycl.load(result.out)
    assert net.signature[0].shape == ("batch", 6)
    files = sorted(os.listdir(os.path.join(result.out, "regions")))
    gen = torch.Generator().manual_seed(1)
    for batch in (1, 2, 4, 7, 16):
        for sign in (1.0, -1.0, 0.0):
            x = 0.1 * torch.randn(batch, 6, generator=gen)
            weight = result.spec.model.score.weight.detach()[0]
            x += sign * 3.0 * weight / weight.norm()
            with torch.no_grad():
                expected = result.spec.model(x).numpy()
            np.testing.assert_allclose(net(x.detach().numpy()), expected, atol=1e-5)
    assert sorted(os.listdir(os.path.join(result.out, "regions"))) == files  # nothing recompiled


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_construct_tvm(converted, name):
    result = converted(os.path.join(MODELS, f"{name}.py"), backend="tvm", check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-4


def test_backend_auto_keeps_one_measured_artifact_per_region(converted):
    import json

    result = converted(os.path.join(MODELS, "c_elif_chain.py"), backend="auto", check=20)
    assert result.check.passed and result.check.eta == 0
    with open(os.path.join(result.out, "manifest.json")) as fh:
        manifest = json.load(fh)
    assert manifest["backend"] == "auto"
    chosen = {r["backend"] for r in manifest["regions"]}
    assert chosen <= {"onnxruntime", "tvm"}
    artifacts = {r["artifact"] for r in manifest["regions"] if r["artifact"]}
    # The kept artifacts' files and nothing else (an onnxruntime graph `x.onnx` keeps its weights in `x.weights`).
    from dycl.backends import artifact_files

    expected = {os.path.relpath(f, result.out) for a in artifacts for f in artifact_files(os.path.join(result.out, a))}
    assert expected >= artifacts
    assert sorted(os.listdir(os.path.join(result.out, "regions"))) == sorted(f.split("/")[1] for f in expected)


def test_len_and_size_in_regions_follow_the_batch(converted):
    """`len(x)` becomes a shape read in region code (rematerialized `n = len(x)` too), so the
    package follows the dynamic batch; the static `len(seq)` stays a constant."""
    import numpy as np
    import torch

    import dycl
    from hostgen import regions_source

    result = converted(os.path.join(MODELS, "c_len_size.py"), check=20)
    assert result.check.passed, result.check.failure
    source = regions_source(result.program)
    assert "len(" not in source and "n = x.shape[0]" in source
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(1)
    for batch in (1, 5, 9):
        for shift in (12.0, -12.0):
            x, seq = torch.randn(batch, 6, generator=gen) + shift, torch.randn(7, 2, generator=gen)
            with torch.no_grad():
                expected = result.spec.model(x, seq).numpy()
            np.testing.assert_allclose(net(x.numpy(), seq.numpy()), expected, rtol=1e-5, atol=1e-4)


def test_parameters_left_out_are_fixed_at_their_defaults(converted):
    import numpy as np

    import dycl
    from dycl.runtime.model import InputError

    result = converted(os.path.join(MODELS, "c_default_params.py"), check=20)
    assert result.program.params == ["x"]
    assert result.program.defaults == {"scale": "2.0", "deep": "False", "mask": "None"}
    assert result.program.static_decisions == 2  # `if deep:` and `if mask is not None:`
    net = dycl.load(result.out)
    with pytest.raises(InputError, match=r"unknown input 'deep' \(it was fixed at its default, False, when the "
                                         r"model was converted\); the inputs are x"):
        net(np.ones((1, 2), np.float32), deep=True)
    with open(os.path.join(result.out, "report.md"), encoding="utf-8") as fh:
        assert "| `scale` | `2.0` |" in fh.read()
