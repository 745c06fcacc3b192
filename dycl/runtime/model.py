"""`dycl.load`: verify a package, validate inputs, run its host program."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import types

import numpy as np

from ..backends import get_backend
from .region import RegionCallable
from .signature import Param, RegionSignature
from .verify import PackageError, artifact_paths, hasher, package_path, read_manifest, verify_package

__all__ = ["load", "import_host", "CompiledModel", "InputError", "PackageError"]


class InputError(ValueError):
    """An input does not match the signature the package was converted for."""


def import_host(path: str, source: bytes | None = None) -> types.ModuleType:
    """Import host.py from `source` (its verified bytes; read once if not given), never from a bytecode cache."""
    if source is None:
        with open(path, "rb") as fh:
            source = fh.read()
    name = f"dycl_host_{hasher([])(os.path.abspath(path).encode()).hexdigest()[:12]}"
    loader = _VerifiedSource(name, path, source)
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
    loader.exec_module(module)
    return module


class _VerifiedSource(importlib.machinery.SourceFileLoader):
    """Loads a module from bytes already read (and verified): reads no `__pycache__`, writes none."""

    def __init__(self, name: str, path: str, source: bytes):
        super().__init__(name, path)
        self.source = source

    def path_stats(self, path):
        raise OSError("no bytecode cache")  # so get_code neither reads nor writes one

    def get_data(self, path):
        if path != self.path:
            raise OSError(f"{path}: only the verified source is read")
        return self.source


class _Regions:
    """The `regions` namespace host.py calls into."""

    def __init__(self, regions: dict[str, RegionCallable]):
        self.__dict__.update(regions)


class CompiledModel:
    """A converted model: call it with forward's positional inputs."""

    def __init__(self, path: str, manifest: dict, host, regions: dict[str, RegionCallable], digest: str | None = None):
        self.path, self.manifest = path, manifest
        self.digest = digest  # the verified package digest (None when loaded with verify=False)
        self._forward = host.forward
        self.regions = _Regions(regions)
        self.signature: list[Param] = [Param.from_json(p) for p in manifest["signature"]]
        # Per array input (None for others): its dtype and dims.
        self._expect = [(np.dtype(p.dtype), p.shape) if p.is_array else None for p in self.signature]
        # Python scalar inputs: (position, the types taken without a closer look)
        self._scalars = [(k, _SCALAR_TYPES[p.kind]) for k, p in enumerate(self.signature) if p.kind in _SCALAR_TYPES]
        # The key (see _key) of the last inputs that passed the full check: inputs with the same key pass
        # it too, so the common case is one comparison.
        self._fitting = None

    def __call__(self, *inputs, **named):
        if named:
            inputs = self._bind(inputs, named)
        if _key(inputs) != self._fitting and not self._accepts(inputs):
            inputs = self._validate(inputs)
        return self._forward(self.regions, *inputs)

    def _bind(self, inputs: tuple, named: dict) -> tuple:
        """Keyword inputs, by forward's parameter names, in their positions."""
        names = [p.name for p in self.signature]
        args = list(inputs) + [_MISSING] * (len(names) - len(inputs))
        for key, value in named.items():
            if key not in names:
                fixed = self.manifest.get("defaults", {}).get(key)
                why = f" (it was fixed at its default, {fixed}, when the model was converted)" if fixed else ""
                raise InputError(f"unknown input '{key}'{why}; the inputs are {', '.join(names)}")
            k = names.index(key)
            if k < len(inputs):
                raise InputError(f"input '{key}' given twice (by position and by name)")
            args[k] = value
        missing = [n for n, a in zip(names, args) if a is _MISSING]
        if missing:
            raise InputError(f"missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        return tuple(args)

    def _accepts(self, inputs) -> bool:
        """The common case: C-contiguous numpy arrays of the expected dtypes and shapes; remembers their key."""
        if len(inputs) != len(self._expect):
            return False
        for k, types in self._scalars:
            if type(inputs[k]) not in types:
                return False
        sizes: dict = {}  # named dims must agree across inputs
        for value, expect in zip(inputs, self._expect):
            if expect is None:
                continue
            if type(value) is not _ndarray or value.dtype != expect[0] or not value.flags.c_contiguous:
                return False
            dims, shape = expect[1], value.shape
            if len(shape) != len(dims):
                return False
            for want, got in zip(dims, shape):
                if want != got and (want.__class__ is int or sizes.setdefault(want, got) != got):
                    return False
        self._fitting = _key(inputs)
        return True

    def _validate(self, inputs) -> list:
        params = self.signature
        if len(inputs) != len(params):
            names = ", ".join(p.name for p in params)
            raise InputError(f"expected {len(params)} inputs ({names}), got {len(inputs)}")
        args, symbols = [], {}
        for value, param, expect in zip(inputs, params, self._expect):
            if param.kind in _SCALAR_TYPES:
                _check_scalar(value, param)
            args.append(value if expect is None else self._check(value, param, expect[0], symbols))
        return args

    def _check(self, value, param: Param, dtype, symbols: dict):
        name = param.name
        expected = param.shape
        if type(value).__module__.startswith("torch"):
            value = value.detach().cpu().numpy()
        if not isinstance(value, np.ndarray):
            given = type(value).__name__
            value = np.asarray(value)
            if value.dtype.kind in "OSUV":  # None, a string, ragged lists: not an array of numbers
                raise InputError(f"input '{name}': expected a {param.dtype} array of shape {_shape(expected)}, "
                                 f"got {given}")
        hint = "reconvert with --dynamic {name}:{axis}=NAME to make it dynamic"
        if value.ndim != len(expected):
            raise InputError(f"input '{name}': expected rank {len(expected)} (shape {_shape(expected)}), "
                             f"got rank {value.ndim} (shape {tuple(value.shape)})")
        if value.dtype != dtype:
            raise InputError(f"input '{name}': expected dtype {param.dtype}, got {value.dtype}")
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


_MISSING = object()
_ndarray = np.ndarray


def _key(inputs: tuple):
    """Each numpy array by its dtype, shape and strides (which fix its contiguity), anything else by its type:
    inputs with equal keys get equal verdicts from CompiledModel._accepts. It keeps no reference to an input."""
    if len(inputs) == 1:  # forward of one input (as in moe, batch_gated, act): no list
        (v,) = inputs
        return (v.dtype, v.shape, v.strides) if type(v) is _ndarray else type(v)
    return [(v.dtype, v.shape, v.strides) if type(v) is _ndarray else type(v) for v in inputs]
# The Python types a scalar input of each kind is taken as without a closer look (see _check_scalar).
_SCALAR_TYPES = {"int": frozenset({int}), "float": frozenset({float, int}), "bool": frozenset({bool}),
                 "NoneType": frozenset({type(None)})}


def _check_scalar(value, param: Param) -> None:
    kind = param.kind
    if kind == "NoneType":
        ok = value is None
    elif kind == "bool":
        ok = isinstance(value, (bool, np.bool_))
    else:
        numbers = (int, np.integer) if kind == "int" else (int, float, np.integer, np.floating)
        ok = isinstance(value, numbers) and not isinstance(value, (bool, np.bool_))
    if not ok:
        expected = "None" if kind == "NoneType" else f"a Python {kind}"
        raise InputError(f"input '{param.name}': expected {expected}, got {type(value).__name__} {value!r:.40}")


def _shape(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def load(path: str, threads: int = 1, verify: bool = True, digest: str | None = None) -> CompiledModel:
    """Load a converted package; regions run with `threads` intra-op threads.

    Loading runs the package's host.py, like importing a Python module: load only packages you trust.
    `verify` checks every file against the manifest's hashes first (`verify=False` skips only that: paths
    stay confined to the package and the manifest is still checked); `digest` (as printed by `dycl
    convert` and `dycl verify`) pins the package, manifest included, and implies `verify`.
    """
    if verify or digest is not None:
        manifest, actual, host_source = verify_package(path, digest)
    else:
        manifest, actual = read_manifest(path)[0], None
        with open(package_path(path, "host.py"), "rb") as fh:
            host_source = fh.read()
    artifacts = artifact_paths(path, manifest)
    backends = {}
    loaded: dict[str, object] = {}
    regions = {}
    for meta in manifest["regions"]:
        region = _malformed(path, f"region {meta['name']}", RegionSignature.from_json, meta, manifest["backend"])
        artifact, name = region.artifact, region.backend
        if name not in backends:
            try:
                backends[name] = get_backend(name, threads=threads)
            except ValueError as exc:
                raise PackageError(f"{path}: region {region.name}: {exc}") from None
            backends[name].check_target(manifest.get("target"))
        if artifact is None:
            loaded[artifact] = None
        elif artifact not in loaded:
            loaded[artifact] = backends[name].load(artifacts[artifact], path)
        regions[region.name] = _malformed(path, f"region {region.name}", RegionCallable, region, loaded[artifact])
    host = import_host(os.path.join(path, "host.py"), host_source)
    return _malformed(path, "signature", CompiledModel, path, manifest, host, regions, actual)


def _malformed(path: str, what: str, build, *args):
    """`build(*args)`, turning a malformed manifest entry into one PackageError line."""
    try:
        return build(*args)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise PackageError(f"{path}: manifest.json: the {what} entry is malformed ({type(exc).__name__}: {exc})") \
            from None
