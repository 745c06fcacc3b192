"""A region's ONNX graph copied into a fused graph: its inputs read from the host values it takes, its
nodes and initializers renamed apart (in the subgraphs it holds too), its outputs bound as host values."""
from __future__ import annotations

import onnx

from ..runtime.signature import GRAPH, RegionSignature
from .graph import NP_ELEM, Env, Graph, Tup, Unfusable, Val, read, scalar_kind

__all__ = ["inline_region"]


def _agreed(a: list | None, b: list | None) -> list | None:
    """The dims two declarations of a value agree on: its rank and the static dims both give (None: unknown)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return [x if x == y else None for x, y in zip(a, b)]


def inline_region(g: Graph, region, signature: RegionSignature, model: onnx.ModelProto | None, env: Env,
                  shapes: dict) -> None:
    """Copy a region's graph into `g`, reading its inputs from `env` and binding its outputs there.

    `shapes` collects the dims the region declares for each value it reads: its rank, and each dim static where
    every region reading it declares that size (None: unknown); and those it declares for the values it computes.
    """
    args: list[Val] = []  # the region's input leaves, in order
    for var, inp in zip(region.inputs, signature.inputs):
        _leaves_in(g, read(env, var), inp.spec, args, f"region {region.name} input `{var}`")
    graph_outs: list[Val] = []
    if model is not None:
        prefix = g.names.fresh(region.name)
        rename = {}
        for inp in model.graph.input:
            rename[inp.name] = args[int(inp.name[1:])].name
            dims = _dims(inp)
            shapes[rename[inp.name]] = _agreed(shapes.get(rename[inp.name], dims), dims)

        def mapped(n: str) -> str:
            if not n:
                return n
            if n not in rename:
                rename[n] = f"{prefix}/{n}"
            return rename[n]

        for init in model.graph.initializer:
            copy = onnx.TensorProto()
            copy.CopyFrom(init)
            copy.name = mapped(init.name)
            g.initializers.append(copy)
        for node in model.graph.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            _rename_node(copy, prefix, mapped)
            g.add(copy)
        graph_outs = [Val(mapped(o.name), "array", o.type.tensor_type.elem_type) for o in model.graph.output]
        for out in model.graph.output:
            shapes.setdefault(mapped(out.name), _dims(out))
    leaves = iter([graph_outs[leaf.index] if leaf.source == GRAPH else args[leaf.index]
                   for leaf in signature.output_leaves])
    for out in signature.outputs:
        env[out.name] = _value_out(g, out.spec, leaves)


def _dims(value: onnx.ValueInfoProto) -> list | None:
    """The dims a graph input or output declares (None for one not fixed), or None without a shape."""
    declared = value.type.tensor_type
    return [d.dim_value if d.HasField("dim_value") else None for d in declared.shape.dim] \
        if declared.HasField("shape") else None


def _rename_node(node: onnx.NodeProto, prefix: str, mapped) -> None:
    """Give `node` (in place) the fused graph's names, in the subgraphs it holds too (a region's own If).

    One renaming of every name in the region's graph: the region's SSA names stay distinct, and a
    subgraph's reads of the region's values follow them."""
    node.name = f"{prefix}/{node.name}"
    node.input[:] = [mapped(n) for n in node.input]
    node.output[:] = [mapped(n) for n in node.output]
    for attr in node.attribute:
        for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else
                    attr.graphs if attr.type == onnx.AttributeProto.GRAPHS else []):
            for value in (*sub.input, *sub.output, *sub.value_info):
                value.name = mapped(value.name)
            for init in sub.initializer:
                init.name = mapped(init.name)
            for inner in sub.node:
                _rename_node(inner, prefix, mapped)


def _leaves_in(g: Graph, val, spec: dict, out: list, what: str) -> None:
    """Append the graph leaves of host value `val`, passed where the region expects `spec`."""
    if spec["t"] in ("tuple", "list"):
        if not isinstance(val, Tup) or len(val.items) != len(spec["items"]):
            raise Unfusable(f"{what}: expected a {spec['t']} of {len(spec['items'])}")
        for item, sub in zip(val.items, spec["items"]):
            _leaves_in(g, item, sub, out, what)
    elif spec["t"] == "scalar":
        val = g.scalar(val)
        want = NP_ELEM.get(spec["dtype"])
        out.append(val if val.elem == want else Val(g.op("Cast", [val.name], to=want), "array", want))
    elif isinstance(val, Tup) or val.kind != "array":
        raise Unfusable(f"{what}: the region takes an array, the host holds a Python value")
    else:
        out.append(val)


def _value_out(g: Graph, spec: dict, leaves):
    """The host value a region returns for `spec`, from its graph leaves."""
    if spec["t"] in ("tuple", "list"):
        return Tup([_value_out(g, sub, leaves) for sub in spec["items"]], spec["t"] == "list")
    val = next(leaves)
    if spec["t"] == "scalar":
        return g.cast(g.scalar(val), scalar_kind(spec["dtype"]))
    return val
