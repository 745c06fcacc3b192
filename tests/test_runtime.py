"""The torch-free runtime: packages load without torch, inputs are checked, artifacts verified."""
import json
import os

import numpy as np
import pytest

from conftest import MODELS, run_python

GATED = os.path.join(MODELS, "golden_gated.py")
IF_ELSE = os.path.join(MODELS, "c_if_else.py")  # its weights are large enough to lie outside the graph


def test_package_runs_where_torch_cannot_be_imported(converted):
    import torch

    from dycl.modelfile import load_model_file

    result = converted(GATED, check=5)
    spec = load_model_file(GATED)
    inputs = [s[0].numpy() for s in spec.sample_inputs(6)]
    np.save(os.path.join(result.out, "..", "inputs.npy"), np.stack(inputs))
    code = f"""
import numpy as np
try:
    import torch
    raise SystemExit("torch imported")
except ImportError:
    pass
import dycl
net = dycl.load({result.out!r})
xs = np.load({os.path.join(result.out, '..', 'inputs.npy')!r})
outs = [net(x) for x in xs]
assert "torch" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
np.save({os.path.join(result.out, '..', 'outputs.npy')!r}, np.stack([o[0] for o in outs]))
print([o[1] for o in outs])
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    got = np.load(os.path.join(result.out, "..", "outputs.npy"))
    with torch.no_grad():
        expected = [spec.model(torch.from_numpy(x)) for x in inputs]
    np.testing.assert_allclose(got, np.stack([e[0].numpy() for e in expected]), atol=1e-5)
    assert proc.stdout.strip() == str([e[1] for e in expected])


def test_wrong_rank(converted):
    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    with pytest.raises(dycl.InputError) as info:
        net(np.zeros((8,), np.float32))
    assert str(info.value) == "input 'x': expected rank 2 (shape (1, 8)), got rank 1 (shape (8,))"


def test_wrong_dtype(converted):
    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    with pytest.raises(dycl.InputError) as info:
        net(np.zeros((1, 8), np.float64))
    assert str(info.value) == "input 'x': expected dtype float32, got float64"


def test_wrong_static_dim(converted):
    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    with pytest.raises(dycl.InputError) as info:
        net(np.zeros((1, 9), np.float32))
    assert str(info.value) == ("input 'x': dim 1 must be 8 (shape (1, 8)), got 9; "
                               "reconvert with --dynamic x:1=NAME to make it dynamic")


def test_wrong_number_of_inputs(converted):
    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    with pytest.raises(dycl.InputError) as info:
        net()
    assert str(info.value) == "expected 1 inputs (x), got 0"


def test_torch_tensors_are_accepted(converted):
    import torch

    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    x = torch.randn(1, 8)
    a, b = net(x), net(x.numpy())
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]


def test_strided_input_gives_the_contiguous_result(converted):
    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    wide = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    strided = wide[:, ::2]  # a view: not C-contiguous, so not taken by the fast input check
    assert not strided.flags.c_contiguous
    got, expected = net(strided), net(strided.copy())
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1]


def test_inputs_after_a_fitting_call_are_still_checked(converted):
    """The fast input check compares each call with the last inputs that fit: one that differs from them
    only in byte order, contiguity or array type still gets the full check."""
    import dycl

    net = dycl.load(converted(GATED, check=5).out)
    contiguous = []  # what the backend is given: C-contiguous arrays only
    for region in vars(net.regions).values():
        if region.fn is not None:
            def seen(arrays, fn=region.fn):
                contiguous.extend(a.flags.c_contiguous for a in arrays if isinstance(a, np.ndarray))
                return fn(arrays)

            region.fn = seen
    x = np.random.default_rng(1).standard_normal((1, 8)).astype(np.float32)
    expected = net(x)
    with pytest.raises(dycl.InputError) as info:
        net(x.astype(">f4"))
    assert str(info.value) == "input 'x': expected dtype float32, got >f4"
    wide = np.zeros((1, 16), np.float32)
    wide[:, ::2] = x
    got = net(wide[:, ::2])  # same shape and dtype as x, not C-contiguous
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1]
    with pytest.raises(dycl.InputError) as info:
        net(x.tolist())  # a list of the same shape: numbers as float64
    assert str(info.value) == "input 'x': expected dtype float32, got float64"
    assert net(x)[1] == expected[1]
    assert contiguous and all(contiguous)


@pytest.mark.parametrize("suffix", [".onnx", ".weights"])
@pytest.mark.parametrize("hasher", ["builtin", "openssl"])  # small packages, large ones
def test_modified_artifact_is_refused(converted, tmp_path, monkeypatch, suffix, hasher):
    import shutil

    import dycl
    from dycl.runtime import PackageError, verify

    if hasher == "openssl":
        monkeypatch.setattr(verify, "_BUILTIN_MAX_BYTES", 0)
    dycl.load(converted(IF_ELSE, check=5).out)  # verifies every hash

    pkg = tmp_path / "pkg"
    shutil.copytree(converted(IF_ELSE, check=5).out, pkg)
    manifest = json.loads((pkg / "manifest.json").read_text())
    victim = next(f for f in manifest["files"] if f.endswith(suffix))
    with open(pkg / victim, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(PackageError) as info:
        dycl.load(str(pkg))
    assert str(info.value) == f"{pkg}: {victim} was modified after conversion (hash mismatch)"


def test_onnxruntime_weights_lie_beside_the_graph(converted):
    import onnx

    out = converted(IF_ELSE, check=5).out
    manifest = json.loads(open(os.path.join(out, "manifest.json")).read())
    graph = next(f for f in manifest["files"] if f.endswith(".onnx"))
    model = onnx.load(os.path.join(out, graph), load_external_data=False)
    large = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert large and all(e.value == os.path.basename(graph)[:-len(".onnx")] + ".weights"
                         for t in large for e in t.external_data if e.key == "location")
    assert not any(t.raw_data and len(t.raw_data) >= 1024 for t in model.graph.initializer)
    report = json.loads(open(os.path.join(out, "report.json")).read())
    assert report["artifacts"] == len({r["artifact"] for r in manifest["regions"] if r["artifact"]})  # not files


def test_inputs_sharing_a_symbol_must_agree(tmp_path):
    import dycl
    from dycl.convert import ConvertOptions, convert

    out = tmp_path / "multi"
    convert(ConvertOptions(os.path.join(MODELS, "c_multi_input.py"), str(out), check=10,
                           dynamic=["x:0=batch", "y:0=batch"]))
    net = dycl.load(str(out))
    assert [p.shape[0] for p in net.signature] == ["batch", "batch"]
    x = np.ones((3, net.signature[0].shape[1]), np.float32)
    assert net(x, x) is not None
    with pytest.raises(dycl.InputError) as info:
        net(x, x[:2])
    assert str(info.value) == "input 'y': dim 0 ('batch') is 2, but 'batch' is 3 in input 'x' dim 0"


def test_tvm_package_runs_without_torch_at_several_sizes(converted, tmp_path):
    import torch

    from conftest import ZOO
    from dycl.modelfile import resized_inputs

    result = converted(os.path.join(ZOO, "seq_classifier.py"), backend="tvm", check=20)
    spec = result.spec
    params = spec.params
    cases = []
    for batch, time in [(1, 5), (2, 12), (3, 20), (5, 7)]:
        inputs = resized_inputs(spec.sample_inputs(3)[batch % 3], params, spec.dynamic, "batch", batch)
        inputs = resized_inputs(inputs, params, spec.dynamic, "time", time)
        with torch.no_grad():
            expected = spec.model(*inputs).numpy()
        np.save(tmp_path / f"x{len(cases)}.npy", inputs[0].numpy())
        cases.append(expected)
    code = f"""
