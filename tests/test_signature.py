"""Region and input signatures: typed classes whose serialisation is the manifest."""
from __future__ import annotations

import json
import os

import pytest

from conftest import MODELS, run_python
from dycl.runtime.signature import GRAPH, INPUT, InputLeaf, OutputLeaf, Param, Port, RegionSignature

GATE = RegionSignature(
    name="gate_L42", origin="forward L42-44", artifact="regions/gate_L42.onnx", backend="onnxruntime",
    inputs=(Port("x", {"t": "array"}), Port("state", {"t": "tuple", "items": [{"t": "array"},
                                                                            {"t": "scalar", "dtype": "int64"}]})),
    outputs=(Port("h", {"t": "array"}), Port("x", {"t": "array"})),
    input_leaves=(InputLeaf("float32", ("batch", 8)), InputLeaf("float32", (1, 8)), InputLeaf("int64", ())),
    graph_inputs=(0, 2), output_leaves=(OutputLeaf(GRAPH, 0), OutputLeaf(INPUT, 0)), source_lines=(42, 44))


def test_region_signature_round_trips_through_json():
    data = GATE.to_json()
    assert list(data) == ["name", "origin", "artifact", "backend", "inputs", "outputs", "input_leaves",
                          "graph_inputs", "output_leaves", "source_lines"]  # the manifest's order, no "fuses"
    assert data["input_leaves"][0] == {"dtype": "float32", "shape": ["batch", 8]}
    assert data["output_leaves"] == [{"source": "graph", "index": 0}, {"source": "input", "index": 0}]
    assert RegionSignature.from_json(json.loads(json.dumps(data))) == GATE


def test_fused_region_signature_round_trips_with_what_it_fuses():
    fused = RegionSignature(name="block_L30", origin="forward L30-41", artifact=None, backend="onnxruntime",
                            inputs=(Port("x", {"t": "array"}),), outputs=(Port("out", {"t": "array"}),),
                            input_leaves=(InputLeaf("float32", None),), graph_inputs=(0,),
                            output_leaves=(OutputLeaf(GRAPH, 0),), source_lines=(30, 41),
                            fuses=("gate_L30", "body_L35"))
    data = json.loads(json.dumps(fused.with_artifact("regions/block_L30.onnx").to_json()))
    assert data["fuses"] == ["gate_L30", "body_L35"] and data["input_leaves"] == [{"dtype": "float32", "shape": None}]
    assert RegionSignature.from_json(data) == fused.with_artifact("regions/block_L30.onnx")


def test_params_round_trip_and_scalars_carry_no_dims():
    params = [Param("x", "array", "float32", ("batch", 3, 32)), Param("k", "int"), Param("mask", "NoneType")]
    assert [p.to_json() for p in params] == [
        {"name": "x", "kind": "array", "dtype": "float32", "shape": ["batch", 3, 32]},
        {"name": "k", "kind": "int"}, {"name": "mask", "kind": "NoneType"}]
    assert [Param.from_json(json.loads(json.dumps(p.to_json()))) for p in params] == params


def test_a_region_entry_without_a_backend_takes_the_packages():
    data = GATE.to_json()
    del data["backend"]
    assert RegionSignature.from_json(data, backend="tvm").backend == "tvm"


@pytest.mark.parametrize("damage, error", [
    (lambda d: d.pop("origin"), KeyError),
    (lambda d: d.update(output_leaves=[{"source": "elsewhere", "index": 0}]), ValueError),
    (lambda d: d.update(graph_inputs=[-1]), TypeError),
    (lambda d: d.update(input_leaves=[{"dtype": "float32", "shape": [1.5]}]), TypeError),
    (lambda d: d.update(inputs=[{"name": "x", "spec": "array"}]), TypeError),
])
def test_malformed_region_entries_are_refused(damage, error):
    data = GATE.to_json()
    damage(data)
    with pytest.raises(error):
        RegionSignature.from_json(data)


def test_a_packages_manifest_reads_back_as_what_the_conversion_made(converted):
    result = converted(os.path.join(MODELS, "c_while_item_counter.py"), check=10)
    with open(os.path.join(result.out, "manifest.json")) as fh:
        manifest = json.load(fh)
    regions = [RegionSignature.from_json(m) for m in manifest["regions"]]
    assert regions == result.signatures
    assert any(r.fuses for r in regions)  # a fused region among them, as fusion made it
    assert [r.to_json() for r in regions] == manifest["regions"]
    assert [Param.from_json(p).to_json() for p in manifest["signature"]] == manifest["signature"]


def test_the_runtime_reads_signatures_without_torch(converted):
    result = converted(os.path.join(MODELS, "c_while_item_counter.py"), check=10)
    proc = run_python(f"""
import dycl
net = dycl.load({result.out!r})
print([type(p).__name__ for p in net.signature], net.signature[0].is_array)
""")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['Param'] True"
