"""Model files: `get_model()`, `get_inputs()`, optional `sample_inputs(n, seed=0)` and `DYNAMIC`."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys

import torch

__all__ = ["ModelSpec", "load_model_file", "parse_input_flag", "parse_dynamic_flag", "resized_inputs",
           "observe_dynamic", "ModelFileError"]


class ModelFileError(Exception):
    """The model file is missing, fails to import, or does not follow the convention."""


class ModelSpec:
    """A model to convert: the live module, example inputs and sample inputs."""

    __slots__ = ("model", "inputs", "samples", "dynamic", "path", "name")

    def __init__(self, model, inputs: tuple, samples, dynamic: dict, path: str, name: str):
        self.model, self.inputs, self.samples = model, inputs, samples
        self.dynamic, self.path, self.name = dynamic, path, name

    @property
    def params(self) -> list[str]:
        """forward's parameter names, in order."""
        import inspect

        return list(inspect.signature(self.model.forward).parameters)

    def sample_inputs(self, n: int, seed: int = 0) -> list[tuple]:
        if self.samples is None:
            return [self.inputs]
        return [tuple(s) for s in self.samples(n, seed=seed)]


def _import_file(path: str):
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such file")
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ModelFileError(f"{path}: importing the model file failed: {type(exc).__name__}: {exc}") from exc
    return module


_INPUT = re.compile(r"^(\w+)=(\w+)\[([\d,\s]*)\]$")


def parse_input_flag(text: str) -> tuple[str, torch.Tensor]:
    """`x=float32[1,3,32,32]` → ("x", a random tensor of that dtype and shape)."""
    m = _INPUT.match(text.strip())
    if not m:
        raise ModelFileError(f"--input {text!r}: expected NAME=DTYPE[D0,D1,...], e.g. x=float32[1,3,32,32]")
    name, dtype, dims = m.groups()
    shape = [int(d) for d in dims.split(",") if d.strip()]
    dt = getattr(torch, dtype, None)
    if not isinstance(dt, torch.dtype):
        raise ModelFileError(f"--input {text!r}: unknown dtype {dtype!r}")
    gen = torch.Generator().manual_seed(0)
    if dt.is_floating_point:
        return name, torch.randn(shape, generator=gen).to(dt)
    if dt == torch.bool:
        return name, torch.randint(0, 2, shape, generator=gen).bool()
    return name, torch.randint(0, 10, shape, generator=gen).to(dt)


_DYNAMIC = re.compile(r"^(\w+):((?:\d+=\w+,?)+)$")


def parse_dynamic_flag(text: str) -> tuple[str, dict[int, str]]:
    """`x:0=batch,2=h` → ("x", {0: "batch", 2: "h"})."""
    m = _DYNAMIC.match(text.strip())
    if not m:
        raise ModelFileError(f"--dynamic {text!r}: expected NAME:DIM=SYMBOL[,DIM=SYMBOL...], e.g. x:0=batch,2=h")
    dims = {}
    for part in m.group(2).strip(",").split(","):
        axis, symbol = part.split("=")
        dims[int(axis)] = symbol
    return m.group(1), dims


def resized_inputs(inputs: tuple, params: list[str], dynamic: dict, symbol: str, size: int) -> tuple:
    """`inputs` with every dim named `symbol` resized to `size`, repeating or dropping entries
    along it (so values keep their distribution)."""
    out = []
    for name, value in zip(params, inputs):
        for axis, sym in dynamic.get(name, {}).items():
            if sym == symbol and isinstance(value, torch.Tensor):
                index = torch.arange(size) % value.shape[axis]
                value = value.index_select(axis, index)
        out.append(value)
    return tuple(out)


def observe_dynamic(spec: ModelSpec, samples: list[tuple]) -> list[dict]:
    """Make dynamic every input dim the samples vary that DYNAMIC does not declare.

    Each such dim gets a symbol named after its input and axis (`x_dim2`),
    added to `spec.dynamic`; returns what was added, with the sizes seen.
    """
    symbols = {sym for dims in spec.dynamic.values() for sym in dims.values()}
    added = []
    for k, name in enumerate(spec.params):
        values = [inputs[k] for inputs in [spec.inputs] + list(samples) if k < len(inputs)]
        if not values or not all(isinstance(v, torch.Tensor) and v.dim() == values[0].dim() for v in values):
            continue
        for axis in range(values[0].dim()):
            sizes = sorted({v.shape[axis] for v in values})
            if len(sizes) < 2 or axis in spec.dynamic.get(name, {}):
                continue
            symbol, n = f"{name}_dim{axis}", 1
            while symbol in symbols:
                n += 1
                symbol = f"{name}_dim{axis}_{n}"
            symbols.add(symbol)
            spec.dynamic.setdefault(name, {})[axis] = symbol
            added.append({"input": name, "axis": axis, "symbol": symbol, "sizes": sizes})
    return added


def load_model_file(path: str, model: str | None = None, inputs: list[str] | None = None,
                    dynamic: list[str] | None = None) -> ModelSpec:
    """Import a model file (or `--model MODULE:CALLABLE`) and build its ModelSpec."""
    module = _import_file(path) if path else None
    if model:
        mod_name, _, attr = model.partition(":")
        target = module if module is not None and mod_name in ("", module.__name__) else importlib.import_module(mod_name)
        factory = getattr(target, attr or "get_model", None)
        if factory is None:
            raise ModelFileError(f"--model {model}: {attr!r} not found in {target.__name__}")
    else:
        factory = getattr(module, "get_model", None)
        if factory is None:
            raise ModelFileError(f"{path}: defines no get_model(); pass --model MODULE:CALLABLE")
    net = factory()
    if not isinstance(net, torch.nn.Module):
        raise ModelFileError(f"{path}: get_model() returned {type(net).__name__}, not an nn.Module")
    net.eval()
    if inputs:
        example = tuple(parse_input_flag(t)[1] for t in inputs)
    elif module is not None and hasattr(module, "get_inputs"):
        example = tuple(module.get_inputs())
    else:
        raise ModelFileError(f"{path}: defines no get_inputs(); pass --input NAME=DTYPE[DIMS] for each input")
    samples = getattr(module, "sample_inputs", None) if module is not None else None
    declared = dict(getattr(module, "DYNAMIC", {}) or {}) if module is not None else {}
    for flag in dynamic or ():
        name, dims = parse_dynamic_flag(flag)
        declared.setdefault(name, {}).update(dims)
    dynamic = declared
    name = os.path.splitext(os.path.basename(path))[0] if path else type(net).__name__
    return ModelSpec(net, example, samples, dynamic, os.path.abspath(path) if path else "", name)
