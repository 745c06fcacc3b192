"""A TVM region's own weights: the arrays it binds to its shared library's parameters, and that library.

Regions of the same shape with different weights (the blocks of a ResNet)
share one compiled library; each keeps its weights in a file of its own,
`regions/<region>.safetensors`, in the safetensors layout (an 8-byte header
length, a JSON header, then the raw bytes; see https://huggingface.co/docs/safetensors),
written deterministically so that a reconversion gives the same bytes. Its
metadata names the library (a file beside it) and, for each parameter of the
library in order, which array feeds it: an array used twice is stored once.
Reading it needs numpy only, and never unpickles anything.
"""
from __future__ import annotations

import json
import os
import re
import struct

import numpy as np

__all__ = ["RegionWeights", "write_weights", "read_weights", "library_of", "WeightsError"]

_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64}
_CODES = {np.dtype(t): code for code, t in _DTYPES.items()}
_LIBRARY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.so$")  # a file name beside the weights, nothing else
_MAX_HEADER = 16 << 20


class WeightsError(ValueError):
    """The weights file is malformed."""


class RegionWeights:
    """The arrays of one region, and for each library parameter (in order) the index of its array."""

    __slots__ = ("arrays", "uses")

    def __init__(self, arrays: list[np.ndarray], uses: list[int]):
        self.arrays, self.uses = arrays, uses

    def __repr__(self) -> str:
        return f"<RegionWeights {len(self.arrays)} arrays for {len(self.uses)} parameters>"


def write_weights(path: str, weights: RegionWeights, library: str) -> None:
    if not _LIBRARY.match(library):
        raise ValueError(f"library {library!r} is not a file name ending in .so")
    header: dict = {"__metadata__": {"library": library, "uses": json.dumps(weights.uses)}}
    offset, blobs = 0, []
    for k, array in enumerate(weights.arrays):
        array = np.asarray(array, order="C")  # not ascontiguousarray: it turns a 0-d array into shape (1,)
        blob = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[f"a{k}"] = {"dtype": _CODES[array.dtype], "shape": list(array.shape),
                           "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    raw = json.dumps(header, separators=(",", ":"), sort_keys=True).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned, as the format recommends
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        for blob in blobs:
            fh.write(blob)


def _header(fh, path: str) -> dict:
    head = fh.read(8)
    if len(head) != 8:
        raise WeightsError(f"{path}: not a weights file (too short)")
    (size,) = struct.unpack("<Q", head)
    if size > _MAX_HEADER:
        raise WeightsError(f"{path}: not a weights file (header of {size} bytes)")
    try:
        header = json.loads(fh.read(size))
        meta = header.pop("__metadata__")
        library, uses = meta["library"], json.loads(meta["uses"])
    except (ValueError, KeyError, TypeError) as exc:
        raise WeightsError(f"{path}: malformed weights header ({type(exc).__name__}: {exc})") from None
    if not isinstance(library, str) or not _LIBRARY.match(library):
        raise WeightsError(f"{path}: names the library {library!r}, which is not a file name beside it")
    if not isinstance(uses, list) or not all(isinstance(u, int) and 0 <= u < len(header) for u in uses):
        raise WeightsError(f"{path}: malformed list of parameters")
    return {"library": library, "uses": uses, "arrays": header}


def library_of(path: str) -> str:
    """The path of the library that the weights at `path` belong to (beside it)."""
    with open(path, "rb") as fh:
        header = _header(fh, path)
    return os.path.join(os.path.dirname(path), header["library"])


def read_weights(path: str) -> tuple[RegionWeights, str]:
    """The weights at `path`, and the path of their library."""
    with open(path, "rb") as fh:
        header = _header(fh, path)
        data = fh.read()
    arrays = []
    for k in range(len(header["arrays"])):
        try:
            entry = header["arrays"][f"a{k}"]
            dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
            begin, end = entry["data_offsets"]
            shape = tuple(int(d) for d in entry["shape"])
            if not 0 <= begin <= end <= len(data) or end - begin != dtype.itemsize * int(np.prod(shape)):
                raise ValueError("data offsets do not fit the shape")
            arrays.append(np.frombuffer(data, dtype, count=(end - begin) // dtype.itemsize, offset=begin)
                          .reshape(shape).astype(dtype.newbyteorder("="), copy=False))
        except (KeyError, TypeError, ValueError) as exc:
            raise WeightsError(f"{path}: malformed array a{k} ({type(exc).__name__}: {exc})") from None
    return RegionWeights(arrays, header["uses"]), os.path.join(os.path.dirname(path), header["library"])
