"""What each backend declares to the driver, and that the driver asks the declarations, not the names."""
from __future__ import annotations

import click
import pytest

from dycl.backends import (AUTO, BACKENDS, CHOICES, ONNX, TORCH_REGIONS, Backend, artifact_files, backend_class,
                           chosen_backends, get_backend, takes_option)
from dycl.backends.onnxruntime import OnnxRuntimeBackend
from dycl.backends.torch_eager import TorchBackend
from dycl.backends.tvm import TvmBackend


def test_each_backend_declares_what_it_consumes_and_runs():
    assert (OnnxRuntimeBackend.consumes, OnnxRuntimeBackend.control_flow, OnnxRuntimeBackend.assumes_finite,
            OnnxRuntimeBackend.fallback, OnnxRuntimeBackend.options) == (ONNX, True, False, None, ())
    assert (TvmBackend.consumes, TvmBackend.control_flow, TvmBackend.assumes_finite,
            TvmBackend.fallback, TvmBackend.options) == (ONNX, False, True, "onnxruntime", ("target", "tune"))
    assert (TorchBackend.consumes, TorchBackend.control_flow, TorchBackend.fallback) == (TORCH_REGIONS, False, None)


def test_declarations_are_consistent():
    from dycl.convert import ConvertOptions

    opts = ConvertOptions("model.py", "out")
    for name, cls in BACKENDS.items():
        assert cls.name == name and cls.consumes in (ONNX, TORCH_REGIONS)
        assert cls.fallback is None or BACKENDS[cls.fallback].fallback is None  # a fallback falls back no further
        assert all(hasattr(opts, option) for option in cls.options)  # what make_backend passes it


def test_backends_name_their_artifacts_and_find_their_files(tmp_path):
    assert OnnxRuntimeBackend.artifact("gate_L42") == "regions/gate_L42.onnx"
    assert TvmBackend.artifact("gate_L42") == "regions/gate_L42.so"
    assert TvmBackend.weights_artifact("gate_L42") == "regions/gate_L42.safetensors"
    assert TorchBackend.artifact("gate_L42") == "regions/gate_L42.json"
    (tmp_path / "regions").mkdir()
    for name in ("r.onnx", "r.weights"):
        (tmp_path / "regions" / name).write_bytes(b"")
    graph = str(tmp_path / OnnxRuntimeBackend.artifact("r"))
    assert artifact_files(graph) == [graph, str(tmp_path / "regions" / "r.weights")]


def test_auto_and_the_choices_come_from_the_registry():
    assert CHOICES == [*BACKENDS, AUTO]
    assert backend_class(AUTO) is TvmBackend and chosen_backends(AUTO) == ["tvm", "onnxruntime"]
    assert chosen_backends("onnxruntime") == ["onnxruntime"]
    assert takes_option(AUTO, "tune") and takes_option("tvm", "target") and not takes_option("onnxruntime", "tune")
    with pytest.raises(ValueError, match="unknown backend 'tflite'; choose one of: onnxruntime, tvm, torch, auto"):
        backend_class("tflite")


def test_the_cli_offers_the_registered_backends():
    from dycl.cli import main

    def choices(command):
        option = next(p for p in main.commands[command].params if p.name == "backend")
        assert isinstance(option.type, click.Choice)
        return list(option.type.choices)

    assert choices("convert") == CHOICES
    assert choices("zoo") == list(BACKENDS)


def test_make_backend_passes_the_options_a_backend_declares():
    from dycl.convert import ConvertOptions

    opts = ConvertOptions("model.py", "out", backend=AUTO)
    opts.target = '{"kind": "llvm", "mcpu": "skylake"}'
    assert opts.make_backend() is None
    assert opts.make_backend("tvm").target == {"kind": "llvm", "mcpu": "skylake"}
    assert isinstance(opts.make_backend("onnxruntime"), OnnxRuntimeBackend)


def test_fusion_runs_on_whichever_chosen_backend_runs_control_flow(monkeypatch):
    from dycl.fuse_step import fusing_backend

    assert [fusing_backend(c) for c in ("onnxruntime", "tvm", "torch", AUTO)] == ["onnxruntime", None, None,
                                                                                 "onnxruntime"]

    class LoopingCompiler(Backend):  # a backend added to the registry, known to the driver by its declarations
        name = "looper"
        control_flow = True

    monkeypatch.setitem(BACKENDS, LoopingCompiler.name, LoopingCompiler)
    assert fusing_backend("looper") == "looper"
    assert get_backend("looper").artifact("r") == "regions/r"
