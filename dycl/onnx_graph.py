"""ONNX graph plumbing: inner graphs, reads, names unique across subgraphs, pruning (fusion, the layout pass)."""
from __future__ import annotations

import itertools

import onnx
from onnx import helper

__all__ = ["attr", "subgraphs", "defined", "rename_refs", "Names", "uniquify", "use_counts", "prune", "reads",
           "all_reads", "all_names", "value_shapes", "has_loop", "loop_shapes", "constant_tensor", "name_nodes"]


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def subgraphs(node) -> list:
    """The graphs inside `node` (an If's branches, a Loop's body)."""
    return [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH] \
        + [g for a in node.attribute if a.type == onnx.AttributeProto.GRAPHS for g in a.graphs]


def defined(graph) -> list[str]:
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    names += [t.values.name for t in graph.sparse_initializer]
    return names + [o for n in graph.node for o in n.output if o]


def rename_refs(graph, mapping: dict[str, str]) -> None:
    """Rename references to outer names in `graph` and its subgraphs, except where a graph redefines them."""
    mapping = {k: v for k, v in mapping.items() if k not in set(defined(graph))}
    if not mapping:
        return
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in mapping:
                node.input[i] = mapping[name]
        for sub in subgraphs(node):
            rename_refs(sub, mapping)
    for out in graph.output:
        if out.name in mapping:
            out.name = mapping[out.name]


def all_names(graph) -> set[str]:
    """Every value and node name of `graph` and of the graphs inside its nodes."""
    names = {i.name for i in (*graph.input, *graph.initializer, *graph.output)}
    for node in graph.node:
        names.update((*node.input, *node.output, node.name))
        for sub in subgraphs(node):
            names |= all_names(sub)
    return names


class Names:
    """Fresh names, unique across the whole model."""

    def __init__(self, model):
        self.taken = all_names(model.graph)
        self._count = itertools.count()

    def fresh(self, hint: str) -> str:
        name = hint
        while name in self.taken:
            name = f"{hint}_{next(self._count)}"
        self.taken.add(name)
        return name


def uniquify(graph, seen: set[str], names: Names) -> None:
    """Rename each value a subgraph defines that some other graph defines too.

    onnxruntime's optimised dump reuses names such as `reorder_token_0` in every branch, some shadowing an
    outer initializer; values must be unique for references to cross borders.
    """
    for node in graph.node:
        for sub in subgraphs(node):
            clashes = [n for n in defined(sub) if n in seen]
            mapping = {n: names.fresh(n) for n in clashes}
            if mapping:
                for t in sub.initializer:
                    t.name = mapping.get(t.name, t.name)
                for i in sub.input:
                    i.name = mapping.get(i.name, i.name)
                for vi in sub.value_info:
                    vi.name = mapping.get(vi.name, vi.name)
                for n in sub.node:
                    for k, name in enumerate(n.input):
                        n.input[k] = mapping.get(name, name)
                    for k, name in enumerate(n.output):
                        n.output[k] = mapping.get(name, name)
                    for nested in subgraphs(n):
                        rename_refs(nested, mapping)
                for out in sub.output:
                    out.name = mapping.get(out.name, out.name)
            seen.update(defined(sub))
            uniquify(sub, seen, names)


def use_counts(graph) -> dict[str, int]:
    """How often each name is read in `graph`: node inputs, references from subgraphs, graph outputs."""
    counts: dict[str, int] = {}

    def add(name):
        counts[name] = counts.get(name, 0) + 1

    def visit(g, top):
        for n in g.node:
            for name in n.input:
                add(name)
            for sub in subgraphs(n):
                visit(sub, False)
        if not top:
            for o in g.output:
                add(o.name)

    visit(graph, True)
    for o in graph.output:
        add(o.name)
    return counts


def prune(graph) -> None:
    """Drop nodes whose outputs nothing reads (graph outputs and subgraph references count), innermost first."""
    for node in graph.node:
        for sub in subgraphs(node):
            prune(sub)
    while True:
        read = {o.name for o in graph.output}
        reads(graph, read)
        keep = [n for n in graph.node if any(o in read for o in n.output if o) or not n.output]
        if len(keep) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(keep)


def all_reads(graph) -> set:
    read = {o.name for o in graph.output}
    reads(graph, read)
    return read


def reads(graph, read: set) -> None:
    for node in graph.node:
        read.update(node.input)
        for sub in subgraphs(node):
            read.update(o.name for o in sub.output)
            reads(sub, read)


def value_shapes(portable) -> dict[str, tuple]:
    """Each value's shape in the portable graph, subgraphs included (None for an unknown dim)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(portable)
    except Exception:  # noqa: BLE001 - no shapes: no sums fused
        return {}
    shapes: dict[str, tuple] = {}

    def collect(graph):
        for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                                        for d in t.shape.dim)
        for node in graph.node:
            for sub in subgraphs(node):
                collect(sub)

    collect(inferred.graph)
    return shapes


def has_loop(graph) -> bool:
    return any(n.op_type == "Loop" or any(has_loop(s) for s in subgraphs(n)) for n in graph.node)


def loop_shapes(model: onnx.ModelProto, declared: dict) -> dict[str, tuple]:
    """Each value's shape, where a loop body's inputs take the static dims the regions declare for them
    (ONNX types loop-carried values without a shape)."""
    typed = onnx.ModelProto()
    typed.CopyFrom(model)

    def declare(graph):
        for info in graph.input:
            dims = declared.get(info.name)
            if dims is not None and None not in dims and info.type.HasField("tensor_type"):
                shape = info.type.tensor_type.shape
                del shape.dim[:]
                for d in dims:
                    shape.dim.add().dim_value = d
        for node in graph.node:
            for sub in subgraphs(node):
                declare(sub)

    declare(typed.graph)
    return value_shapes(typed)


def constant_tensor(name: str, scopes: list):
    """The tensor of the initializer or Constant node defining `name` (through Identity nodes) in the
    innermost of `scopes` that defines it (None: not a constant)."""
    for depth in range(len(scopes), 0, -1):
        graph = scopes[depth - 1]
        for tensor in graph.initializer:
            if tensor.name == name:
                return tensor
        maker = next((n for n in graph.node if name in n.output), None)
        if maker is not None and maker.op_type == "Identity":  # torch's export shares equal weights so
            return constant_tensor(maker.input[0], scopes[:depth])
        if maker is not None:  # a Constant node, or no constant
            value = attr(maker, "value") if maker.op_type == "Constant" and maker.domain in ("", "ai.onnx") else None
            return value if isinstance(value, onnx.TensorProto) else None
        if name in {i.name for i in graph.input}:
            return None
    return None


def name_nodes(graph, count) -> None:
    """Node names in graph order: onnxruntime's vary from run to run, and a conversion's files must not."""
    for node in graph.node:
        node.name = f"{node.op_type}_{next(count)}"
        for sub in subgraphs(node):
            name_nodes(sub, count)
