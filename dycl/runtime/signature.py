"""What a package's callables take and give: forward's inputs and each compiled region's ports.

These classes are the definition; `manifest.json` holds their serialisation
(`to_json`), and the runtime reads them back (`from_json`) without torch:

- `Param`: one input of forward (its `signature` entry): an array with dtype
  and dims (an int, or a symbol's name where the dim is dynamic), or a Python
  scalar of a kind (`int`, `float`, `bool`, `NoneType`, ...).
- `RegionSignature`: one region (its `regions` entry): named input and output
  `Port`s, each described by a value spec (see `runtime.spec`: arrays, Python
  scalars, tuples, lists and dicts of them); the flat array leaves its inputs
  make (`InputLeaf`: dtype and dims); which of them feed the compiled graph;
  and where each output leaf comes from (`OutputLeaf`: a graph output, or an
  input passed through unchanged).

A malformed entry raises KeyError, TypeError or ValueError from `from_json`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

__all__ = ["Dim", "Param", "Port", "InputLeaf", "OutputLeaf", "RegionSignature", "ARRAY", "GRAPH", "INPUT"]

Dim = Union[int, str]  # a static size, or the name of a dynamic symbol
ARRAY = "array"  # Param.kind of an array input
GRAPH, INPUT = "graph", "input"  # OutputLeaf.source: a compiled graph's output, or an input passed through


def _dims(value) -> tuple[Dim, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in value):
        raise TypeError(f"dims must be a list of ints and symbol names, not {value!r:.60}")
    return tuple(value)


def _string(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    return value


def _index(value, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"{what} must be an index (a non-negative int), not {value!r:.40}")
    return value


def _spec(value) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("t"), str):
        raise TypeError(f"a value spec must be an object with a 't' kind, not {value!r:.60}")
    return value


@dataclass(frozen=True, slots=True)
class Param:
    """One input of forward, as the runtime checks it."""

    name: str
    kind: str  # ARRAY, or the Python type name of a scalar input ("int", "float", "bool", "NoneType", ...)
    dtype: str | None = None  # arrays only: numpy's name of the dtype
    shape: tuple[Dim, ...] | None = None  # arrays only

    @property
    def is_array(self) -> bool:
        return self.kind == ARRAY

    def to_json(self) -> dict:
        if self.is_array:
            return {"name": self.name, "kind": self.kind, "dtype": self.dtype, "shape": list(self.shape)}
        return {"name": self.name, "kind": self.kind}

    @classmethod
    def from_json(cls, data: dict) -> "Param":
        name, kind = _string(data["name"], "an input's name"), _string(data["kind"], "an input's kind")
        if kind != ARRAY:
            return cls(name, kind)
        shape = _dims(data["shape"])
        if shape is None:
            raise TypeError(f"array input {name!r} has no dims")
        return cls(name, kind, _string(data["dtype"], f"input {name!r}'s dtype"), shape)


@dataclass(frozen=True, slots=True)
class Port:
    """A region input or output: the host's name for it and the spec of the value it carries."""

    name: str
    spec: dict  # see runtime.spec: {"t": "array"}, {"t": "scalar", "dtype": ...}, {"t": "tuple", "items": [...]}, ...

    def to_json(self) -> dict:
        return {"name": self.name, "spec": self.spec}

    @classmethod
    def from_json(cls, data: dict) -> "Port":
        return cls(_string(data["name"], "a port's name"), _spec(data["spec"]))


@dataclass(frozen=True, slots=True)
class InputLeaf:
    """One flat array a region's inputs make: its dtype and dims (None: not recorded, as in a fused region)."""

    dtype: str
    shape: tuple[Dim, ...] | None

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "shape": None if self.shape is None else list(self.shape)}

    @classmethod
    def from_json(cls, data: dict) -> "InputLeaf":
        return cls(_string(data["dtype"], "a leaf's dtype"), _dims(data["shape"]))


@dataclass(frozen=True, slots=True)
class OutputLeaf:
    """Where one flat output leaf comes from: graph output `index`, or input leaf `index` passed through."""

    source: str  # GRAPH or INPUT
    index: int

    def to_json(self) -> dict:
        return {"source": self.source, "index": self.index}

    @classmethod
    def from_json(cls, data: dict) -> "OutputLeaf":
        source = data["source"]
        if source not in (GRAPH, INPUT):
            raise ValueError(f"an output leaf's source must be {GRAPH!r} or {INPUT!r}, not {source!r:.40}")
        return cls(source, _index(data["index"], "an output leaf's index"))


@dataclass(frozen=True, slots=True)
class RegionSignature:
    """One compiled region: what the host passes it, what it returns, and how both map onto its graph."""

    name: str
    origin: str  # "forward L42-44": where its code came from, for error messages
    artifact: str | None  # its compiled artifact, relative to the package (None: nothing to compute)
    backend: str  # the backend that compiled it and runs it
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    input_leaves: tuple[InputLeaf, ...]
    graph_inputs: tuple[int, ...]  # the input leaves the graph takes, in its input order
    output_leaves: tuple[OutputLeaf, ...]
    source_lines: tuple[int, int]  # first and last line
    fuses: tuple[str, ...] | None = None  # a fused region: the regions whose graphs it inlines

    def with_artifact(self, artifact: str | None) -> "RegionSignature":
        return replace(self, artifact=artifact)

    def to_json(self) -> dict:
        data = {
            "name": self.name,
            "origin": self.origin,
            "artifact": self.artifact,
            "backend": self.backend,
            "inputs": [p.to_json() for p in self.inputs],
            "outputs": [p.to_json() for p in self.outputs],
            "input_leaves": [leaf.to_json() for leaf in self.input_leaves],
            "graph_inputs": list(self.graph_inputs),
            "output_leaves": [leaf.to_json() for leaf in self.output_leaves],
            "source_lines": list(self.source_lines),
        }
        if self.fuses is not None:
            data["fuses"] = list(self.fuses)
        return data

    @classmethod
    def from_json(cls, data: dict, backend: str | None = None) -> "RegionSignature":
        """`backend`: the package's, for entries that name none."""
        name = _string(data["name"], "a region's name")
        origin = _string(data["origin"], f"region {name}'s origin")
        artifact = data.get("artifact")
        if artifact is not None:
            _string(artifact, f"region {name}'s artifact")
        first, last = data["source_lines"]
        fuses = data.get("fuses")
        return cls(
            name=name,
            origin=origin,
            artifact=artifact,
            backend=_string(data.get("backend", backend), f"region {name}'s backend"),
            inputs=tuple(Port.from_json(p) for p in data["inputs"]),
            outputs=tuple(Port.from_json(p) for p in data["outputs"]),
            input_leaves=tuple(InputLeaf.from_json(leaf) for leaf in data["input_leaves"]),
            graph_inputs=tuple(_index(k, f"region {name}'s graph input") for k in data["graph_inputs"]),
            output_leaves=tuple(OutputLeaf.from_json(leaf) for leaf in data["output_leaves"]),
            source_lines=(_index(first, "a line"), _index(last, "a line")),
            fuses=None if fuses is None else tuple(_string(f, "a fused region's name") for f in fuses),
        )
