"""TVM: weights are compiled as graph inputs, so same-shaped regions share one library (tvm_lift, tvm_params)."""
import json
import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import MODELS

BLOCKS = os.path.join(MODELS, "c_same_shaped_blocks.py")


def _block(prefix: str, seed: int, shared_bias: bool) -> onnx.ModelProto:
    """x @ W1 + b1 -> relu -> @ W2 + b2, reshaped: one block, its names and weights its own."""
    rng = np.random.default_rng(seed)
    w1, w2 = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    b1 = rng.standard_normal(4).astype(np.float32)
    b2 = b1 if shared_bias else rng.standard_normal(4).astype(np.float32)
    inits = [numpy_helper.from_array(w1, f"{prefix}.w1"), numpy_helper.from_array(w2, f"{prefix}.w2"),
             numpy_helper.from_array(b1, f"{prefix}.b1"),
             numpy_helper.from_array(np.array([2, 2], np.int64), f"{prefix}.shape"),
             numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4) / 16, f"{prefix}.proj")]
    nodes = [helper.make_node("MatMul", ["i0", f"{prefix}.w1"], [f"/{prefix}/mm1"], name=f"/{prefix}/MatMul"),
             helper.make_node("Add", [f"/{prefix}/mm1", f"{prefix}.b1"], [f"/{prefix}/a1"]),
             helper.make_node("Relu", [f"/{prefix}/a1"], [f"/{prefix}/r"]),
             helper.make_node("MatMul", [f"/{prefix}/r", f"{prefix}.w2"], [f"/{prefix}/mm2"]),
             # a constant's own computation: done at compile time, not lifted
             helper.make_node("Transpose", [f"{prefix}.proj"], [f"/{prefix}/back"])]
    if shared_bias:  # the exporter stores equal tensors once and reads the copy through an Identity
        nodes.append(helper.make_node("Identity", [f"{prefix}.b1"], [f"/{prefix}/b2"]))
        bias = f"/{prefix}/b2"
    else:
        inits.append(numpy_helper.from_array(b2, f"{prefix}.b2"))
        bias = f"{prefix}.b2"
    nodes += [helper.make_node("Add", [f"/{prefix}/mm2", bias], [f"/{prefix}/a2"]),
              helper.make_node("MatMul", [f"/{prefix}/a2", f"/{prefix}/back"], [f"/{prefix}/mm3"]),
              helper.make_node("Reshape", [f"/{prefix}/mm3", f"{prefix}.shape"], ["o0"])]
    graph = helper.make_graph(nodes, prefix, [helper.make_tensor_value_info("i0", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("o0", TensorProto.FLOAT, [2, 2])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_two_blocks_with_other_names_and_weights_lift_to_the_same_graph():
    from dycl.backends.tvm_lift import NUM_INPUT, lift_weights

    first, first_weights = lift_weights(_block("blocks.0", 0, shared_bias=True))
    second, second_weights = lift_weights(_block("blocks.7", 1, shared_bias=False))

    assert first.SerializeToString() == second.SerializeToString()
    assert [i.name for i in first.graph.input] == ["i0", "p0", "p1", "p2", "p3"]
    assert {p.key: p.value for p in first.metadata_props} == {NUM_INPUT: "1"}
    # The reshape's target and the transposed constant stay constants; the rest are parameters.
    assert sorted(t.name for t in first.graph.initializer) == ["c0", "c1"]
    assert {numpy_helper.to_array(t).dtype for t in first.graph.initializer} == {np.dtype(np.int64), np.dtype(np.float32)}
    # One parameter per use: the shared bias feeds two parameters from one stored array.
    assert first_weights.uses == [0, 1, 2, 1] and len(first_weights.arrays) == 3
    assert second_weights.uses == [0, 1, 2, 3] and len(second_weights.arrays) == 4
    assert not np.array_equal(first_weights.arrays[0], second_weights.arrays[0])


def test_lifted_block_computes_what_the_original_does(tmp_path):
    from dycl.backends.tvm import TvmBackend

    backend = TvmBackend()
    x = np.random.default_rng(2).standard_normal((1, 4)).astype(np.float32)
    runs = {}
    for name, shared in [("plain", False), ("shared", True)]:
        original = tmp_path / f"{name}.onnx"
        onnx.save(_block("blk", 3, shared), str(original))
        graph, weights = backend.split(str(original), str(tmp_path / f"{name}.lifted.onnx"))
        backend.compile(graph, str(tmp_path / f"{name}.so"))
        backend.bind(weights, f"{name}.so", str(tmp_path / f"{name}.safetensors"))
        backend.compile(str(original), str(tmp_path / f"{name}-constant.so"))  # weights compiled in
        runs[name] = [backend.load(str(tmp_path / f), str(tmp_path))([x])[0]
                      for f in (f"{name}.safetensors", f"{name}-constant.so")]
    for lifted, constant in runs.values():
        np.testing.assert_allclose(lifted, constant, rtol=1e-6)
    assert not np.allclose(runs["plain"][0], runs["shared"][0])  # each its own weights


def test_one_element_weights_are_lifted_and_keep_their_rank(tmp_path):
    # A gate's bias ([1]) and a scalar scale ([]): written through np.ascontiguousarray, the 0-d one came
    # back as [1], TVM refused it ("Mismatched p2.ndim"), and gated blocks were kept as constants apart.
    from dycl.backends.tvm import TvmBackend

    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 1)).astype(np.float32), "gate.w"),
             numpy_helper.from_array(np.array([0.25], np.float32), "gate.b"),
             numpy_helper.from_array(np.array(3.0, np.float32), "gate.scale")]
    nodes = [helper.make_node("MatMul", ["i0", "gate.w"], ["mm"]), helper.make_node("Add", ["mm", "gate.b"], ["a"]),
             helper.make_node("Mul", ["a", "gate.scale"], ["o0"])]
    graph = helper.make_graph(nodes, "gate", [helper.make_tensor_value_info("i0", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("o0", TensorProto.FLOAT, [1, 1])], initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "gate.onnx"))
    backend = TvmBackend()
    lifted, weights = backend.split(str(tmp_path / "gate.onnx"), str(tmp_path / "gate.lifted.onnx"))
    assert [i.name for i in onnx.load(lifted).graph.input] == ["i0", "p0", "p1", "p2"]
    assert [a.shape for a in weights.arrays] == [(4, 1), (1,), ()]
    backend.compile(lifted, str(tmp_path / "gate.so"))
    backend.bind(weights, "gate.so", str(tmp_path / "gate.safetensors"))
    x = rng.standard_normal((1, 4)).astype(np.float32)
    got = backend.load(str(tmp_path / "gate.safetensors"), str(tmp_path))([x])[0]
    np.testing.assert_allclose(got, (x @ numpy_helper.to_array(inits[0]) + 0.25) * 3.0, rtol=1e-6)


