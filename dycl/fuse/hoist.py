"""Input projections hoisted out of fused loops: a recurrent cell's `x_t @ W_ih` computed for every row at once.

A recurrent cell in a loop reads one row of a table that does not change while the loop runs (the
embedding of the previous token, `embed(tok)`; a time step of the input sequence, `x[:, t]`) and
multiplies it by a constant weight:

    y = Gemm(Gather(T, i), W, b)        # T: a constant, or a value from outside the loop

The product works row by row, so it commutes with the Gather:

    y = Gather(P, i)    where P = Gemm(T, W, b) over every row of T

P is computed once: at conversion when T is a constant (an embedding table), once before the loop
otherwise (the input sequence; as cuDNN's recurrent layers do, every time step is projected even where
the loop stops early). Where the cell then adds y to its other product, `Gemm(h, W_hh, b_hh) + y`,
the gathered row becomes that Gemm's C input, with `b_hh` folded into P: each iteration runs a Gather
and a Gemm where it ran a Gather, two Gemms and an Add. onnxruntime hoists nothing out of a Loop body,
and at these sizes each node costs a few tenths of a µs per iteration.

Each value keeps its dtype and shape; contents change only by float rounding (the bias is added in
another order). The Add folds only where both products are known to have the same shape (a Gemm's C
broadcasts one way only, where `+` broadcasts both ways).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..onnx_graph import Names, attr, constant_tensor, has_loop, loop_shapes, subgraphs, use_counts

__all__ = ["hoist"]

_MOST = 1 << 22  # elements of a constant projected table (16 MB of float32): larger ones stay in the loop
_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}


def hoist(model: onnx.ModelProto, declared: dict[str, list | None] | None = None) -> int:
    """Hoist the input projections of `model`'s loops, in place; how many were."""
    if not has_loop(model.graph):
        return 0
    rewrite = _Rewrite(Names(model), loop_shapes(model, declared or {}))
    rewrite.graph(model.graph, [])
    return rewrite.count


