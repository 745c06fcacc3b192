"""`dycl.load`: verify a package, validate inputs, run its host program."""
from __future__ import annotations

import importlib.util
import json
import os
import types

import numpy as np

from ..backends import get_backend
from .region import RegionCallable

__all__ = ["load", "CompiledModel", "InputError", "PackageError"]


class InputError(ValueError):
    """An input does not match the signature the package was converted for."""


class PackageError(RuntimeError):
    """The package is incomplete, altered, or was made by an incompatible dycl."""


def _sha256_builtin():
    """CPython's own SHA-256, or None where it is missing."""
    for module in ("_sha2", "_sha256"):  # Python 3.12+, 3.11
        try:
            return __import__(module).sha256
        except ImportError:
            pass
    return None


# `hashlib` loads OpenSSL: 3.6 MB resident in every production process, for hashing a package's files
# once at load. CPython's own SHA-256 is ten times slower (7.5 ms per MB here), so it hashes packages
# up to this size and OpenSSL the larger ones.
_BUILTIN_SHA256 = _sha256_builtin()
_BUILTIN_MAX_BYTES = 32 << 20


def _sha256(path: str, sha256=None) -> str:
    h = (sha256 or _hasher([path]))()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _hasher(paths: list[str]):
    if _BUILTIN_SHA256 is not None and sum(os.path.getsize(p) for p in paths) <= _BUILTIN_MAX_BYTES:
        return _BUILTIN_SHA256
    from hashlib import sha256

    return sha256


def _import_host(path: str) -> types.ModuleType:
    name = f"dycl_host_{_hasher([])(os.path.abspath(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Regions:
    """The `regions` namespace host.py calls into."""

    def __init__(self, regions: dict[str, RegionCallable]):
        self.__dict__.update(regions)


class CompiledModel:
    """A converted model: call it with forward's positional inputs."""

    def __init__(self, path: str, manifest: dict, host, regions: dict[str, RegionCallable]):
        self.path, self.manifest = path, manifest
        self._forward = host.forward
        self.regions = _Regions(regions)
        self.signature = manifest["signature"]
        # Per array input (None for others): its dtype and dims; and the shapes of the last inputs
        # that fit, checked by one comparison.
        self._expect = [(np.dtype(p["dtype"]), tuple(p["shape"])) if p["kind"] == "array" else None
                        for p in self.signature]
        self._fitting: tuple | None = None

    def __call__(self, *inputs):
        if not self._accepts(inputs):
            inputs = self._validate(inputs)
        return self._forward(self.regions, *inputs)

    def _accepts(self, inputs) -> bool:
        """The common case, checked fast: C-contiguous numpy arrays of the expected dtypes and shapes."""
        if len(inputs) != len(self._expect):
            return False
        shapes = []
        for value, expect in zip(inputs, self._expect):
            if expect is None:
                shapes.append(None)
            elif type(value) is not np.ndarray or value.dtype != expect[0] or not value.flags.c_contiguous:
                return False
            else:
                shapes.append(value.shape)
        shapes = tuple(shapes)
        if shapes == self._fitting:
            return True
        sizes: dict = {}  # named dims must agree across inputs
        for shape, expect in zip(shapes, self._expect):
            if expect is None:
                continue
            dims = expect[1]
            if len(shape) != len(dims):
                return False
            for want, got in zip(dims, shape):
                if want != got and (want.__class__ is int or sizes.setdefault(want, got) != got):
                    return False
        self._fitting = shapes
        return True

    def _validate(self, inputs) -> list:
        params = self.signature
        if len(inputs) != len(params):
            names = ", ".join(p["name"] for p in params)
            raise InputError(f"expected {len(params)} inputs ({names}), got {len(inputs)}")
        args, symbols = [], {}
        for value, param, expect in zip(inputs, params, self._expect):
            args.append(value if expect is None else self._check(value, param, expect[0], symbols))
        return args

    def _check(self, value, param: dict, dtype, symbols: dict):
        name = param["name"]
        if type(value).__module__.startswith("torch"):
            value = value.detach().cpu().numpy()
        value = np.asarray(value) if not isinstance(value, np.ndarray) else value
        expected = param["shape"]
        hint = "reconvert with --dynamic {name}:{axis}=NAME to make it dynamic"
        if value.ndim != len(expected):
            raise InputError(f"input '{name}': expected rank {len(expected)} (shape {_shape(expected)}), "
                             f"got rank {value.ndim} (shape {tuple(value.shape)})")
        if value.dtype != dtype:
            raise InputError(f"input '{name}': expected dtype {param['dtype']}, got {value.dtype}")
        for axis, (want, got) in enumerate(zip(expected, value.shape)):
            if isinstance(want, int):
                if want != got:
                    raise InputError(f"input '{name}': dim {axis} must be {want} (shape {_shape(expected)}), "
                                     f"got {got}; " + hint.format(name=name, axis=axis))
            elif symbols.setdefault(want, (got, name, axis))[0] != got:
                first, other, other_axis = symbols[want]
                raise InputError(f"input '{name}': dim {axis} ('{want}') is {got}, but '{want}' is {first} "
                                 f"in input '{other}' dim {other_axis}")
        return value if value.flags.c_contiguous else value.copy(order="C")  # keeps rank 0

    def __repr__(self) -> str:
        m = self.manifest
        return f"<dycl model {m['model']} ({len(m['regions'])} regions, {m['backend']}) from {self.path}>"


def _shape(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def load(path: str, threads: int = 1, verify: bool = True) -> CompiledModel:
    """Load a converted package; regions run with `threads` intra-op threads."""
    manifest_path = os.path.join(path, "manifest.json")
    if not os.path.exists(manifest_path):
        raise PackageError(f"{path}: not a dycl package (no manifest.json)")
    with open(manifest_path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    if verify:
        for rel in manifest["files"]:
            if not os.path.exists(os.path.join(path, rel)):
                raise PackageError(f"{path}: missing {rel}")
        sha256 = _hasher([os.path.join(path, rel) for rel in manifest["files"]])
        for rel, digest in manifest["files"].items():
            if _sha256(os.path.join(path, rel), sha256) != digest:
                raise PackageError(f"{path}: {rel} was modified after conversion (hash mismatch)")
    backends = {}
    loaded: dict[str, object] = {}
    regions = {}
    for meta in manifest["regions"]:
        artifact = meta["artifact"]
        name = meta.get("backend", manifest["backend"])
        if name not in backends:
            backends[name] = get_backend(name, threads=threads)
            backends[name].check_target(manifest.get("target"))
        if artifact is None:
            loaded[artifact] = None
        elif artifact not in loaded:
            loaded[artifact] = backends[name].load(os.path.join(path, artifact), path)
        regions[meta["name"]] = RegionCallable(meta, loaded[artifact])
    host = _import_host(os.path.join(path, "host.py"))
    return CompiledModel(path, manifest, host, regions)
