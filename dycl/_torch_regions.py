"""The generated torch region functions, bound to the model's globals (conversion side)."""
from __future__ import annotations

import importlib.util
import json
import os
import sys

import torch

from .runtime.spec import describe, flatten, unflatten

__all__ = ["import_regions", "FlatRegion", "load_torch_regions", "flatten_torch"]


def import_regions(path: str, globals_: dict):
    """Import the generated regions module, with the model modules' globals bound."""
    name = f"dycl_regions_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    for key, value in globals_.items():
        if not key.startswith("__"):
            module.__dict__.setdefault(key, value)
    spec.loader.exec_module(module)
    return module


def flatten_torch(value) -> tuple[dict, list]:
    spec = describe(value, lambda v: isinstance(v, torch.Tensor))
    leaves: list = []
    flatten(value, spec, leaves)
    return spec, leaves


class FlatRegion(torch.nn.Module):
    """A region over flat tensor lists (as ONNX sees it); shares the model's parameters."""

    def __init__(self, model, fn, in_specs, graph_leaves):
        super().__init__()
        self.model = model
        self.fn = fn
        self.in_specs = in_specs
        self.graph_leaves = graph_leaves

    def forward(self, *flat):
        leaves = iter(flat)
        args = [unflatten(s, leaves, scalars_as_arrays=True) for s in self.in_specs]
        outs = self.fn(self.model, *args)
        flat_out: list = []
        for value in outs:
            flatten_torch_into(value, flat_out)
        return tuple(flat_out[k] for k in self.graph_leaves)


def flatten_torch_into(value, out: list) -> None:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flatten_torch_into(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            flatten_torch_into(v, out)
    else:
        out.append(value)


def load_torch_regions(package_dir: str):
    """(model, regions module) for a package converted with the torch backend."""
    from .modelfile import load_model_file

    with open(os.path.join(package_dir, "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    spec = load_model_file(manifest["source"])
    globals_: dict = {}
    for sub in [spec.model, *spec.model.modules()]:
        module = sys.modules.get(type(sub).__module__)
        if module is not None and not module.__name__.startswith("torch"):
            for key, value in vars(module).items():
                globals_.setdefault(key, value)
    regions = import_regions(os.path.join(package_dir, "regions_torch.py"), globals_)
    return spec.model, regions
