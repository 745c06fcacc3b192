"""Values a branch or loop body computes again that the graph around it already has: read, not recomputed.

Inlining regions into `If` arms repeats work the code before the decision
did: a gated network pools its features for the gate, and the arm that skips
the gated block pools the same features again for the head. onnxruntime
eliminates common subexpressions within one graph, never across a subgraph's
border, so in dynres_cnn that arm's GlobalAveragePool, layout reorder and
Flatten ran on every call where the gate stayed closed: 1.6 µs of 70 µs. The
fused graphs of skipnet, skipnet38, ranet, act and batch_gated have such
repeats too.

A node of an inner graph is dropped where a node before it (earlier in its own
graph, or before the `If`/`Loop` holding it in an enclosing one) has the same
op, attributes and inputs: everything earlier in a graph has run whenever a
node of it, or of a graph inside it, runs. Inputs compare by name, small
constants by value (each inlined region brings its own copy). Ops that draw
random numbers are never merged. Where the dropped node gave a subgraph
output, an Identity of the earlier value takes its place (an output must be
made inside its graph).
"""
from __future__ import annotations

import onnx
from onnx import helper, numpy_helper

from ..onnx_graph import defined, rename_refs, subgraphs

__all__ = ["reuse"]

_RANDOM = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
                     "Bernoulli", "Dropout"})
_SMALL = 16  # constants with at most this many elements compare by value


def reuse(model: onnx.ModelProto) -> int:
    """Drop the nodes of `model`'s inner graphs that repeat an earlier node (see above); how many were."""
    constants = _constants(model.graph)
    return _graph(model.graph, {}, constants, top=True)


def _graph(graph, available: dict, constants: dict, top: bool = False) -> int:
    """Merge `graph`'s nodes into `available` (key -> outputs of the earlier node), dropping repeats."""
    outputs = {o.name for o in graph.output}
    rename: dict[str, str] = {}
    kept, dropped = [], 0
    for node in graph.node:
        for k, name in enumerate(node.input):
            node.input[k] = rename.get(name, name)
        for sub in subgraphs(node):
            rename_refs(sub, rename)
            shadowed = set(defined(sub))
            dropped += _graph(sub, {key: outs for key, outs in available.items()
                                    if not shadowed & (set(key[2]) | set(outs))}, constants)
        key = _key(node, constants)
        earlier = available.get(key) if key is not None else None
        if earlier is None or any(out and not first for out, first in zip(node.output, earlier)):
            if key is not None:
                available.setdefault(key, list(node.output))
            kept.append(node)
            continue
        if top:  # onnxruntime merges the outermost graph's repeats itself
            kept.append(node)
            continue
        dropped += 1
        for out, first in zip(node.output, earlier):
            if out in outputs:  # a subgraph output must be made inside it: a copy
                kept.append(helper.make_node("Identity", [first], [out]))
            elif out:
                rename[out] = first
    del graph.node[:]
    graph.node.extend(kept)
    return dropped


def _key(node, constants: dict):
    """What makes two nodes compute the same values; None for nodes never merged."""
    if node.op_type in _RANDOM or node.domain not in ("", "ai.onnx") or subgraphs(node):
        return None
    attrs = tuple(sorted(a.SerializeToString() for a in node.attribute))
    return node.op_type, attrs, tuple(constants.get(name, name) for name in node.input), len(node.output)


def _constants(graph) -> dict:
    """Each small constant's name (initializers and Constant nodes, in every graph) -> its value, as a key;
    names defined twice are left out."""
    found: dict[str, tuple] = {}
    seen: set[str] = set()
    twice: set[str] = set()

    def add(name, tensor):
        if name in seen:
            twice.add(name)
        seen.add(name)
        if tensor is not None and _size(tensor) <= _SMALL:
            array = numpy_helper.to_array(tensor)
            found[name] = ("const", tensor.data_type, tuple(array.shape), array.tobytes())

    def walk(g):
        for t in g.initializer:
            add(t.name, t)
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                value = next((a.t for a in node.attribute if a.name == "value"), None)
                add(node.output[0], value)
            for sub in subgraphs(node):
                walk(sub)

    walk(graph)
    return {name: key for name, key in found.items() if name not in twice}


def _size(tensor) -> int:
    size = 1
    for d in tensor.dims:
        size *= d
    return size