def test_weights_file_is_deterministic_and_refuses_what_is_malformed(tmp_path):
    from dycl.backends.tvm_params import RegionWeights, WeightsError, library_of, read_weights, write_weights

    weights = RegionWeights([np.arange(6, dtype=np.float32).reshape(2, 3), np.float64(1.5).reshape(())], [1, 0, 1])
    write_weights(str(tmp_path / "a.safetensors"), weights, "lib_L3.so")
    write_weights(str(tmp_path / "b.safetensors"), weights, "lib_L3.so")
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    got, library = read_weights(str(tmp_path / "a.safetensors"))
    assert library == str(tmp_path / "lib_L3.so") == library_of(str(tmp_path / "a.safetensors"))
    assert got.uses == [1, 0, 1] and [a.dtype for a in got.arrays] == [np.float32, np.float64]
    assert [a.shape for a in got.arrays] == [(2, 3), ()]  # a 0-d array stays 0-d
    np.testing.assert_array_equal(got.arrays[0], weights.arrays[0])
    assert got.arrays[1] == 1.5

    with pytest.raises(ValueError):
        write_weights(str(tmp_path / "c.safetensors"), weights, "../outside.so")
    raw = (tmp_path / "a.safetensors").read_bytes()
    (tmp_path / "evil.safetensors").write_bytes(raw.replace(b'"lib_L3.so"', b'"/tmp/x.so"'))
    with pytest.raises(WeightsError, match="not a file name beside it"):
        library_of(str(tmp_path / "evil.safetensors"))
    (tmp_path / "short.safetensors").write_bytes(raw[:-4])
    with pytest.raises(WeightsError, match="malformed array a1"):
        read_weights(str(tmp_path / "short.safetensors"))


