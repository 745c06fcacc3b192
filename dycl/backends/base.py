"""The backend protocol."""
from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

__all__ = ["Backend", "RegionFn"]

RegionFn = Callable[[Sequence[np.ndarray]], list]


class Backend:
    """Compile an ONNX file into an artifact; load an artifact as a callable."""

    name = ""
    suffix = ""

    def __init__(self, threads: int = 1):
        self.threads = threads

    @property
    def target(self) -> dict | None:
        """What the artifacts were compiled for, recorded in the manifest (None: portable)."""
        return None

    def check_target(self, target: dict | None) -> None:
        """Refuse, with a clear message, artifacts compiled for another machine."""

    def compile(self, onnx_path: str, artifact_path: str) -> None:
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