import os, numpy as np, dycl
cores = os.sched_getaffinity(0)
net = dycl.load({result.out!r})
assert net.manifest["backend"] == "tvm"
for k in range({len(cases)}):
    np.save({str(tmp_path)!r} + f"/y{{k}}.npy", net(np.load({str(tmp_path)!r} + f"/x{{k}}.npy")))
assert os.sched_getaffinity(0) == cores, (cores, os.sched_getaffinity(0))  # TVM must not pin the caller
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for k, expected in enumerate(cases):
        np.testing.assert_allclose(np.load(tmp_path / f"y{k}.npy"), expected, atol=1e-4)


def test_tvm_package_for_another_cpu_is_refused(converted, tmp_path):
    import shutil

    import dycl
    from dycl.backends.tvm import TargetMismatch

    from conftest import ZOO

    pkg = tmp_path / "pkg"
    shutil.copytree(converted(os.path.join(ZOO, "moe.py"), backend="tvm", check=5).out, pkg)
    manifest = json.loads((pkg / "manifest.json").read_text())
    manifest["target"]["mcpu"] = "some-other-cpu"
    (pkg / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(TargetMismatch) as info:
        dycl.load(str(pkg))
    assert str(info.value).startswith("this package was compiled by TVM for CPU 'some-other-cpu'")