def test_same_shaped_regions_share_a_library_and_each_keeps_its_weights(converted):
    from dycl.backends.tvm_params import library_of

    result = converted(BLOCKS, backend="tvm", check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.paths > 4
    manifest = json.load(open(os.path.join(result.out, "manifest.json")))
    artifacts = {m["name"]: m["artifact"] for m in manifest["regions"] if m["artifact"]}
    weights = {name: a for name, a in artifacts.items() if a.endswith(".safetensors")}
    libraries = {name: os.path.relpath(library_of(os.path.join(result.out, a)), result.out)
                 for name, a in weights.items()}
    # Blocks 0-2 are one graph with three sets of weights: one library (block 3 runs the head too).
    assert len(set(weights.values())) == len(weights)
    assert libraries["blocks_0_L28"] == libraries["blocks_1_L28"] == libraries["blocks_2_L28"] == "regions/blocks_0_L28.so"
    assert len(set(libraries.values())) == 4 and result.artifacts == len(weights) == 6
    assert set(libraries.values()) <= set(manifest["files"]) and set(weights.values()) <= set(manifest["files"])
    assert set(libraries.values()) | {a for a in artifacts.values() if a.endswith(".so")} == \
        {f for f in result.compile_seconds}
    assert sorted(f for f in os.listdir(os.path.join(result.out, "regions"))) == \
        sorted(os.path.basename(f) for f in manifest["files"] if f.startswith("regions/"))


def test_verify_covers_the_weights_and_the_library_they_name(converted, tmp_path):
    import dycl
    from dycl.backends.tvm_params import library_of
    from dycl.runtime import PackageError

    source = converted(BLOCKS, backend="tvm", check=20).out
    manifest = json.load(open(os.path.join(source, "manifest.json")))
    victim = next(m["artifact"] for m in manifest["regions"] if (m["artifact"] or "").endswith(".safetensors"))
    library = os.path.relpath(library_of(os.path.join(source, victim)), source)

    altered = tmp_path / "altered"
    shutil.copytree(source, altered)
    with open(altered / victim, "r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 1]))  # one weight changed: same size, same header
    with pytest.raises(PackageError) as info:
        dycl.load(str(altered))
    assert str(info.value) == f"{altered}: {victim} was modified after conversion (hash mismatch)"

    missing = tmp_path / "missing"
    shutil.copytree(source, missing)
    os.remove(missing / library)
    for verify in (True, False):
        with pytest.raises(PackageError) as info:
            dycl.load(str(missing), verify=verify)
        assert str(info.value) == f"{missing}: missing {library}"

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(source, elsewhere)
    raw = (elsewhere / victim).read_bytes()
    name = os.path.basename(library).encode()
    (elsewhere / victim).write_bytes(raw.replace(b'"' + name + b'"', b'"' + b"x" * (len(name) - 3) + b'.so"'))
    with pytest.raises(PackageError) as info:
        dycl.load(str(elsewhere), verify=False)
    assert "is not listed in the manifest's files" in str(info.value)
