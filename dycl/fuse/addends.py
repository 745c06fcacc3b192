"""Loop-invariant addends of a recurrent Gemm's gates folded into its bias, once before the loop.

A GRU cell splits `Gemm(h, W_hh, b_hh)` into its reset, update and new-gate parts and adds the input's
projection to the first two. Where that projection does not change while the loop runs (ACT feeds the
same input on every step after the first, which the first-iteration peel computes once before the loop):

    r, z, n = Split(Gemm(h, W_hh, b_hh));  r = r + x_r;  z = z + x_z      # in the body

becomes

    C = b_hh + Concat(x_r, x_z, 0)                                        # once, before the loop
    r, z, n = Split(Gemm(h, W_hh, C))                                     # in the body

two nodes fewer per iteration. The same holds for a Gemm whose whole output takes a loop-invariant
addend. Each value keeps its dtype and shape; contents change only by float rounding (the addend
joins the bias before the product instead of after). Only addends of a static shape that the Gemm's
C input takes unchanged are folded: C broadcasts one way, where `+` broadcasts both.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..onnx_graph import Names, attr, constant_tensor, has_loop, loop_shapes, subgraphs, use_counts

__all__ = ["fold_addends"]


def fold_addends(model: onnx.ModelProto, declared: dict[str, list | None] | None = None) -> int:
    """Fold the loop-invariant addends of `model`'s loops, in place; how many Gemms took some.
    `declared`: the dims the regions declare for values (a loop body's inputs have no others)."""
    if not has_loop(model.graph):
        return 0
    names, count, shapes = Names(model), 0, loop_shapes(model, declared or {})

    def walk(graph, scopes):
        nonlocal count
        nodes, scopes = [], scopes + [graph]
        for node in graph.node:
            for sub in subgraphs(node):
                walk(sub, scopes)
            if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
                body = next(a.g for a in node.attribute if a.name == "body")
                for gemm in [n for n in body.node if n.op_type == "Gemm" and n.domain in ("", "ai.onnx")]:
                    before = _fold(gemm, body, scopes, shapes, names)
                    nodes += before
                    count += bool(before)
            nodes.append(node)
        del graph.node[:]
        graph.node.extend(nodes)

    walk(model.graph, [])
    return count


def _fold(gemm, body, scopes: list, shapes: dict, names: Names) -> list:
    """Fold what can be folded into `gemm`'s bias; the nodes computing the new bias before the loop
    (in `scopes[-1]`, the graph holding the loop)."""
    outer = scopes[-1]
    if attr(gemm, "alpha", 1.0) != 1.0 or attr(gemm, "beta", 1.0) != 1.0:
        return []
    out = shapes.get(gemm.output[0])
    if out is None or len(out) != 2 or not all(isinstance(d, int) for d in out):
        return []
    uses = use_counts(body)
    if uses.get(gemm.output[0]) != 1:
        return []
    reader = next((n for n in body.node if gemm.output[0] in n.input), None)
    if reader is None:  # the body returns the product itself
        return []
    local = {i.name for i in body.input} | {t.name for t in body.initializer} \
        | {o for n in body.node for o in n.output}
    if reader.op_type == "Split" and reader.domain in ("", "ai.onnx") and attr(reader, "axis", 0) in (1, -1):
        widths = _widths(reader, [*scopes, body], out[1])
        parts = list(reader.output)
    else:
        widths, parts = [out[1]], [gemm.output[0]]
    if widths is None:
        return []
    addends = []  # per part: (the Add it goes away with, the loop-invariant addend) or None
    for part, width in zip(parts, widths):
        adds = [n for n in body.node if part in n.input]
        add = adds[0] if len(adds) == 1 and uses.get(part) == 1 else None
        if add is None or add.op_type != "Add" or add.domain not in ("", "ai.onnx") or len(set(add.input)) != 2 \
                or add.output[0] in {o.name for o in body.output}:
            addends.append(None)
            continue
        other = add.input[1] if add.input[0] == part else add.input[0]
        if other in local or _shape(other, shapes, scopes) != (out[0], width):
            addends.append(None)
            continue
        addends.append((add, other))
    if not any(addends):
        return []
    outside = _outside(gemm.input[2], body, outer, names) if len(gemm.input) > 2 and gemm.input[2] else ""
    if outside is None:
        return []
    weight = constant_tensor(gemm.input[1], [*scopes, body])
    if weight is None:
        return []
    elem = weight.data_type
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    pieces, before = [], []
    for (width, found) in zip(widths, addends):
        if found is None:
            zero = names.fresh(f"{gemm.output[0]}_no_addend")
            outer.initializer.append(numpy_helper.from_array(np.zeros((out[0], width), dtype), zero))
            pieces.append(zero)
        else:
            pieces.append(found[1])
    bias = names.fresh(f"{gemm.output[0]}_bias")
    joined = pieces[0]
    if len(pieces) > 1:
        joined = names.fresh(f"{gemm.output[0]}_addends")
        before.append(helper.make_node("Concat", pieces, [joined], axis=1, name=joined))
    if len(gemm.input) > 2 and gemm.input[2]:
        before.append(helper.make_node("Add", [joined, outside], [bias], name=bias))
    else:
        before.append(helper.make_node("Identity", [joined], [bias], name=bias))
    while len(gemm.input) < 3:
        gemm.input.append("")
    gemm.input[2] = bias
    # the rows the Adds gave by broadcasting come from `h` alone now: keep the shape inference found
    # (onnxruntime shapes a Loop's scan outputs by it where the loop runs no iteration)
    kept = [v for v in body.value_info if v.name != gemm.output[0]]
    del body.value_info[:]
    body.value_info.extend(kept)
    body.value_info.append(helper.make_tensor_value_info(gemm.output[0], elem, list(out)))
    for part, found in zip(parts, addends):
        if found is not None:
            _replace_reads(body, found[0].output[0], part)
            body.node.remove(found[0])
    return before


def _widths(split, scopes: list, total: int) -> list[int] | None:
    """The widths of `split`'s outputs, where they are constants."""
    if len(split.input) > 1 and split.input[1]:
        tensor = constant_tensor(split.input[1], scopes)
        if tensor is None:
            return None
        widths = [int(v) for v in numpy_helper.to_array(tensor)]
    elif attr(split, "split") is not None:
        widths = [int(v) for v in attr(split, "split")]
    else:
        return None
    return widths if sum(widths) == total and len(widths) == len(split.output) else None


def _shape(name: str, shapes: dict, scopes: list) -> tuple | None:
    """`name`'s static shape: inferred, or that of a part of a column Split with constant widths (ONNX's
    inference does not read widths from an enclosing graph's initializer, as the peel's copies are)."""
    shape = shapes.get(name)
    if shape is not None and all(isinstance(d, int) for d in shape):
        return tuple(shape)
    for depth in range(len(scopes), 0, -1):
        split = next((n for n in scopes[depth - 1].node if name in n.output), None)
        if split is None:
            continue
        whole = shapes.get(split.input[0])
        if split.op_type != "Split" or attr(split, "axis", 0) not in (1, -1) or whole is None or len(whole) != 2 \
                or not all(isinstance(d, int) for d in whole):
            return None
        widths = _widths(split, scopes[:depth], whole[1])
        return None if widths is None else (whole[0], widths[list(split.output).index(name)])
    return None


def _outside(name: str, body, outer, names: Names) -> str | None:
    """`name` as the graph holding the loop reads it: a copy of a body constant; None where the body
    computes it."""
    tensor = next((t for t in body.initializer if t.name == name), None)
    if tensor is not None:
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        copy.name = names.fresh(f"{name}_outside")
        outer.initializer.append(copy)
        return copy.name
    local = {i.name for i in body.input} | {o for n in body.node for o in n.output}
    return None if name in local else name


def _replace_reads(body, old: str, new: str) -> None:
    """Read `new` wherever `body` (and the graphs inside it) read `old`."""
    def visit(graph):
        for node in graph.node:
            node.input[:] = [new if i == old else i for i in node.input]
            for sub in subgraphs(node):
                visit(sub)
    visit(body)
