"""torch: regions run eagerly against the live model, for debugging the rewrite."""
from __future__ import annotations

import json

from .base import TORCH_REGIONS, Backend, RegionFn

__all__ = ["TorchBackend"]


class TorchBackend(Backend):
    """The artifact is a small JSON file naming the region function and its specs.

    Loading imports the original model file (recorded in the manifest) and the
    generated `regions_torch.py`; this backend needs torch and the model's code.
    """

    name = "torch"
    suffix = ".json"
    consumes = TORCH_REGIONS
    _cache: dict = {}

    def compile(self, onnx_path: str, artifact_path: str) -> None:
        raise RuntimeError("the torch backend compiles nothing")

    def load(self, artifact_path: str, package_dir: str) -> RegionFn:
        import numpy as np
        import torch

        from .._torch_regions import FlatRegion, load_torch_regions

        with open(artifact_path, encoding="utf-8") as fh:
            info = json.load(fh)
        if package_dir not in self._cache:
            self._cache[package_dir] = load_torch_regions(package_dir)
        model, regions = self._cache[package_dir]
        flat = FlatRegion(model, getattr(regions, info["function"]), info["in_specs"], info["graph_leaves"])
        torch.set_num_threads(self.threads)

        def call(arrays):
            with torch.no_grad():
                outs = flat(*[torch.from_numpy(np.array(a)) for a in arrays])
            return [o.detach().numpy() for o in outs]  # a region may return a parameter itself

        return call