class _Rewrite:
    def __init__(self, names: Names, shapes: dict):
        self.names, self.shapes, self.count = names, shapes, 0
        self.removed: set[str] = set()  # outputs of the products folded away

    def graph(self, graph, scopes: list) -> None:
        """Rewrite the loops of `graph` (and of the graphs inside its nodes); `scopes`: the enclosing graphs."""
        scopes = scopes + [graph]
        nodes = []
        for node in graph.node:
            for sub in subgraphs(node):
                self.graph(sub, scopes)
            if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
                nodes += self._loop(node, scopes)
            nodes.append(node)
        del graph.node[:]
        graph.node.extend(nodes)

    def _loop(self, loop, scopes: list) -> list:
        """Rewrite `loop`'s body; the nodes that must run before the loop (projections of outer values)."""
        body = next(a.g for a in loop.attribute if a.name == "body")
        before: list = []
        made = {o: n for n in body.node for o in n.output}
        local = {i.name for i in body.input} | set(made)
        for gemm in list(body.node):
            if gemm.op_type not in ("Gemm", "MatMul") or gemm.domain not in ("", "ai.onnx") \
                    or gemm.output[0] in self.removed:
                continue
            uses = use_counts(body)
            gather = made.get(gemm.input[0])
            if gather is None or gather.op_type != "Gather" or uses.get(gemm.input[0]) != 1:
                continue
            table = gather.input[0]
            weight, bias = _product(gemm, scopes + [body])
            if weight is None or table in local and not constant_tensor(table, [body]):
                continue
            rank = self._rank(table, scopes + [body])
            axis = attr(gather, "axis", 0)
            if rank is None or rank < 2 or axis % rank == rank - 1:
                continue  # the gathered axis must not be the one the product reads
            projected = self._project(table, weight, bias, scopes, body, before)
            if projected is None:
                continue
            gather.input[0] = projected
            gather.output[0] = gemm.output[0]
            body.node.remove(gemm)
            self.count += 1
            self._fold(gather, body, scopes, before)
            made = {o: n for n in body.node for o in n.output}
        return before

    def _rank(self, name: str, scopes: list) -> int | None:
        tensor = constant_tensor(name, scopes)
        if tensor is not None:
            return len(tensor.dims)
        shape = self.shapes.get(name)
        return None if shape is None else len(shape)

    def _project(self, table: str, weight: np.ndarray, bias, scopes: list, body, before: list) -> str | None:
        """The name of `table @ weight + bias`: a new constant of the body, or computed before the loop."""
        tensor = constant_tensor(table, scopes + [body])
        if tensor is not None:
            if tensor.data_type not in _FLOATS or tensor.data_location == onnx.TensorProto.EXTERNAL:
                return None
            values = numpy_helper.to_array(tensor)
            if values.dtype != weight.dtype or values.size // values.shape[-1] * weight.shape[1] > _MOST:
                return None
            product = values @ weight if bias is None else values @ weight + bias
            name = self.names.fresh(f"{table}_projected")
            body.initializer.append(numpy_helper.from_array(product.astype(values.dtype), name))
            return name
        outer = scopes[-1]
        w = self.names.fresh(f"{table}_weight")
        outer.initializer.append(numpy_helper.from_array(weight, w))
        name = self.names.fresh(f"{table}_projected")
        if bias is None:
            before.append(helper.make_node("MatMul", [table, w], [name], name=name))
        else:
            product, b = self.names.fresh(f"{table}_product"), self.names.fresh(f"{table}_bias")
            outer.initializer.append(numpy_helper.from_array(np.asarray(bias, weight.dtype), b))
            before += [helper.make_node("MatMul", [table, w], [product], name=product),
                       helper.make_node("Add", [product, b], [name], name=name)]
        return name

    def _fold(self, gather, body, scopes: list, before: list) -> None:
        """`Gemm(h, W, c) + Gather(P, i)` as `Gemm(h, W, Gather(P + c, i))`, where P is this pass's own table."""
        row = gather.output[0]
        uses = use_counts(body)
        add = next((n for n in body.node if n.op_type == "Add" and row in n.input), None)
        if add is None or uses.get(row) != 1 or add.domain not in ("", "ai.onnx"):
            return
        made = {o: n for n in body.node for o in n.output}
        other = made.get(add.input[1] if add.input[0] == row else add.input[0])
        if other is None or other.op_type != "Gemm" or uses.get(other.output[0]) != 1 \
                or attr(other, "alpha", 1.0) != 1.0 or attr(other, "beta", 1.0) != 1.0:
            return
        same = [self.shapes.get(v) for v in (row, other.output[0], add.output[0])]
        if None in same or len(set(same)) != 1 or any(not isinstance(d, int) for d in same[0]):
            return
        extra = None
        if len(other.input) > 2 and other.input[2]:
            c = constant_tensor(other.input[2], scopes + [body])
            if c is None:
                return
            extra = numpy_helper.to_array(c)
            if extra.ndim > 1 and extra.shape[0] != 1:
                return  # a bias with rows: it does not broadcast over P's rows
            extra = extra.reshape(-1)
        weight = constant_tensor(other.input[1], scopes + [body])
        if weight is None or not self._add_to(gather.input[0], extra, scopes, body, before):
            return
        fused = helper.make_node("Gemm", [other.input[0], other.input[1], row], list(add.output),
                                 name=self.names.fresh(other.name or "gemm"))
        fused.attribute.extend(a for a in other.attribute if a.name in ("transA", "transB"))
        # the Gemm's rows come from `h` alone: keep the shape inference knew from the Add (onnxruntime
        # shapes a Loop's scan outputs by it where the loop runs no iteration)
        kept = [v for v in body.value_info if v.name != add.output[0]]
        del body.value_info[:]
        body.value_info.extend(kept)
        body.value_info.append(helper.make_tensor_value_info(add.output[0], weight.data_type, list(same[0])))
        self.removed.add(other.output[0])
        add.CopyFrom(fused)  # where the Add was: after both products
        body.node.remove(other)

    def _add_to(self, table: str, extra, scopes: list, body, before: list) -> bool:
        """Add the bias `extra` to the projected table `table` (made by `_project`); False if it cannot."""
        if extra is None:
            return True
        for tensor in body.initializer:
            if tensor.name == table:
                values = numpy_helper.to_array(tensor)
                if extra.shape[-1] not in (1, values.shape[-1]):
                    return False
                tensor.CopyFrom(numpy_helper.from_array((values + extra).astype(values.dtype), table))
                return True
        outer = scopes[-1]
        node = next(n for n in before if n.output[0] == table)
        if node.op_type == "MatMul":
            b = self.names.fresh(f"{table}_bias")
            outer.initializer.append(numpy_helper.from_array(extra, b))
            product = self.names.fresh(f"{table}_product")
            node.output[0] = product
            before.append(helper.make_node("Add", [product, b], [table], name=table))
            return True
        bias = next(t for t in outer.initializer if t.name == node.input[1])
        values = numpy_helper.to_array(bias)
        bias.CopyFrom(numpy_helper.from_array((values + extra).astype(values.dtype), bias.name))
        return True


def _product(node, scopes: list):
    """(weight as a [K, N] array, bias as an [N] array or None) of a Gemm or MatMul by constants; (None, None)
    for any other product (a transposed or scaled input, a non-constant weight, a bias with rows)."""
    tensor = constant_tensor(node.input[1], scopes)
    if tensor is None or tensor.data_type not in _FLOATS or len(tensor.dims) != 2 \
            or tensor.data_location == onnx.TensorProto.EXTERNAL:
        return None, None
    weight = numpy_helper.to_array(tensor)
    if node.op_type == "MatMul":
        return weight, None
    if attr(node, "transA", 0) or attr(node, "alpha", 1.0) != 1.0:
        return None, None
    if attr(node, "transB", 0):
        weight = weight.T
    bias = None
    if len(node.input) > 2 and node.input[2]:
        c = constant_tensor(node.input[2], scopes)
        if c is None or c.data_type != tensor.data_type or len(c.dims) > 1 and c.dims[0] != 1:
            return None, None
        bias = numpy_helper.to_array(c).reshape(-1) * np.asarray(attr(node, "beta", 1.0), weight.dtype)
        if bias.shape[0] not in (1, weight.shape[1]):
            return None, None
    return np.ascontiguousarray(weight), bias
