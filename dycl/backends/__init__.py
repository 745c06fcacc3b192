"""Backends: compile an ONNX file to an artifact; load an artifact to a callable.

A loaded region takes a list of numpy arrays and returns a list of arrays.
Importing this package never imports torch or a compiler; each backend
imports its own library when used. What the driver needs to know of a
backend (what it compiles, whether it runs control flow, its fallback, how it
names artifacts) each backend class declares (see `Backend`); the driver
never asks for one by name.
"""
from __future__ import annotations

from .base import ONNX, TORCH_REGIONS, Backend, TargetMismatch
from .onnxruntime import OnnxRuntimeBackend
from .torch_eager import TorchBackend
from .tvm import TvmBackend

BACKENDS: dict[str, type[Backend]] = {
    OnnxRuntimeBackend.name: OnnxRuntimeBackend,
    TvmBackend.name: TvmBackend,
    TorchBackend.name: TorchBackend,
}

# `--backend auto`: each region on AUTO_FIRST, or on its fallback where that runs the region faster.
AUTO = "auto"
AUTO_FIRST = TvmBackend.name
CHOICES = [*BACKENDS, AUTO]  # what `--backend` takes

__all__ = ["Backend", "TargetMismatch", "BACKENDS", "AUTO", "AUTO_FIRST", "CHOICES", "ONNX", "TORCH_REGIONS", "get_backend",
           "backend_class", "chosen_backends", "takes_option", "artifact_files"]


def get_backend(name: str, **options) -> Backend:
    try:
        return BACKENDS[name](**options)
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}") from None


def backend_class(choice: str) -> type[Backend]:
    """The backend a `--backend` choice compiles regions with first (`auto`: AUTO_FIRST)."""
    name = AUTO_FIRST if choice == AUTO else choice
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {choice!r}; choose one of: {', '.join(CHOICES)}")
    return BACKENDS[name]


def chosen_backends(choice: str) -> list[str]:
    """The backends a `--backend` choice puts regions on by choice, not only as a fallback."""
    first = backend_class(choice)
    return [first.name, first.fallback] if choice == AUTO and first.fallback else [first.name]


def takes_option(choice: str, option: str) -> bool:
    """Whether a backend that `choice` puts regions on takes the conversion option `option` (`tune`, `target`)."""
    return any(option in BACKENDS[name].options for name in chosen_backends(choice))


def artifact_files(artifact_path: str) -> list[str]:
    """The files that make up an artifact, by its suffix (an onnxruntime graph keeps its weights beside it;
    a TVM region's weights name the library they are bound to)."""
    for backend in BACKENDS.values():
        if any(s and artifact_path.endswith(s) for s in (backend.suffix, backend.weights_suffix)):
            return backend.files(artifact_path)
    return Backend.files(artifact_path)
