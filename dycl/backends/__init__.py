"""Backends: compile an ONNX file to an artifact; load an artifact to a callable.

A loaded region takes a list of numpy arrays and returns a list of arrays.
Importing this package never imports torch or a compiler; each backend
imports its own library when used.
"""
from __future__ import annotations

from .base import Backend
from .onnxruntime import OnnxRuntimeBackend
from .torch_eager import TorchBackend
from .tvm import TvmBackend

BACKENDS: dict[str, type[Backend]] = {
    OnnxRuntimeBackend.name: OnnxRuntimeBackend,
    TvmBackend.name: TvmBackend,
    TorchBackend.name: TorchBackend,
}

__all__ = ["Backend", "BACKENDS", "get_backend", "artifact_files"]


def get_backend(name: str, **options) -> Backend:
    try:
        return BACKENDS[name](**options)
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}") from None


def artifact_files(artifact_path: str) -> list[str]:
    """The files that make up an artifact, by its suffix (an onnxruntime graph keeps its weights beside it;
    a TVM region's weights name the library they are bound to)."""
    for backend in BACKENDS.values():
        if any(s and artifact_path.endswith(s) for s in (backend.suffix, backend.weights_suffix)):
            return backend.files(artifact_path)
    return Backend.files(artifact_path)
