"""The backend protocol."""
from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

__all__ = ["Backend", "RegionFn", "ONNX", "TORCH_REGIONS", "TargetMismatch"]

RegionFn = Callable[[Sequence[np.ndarray]], list]

# What a backend compiles (Backend.consumes):
ONNX = "onnx"  # each region exported to an ONNX file
TORCH_REGIONS = "torch-regions"  # nothing: the generated region functions (regions_torch.py) run as written


class TargetMismatch(RuntimeError):
    """The package's artifacts were compiled for another machine (see Backend.check_target)."""


class Backend:
    """Compile an ONNX file into an artifact; load an artifact as a callable.

    Besides the protocol, each backend declares what the driver needs to know of it, so that the driver
    never asks for a backend by name.
    """

    name = ""
    suffix = ""  # of a compiled graph
    weights_suffix = ""  # of a region's own weights file, where the backend lifts weights out (see split)
    consumes = ONNX  # what `compile` takes (see ONNX, TORCH_REGIONS)
    control_flow = False  # runs ONNX If and Loop inside a graph: fusion may run host decisions and loops there
    assumes_finite = False  # its compiler may assume no NaN or infinity: regions are verified on inputs holding them
    fallback: str | None = None  # the backend a region goes to where this one cannot compile it or runs it wrong
    options: tuple[str, ...] = ()  # the conversion options (ConvertOptions attributes) its constructor takes

    @classmethod
    def artifact(cls, region: str) -> str:
        """The path, in the package, of a region's compiled graph."""
        return f"regions/{region}{cls.suffix}"

    @classmethod
    def weights_artifact(cls, region: str) -> str:
        """The path, in the package, of a region's own weights (where `split` lifted them out)."""
        return f"regions/{region}{cls.weights_suffix}"

    def __init__(self, threads: int = 1):
        self.threads = threads

    @property
    def target(self) -> dict | None:
        """What the artifacts were compiled for, recorded in the manifest (None: portable)."""
        return None

    def check_target(self, target: dict | None) -> None:
        """Refuse, with a clear message (TargetMismatch), artifacts compiled for another machine."""

    def compile(self, onnx_path: str, artifact_path: str) -> None:
        raise NotImplementedError

    def split(self, onnx_path: str, graph_path: str) -> tuple[str, object | None]:
        """The graph to compile for a region, and the weights lifted out of it (None: none were).

        A backend that compiles weights as inputs writes the graph without them to `graph_path`, so that
        regions with equal graphs share one compiled artifact and `bind` gives each its own weights.
        By default weights are compiled in: the graph is the ONNX file itself.
        """
        return onnx_path, None

    def bind(self, weights, library: str, artifact_path: str) -> None:
        """Write a region's artifact: its `weights` (from `split`) and the compiled graph `library` beside it."""
        raise NotImplementedError

    @classmethod
    def files(cls, artifact_path: str) -> list[str]:
        """The files that make up the artifact at `artifact_path` (those that exist)."""
        return [artifact_path] if os.path.exists(artifact_path) else []

    def warm_up(self) -> None:
        """Import the compiler now, so that the first compile is not slowed by it."""

    def worker_options(self) -> dict | None:
        """Keyword arguments that rebuild this backend in a compile worker process; None: compile here only."""
        return None

    def load(self, artifact_path: str, package_dir: str) -> RegionFn:
        raise NotImplementedError
