"""NCHWc layout across If borders, on onnxruntime's level-ALL optimised graph.

onnxruntime's NCHWc transformer rewrites convolutions into blocked-channel
kernels (`com.microsoft.nchwc`) and reorders back to plain NCHW wherever a
value leaves the rewritten stretch. It works one graph at a time, so every If
branch starts with a `ReorderInput` of the feature map it captures and ends
with a `ReorderOutput` of what it returns, a pair on the full feature map per
branch; and a residual `Add` + `Relu` whose second operand comes from outside
the branch stays unfused, in plain layout.

`cross_borders` post-processes the optimised model so that blocked tensors
flow across the borders:

- a `ReorderInput` of a value that is itself a `ReorderOutput` of a blocked
  tensor (in this graph or an enclosing one) is that blocked tensor;
- an If output that its branches produce blocked (a `ReorderOutput` in the
  branch, or a copy of an outer value that has a blocked form) becomes
  blocked, with one `ReorderOutput` after the If for plain consumers; a branch
  with no blocked form reorders itself where nothing reads the output plain;
- `Add(ReorderOutput(Conv(...)), v)` (+ `Relu`) with `v` blocked becomes the
  NCHWc Conv's fused sum (and activation), as onnxruntime does inside a graph
  where it knows the shapes (and, where it does not, it adds through 5-D
  views: that sum is fused too);
- global pooling, channel Concat and whole-factor Resize of blocked maps run
  blocked; the total of dycl's NaN guard (torch_nan) sums the blocked map;
- a `ReorderOutput` that only one branch reads moves into that branch.

Only channel counts that are a multiple of 16 (every NCHWc block size) are
rewritten: there `ReorderInput(ReorderOutput(t))` is `t` exactly; with padded
channels it is not. A sum is not fused where shape inference on the portable
graph shows a broadcast; where dims are unknown, onnxruntime checks the shapes
at run time and the region falls back to its portable graph. The result is loaded with
optimisation disabled, on a machine whose CPU matches the one it was made on.
"""
from __future__ import annotations

import itertools

import onnx
from onnx import helper, numpy_helper

from ..onnx_graph import (Names, all_reads, attr, defined, name_nodes, prune, rename_refs, subgraphs, uniquify,
                        use_counts, value_shapes)

__all__ = ["cross_borders"]

NCHWC = "com.microsoft.nchwc"
_BLOCK_MULTIPLE = 16
_POOLS = ("GlobalAveragePool", "GlobalMaxPool")


def _is(node, op: str, domain: str = NCHWC) -> bool:
    return node.op_type == op and node.domain == domain


class _Rewrite:
    """One pass over a graph and its subgraphs; `blocked` maps a plain value to (blocked value, channels)."""

    def __init__(self, names: Names, shapes: dict[str, tuple]):
        self.names, self.shapes, self.changes = names, shapes, 0

    def graph(self, graph, blocked: dict[str, tuple[str, int]], constants: dict | None = None) -> None:
        blocked = dict(blocked)
        constants = {**(constants or {}), **{t.name: t for t in graph.initializer}}
        substitute: dict[str, str] = {}
        outputs = {o.name for o in graph.output}
        uses = use_counts(graph)
        nodes = list(graph.node)
        dropped: set[int] = set()
        kept: list = []
        for index, node in enumerate(nodes):
            if id(node) in dropped:
                continue
            for k, name in enumerate(node.input):
                node.input[k] = substitute.get(name, name)
            if substitute:
                for sub in subgraphs(node):
                    rename_refs(sub, substitute)
            if _is(node, "ReorderOutput") and attr(node, "channels_last", 0) == 0:
                channels = attr(node, "channels", 0)
                if channels and channels % _BLOCK_MULTIPLE == 0:
                    blocked[node.output[0]] = (node.input[0], channels)
            elif node.op_type == "Identity" and node.domain == "" and node.input[0] in blocked:
                blocked[node.output[0]] = blocked[node.input[0]]
            elif _is(node, "ReorderInput") and attr(node, "channels_last", 0) == 0 \
                    and node.input[0] in blocked and node.output[0] not in outputs:
                substitute[node.output[0]] = blocked[node.input[0]][0]
                self.changes += 1
                continue
            elif node.domain == "" and node.op_type == "ReduceSum" and len(node.input) == 1 \
                    and node.input[0] in blocked and attr(node, "keepdims", 1) == 0 \
                    and attr(node, "axes") is None and attr(node, "noop_with_empty_axes", 0) == 0 \
                    and _only_read_by(node.output[0], nodes[index + 1:], outputs, _nan_test):
                # a NaN guard's total (torch_nan): summed in another order, but NaN exactly when an element is
                node.input[0] = blocked[node.input[0]][0]
                self.changes += 1
            elif node.domain == "" and node.op_type == "Add" \
                    and self._reshaped_sum(node, nodes[index + 1:], kept, uses, outputs, constants, dropped):
                continue
            made = None
            if node.domain == "" and node.op_type in _POOLS and node.input[0] in blocked:
                source, channels = blocked[node.input[0]]
                made = self._back(node.op_type, [source], node.output[0], channels)
            elif node.domain == "" and node.op_type == "Concat":
                made = self._blocked_concat(node, blocked)
            elif node.domain == "" and node.op_type == "Resize":
                made = self._blocked_resize(node, blocked, constants)
            elif node.domain == "" and node.op_type == "Add":
                relu = next((n for n in nodes[index + 1:] if node.output[0] in n.input), None)
                made = self._fused_sum(node, relu, kept, blocked, uses, outputs)
                if made is not None and made[1].output[0] != node.output[0]:
                    dropped.add(id(relu))
            if made is not None:  # [the op on blocked tensors, a ReorderOutput to the plain value it replaces]
                op, back = made
                blocked[back.output[0]] = (op.output[0], attr(back, "channels"))
                kept += made
                continue
            for sub in subgraphs(node):  # If branches; Loop and Scan bodies see captured values only
                self.graph(sub, blocked, constants)
            kept.append(node)
            if node.op_type == "If" and node.domain == "":
                kept += self._blocked_outputs(node, blocked, nodes[index + 1:], outputs)
        del graph.node[:]
        graph.node.extend(kept)

    def _back(self, op_type: str, inputs: list, plain: str, channels: int, **attrs) -> list:
        """`op_type` on blocked inputs, then a ReorderOutput to the plain value `plain` it replaces."""
        inner = self.names.fresh(plain + "_nchwc")
        domain = "" if op_type == "Concat" else NCHWC
        self.changes += 1
        return [helper.make_node(op_type, inputs, [inner], domain=domain, **attrs),
                helper.make_node("ReorderOutput", [inner], [plain], domain=NCHWC, channels=channels, channels_last=0)]

    def _blocked_concat(self, node, blocked) -> list | None:
        """A channel Concat of blocked maps whose channels fill whole blocks: the Concat of the blocks."""
        if attr(node, "axis") not in (1, -3) or not all(i in blocked for i in node.input):
            return None
        channels = sum(blocked[i][1] for i in node.input)
        return self._back("Concat", [blocked[i][0] for i in node.input], node.output[0], channels, axis=1)

    def _blocked_resize(self, node, blocked, constants) -> list | None:
        """Resize by whole spatial factors, as onnxruntime's NCHWc Upsample runs it (nearest asymmetric floor,
        or linear half-pixel); anything else stays plain."""
        if node.input[0] not in blocked or len(node.input) != 3 or node.input[1] \
                or attr(node, "antialias", 0) or attr(node, "exclude_outside", 0):
            return None
        mode = attr(node, "mode", b"nearest").decode()
        transform = attr(node, "coordinate_transformation_mode", b"half_pixel").decode()
        if (mode, transform) == ("nearest", "asymmetric"):
            if attr(node, "nearest_mode", b"round_prefer_floor") != b"floor":
                return None
        elif (mode, transform) != ("linear", "half_pixel"):
            return None
        scales = constants.get(node.input[2])
        if scales is None:
            return None
        factors = numpy_helper.to_array(scales).tolist()
        if len(factors) != 4 or factors[:2] != [1.0, 1.0] or any(f < 1 or f != int(f) for f in factors):
            return None
        source, channels = blocked[node.input[0]]
        return self._back("Upsample", [source], node.output[0], channels, scales=[int(f) for f in factors],
                          mode=mode, coordinate_transformation_mode=transform)

    def _fused_sum(self, add, relu, kept, blocked, uses, outputs) -> list | None:
        """`Add(ReorderOutput(Conv(..)), v)` [then `Relu`], `v` blocked: the Conv with sum `v` [and Relu].

        The Conv moves to the Add's place (its sum is defined by then); the old ReorderOutput is left unread.
        """
        producers = {o: n for n in kept for o in n.output}
        for mine, other in ((0, 1), (1, 0)):
            plain, summand = add.input[mine], add.input[other]
            reorder = producers.get(plain)
            if reorder is None or not _is(reorder, "ReorderOutput") or summand not in blocked:
                continue
            conv = producers.get(reorder.input[0])
            if conv is None or not _is(conv, "Conv") or len(conv.input) > 3 or attr(conv, "activation"):
                continue
            source, channels = blocked[summand]
            if attr(reorder, "channels") != channels or not self._may_sum(plain, summand) \
                    or uses.get(reorder.input[0]) != 1 or uses.get(plain) != 1 or plain in outputs:
                continue
            with_relu = (relu is not None and relu.op_type == "Relu" and relu.domain == ""
                         and uses.get(add.output[0]) == 1 and add.output[0] not in outputs)
            while len(conv.input) < 3:
                conv.input.append("")
            conv.input.append(source)
            if with_relu:
                conv.attribute.append(helper.make_attribute("activation", "Relu"))
            result = self.names.fresh(add.output[0] + "_nchwc")
            conv.output[0] = result
            kept.remove(conv)
            kept.remove(reorder)
            self.changes += 1
            out = relu.output[0] if with_relu else add.output[0]
            return [conv, helper.make_node("ReorderOutput", [result], [out], domain=NCHWC, channels=channels,
                                           channels_last=0)]
        return None

    def _reshaped_sum(self, add, rest, kept, uses, outputs, constants, dropped) -> bool:
        """onnxruntime's own sum of two NCHWc maps whose shapes it cannot show equal (dims unknown): both
        viewed as [0, C/b, 0, 0, b], added, viewed back as [0, C, 0, 0] [then Relu]. Where one is a Conv's
        own output, it becomes that Conv's sum [and activation], checked at run time as in `_may_sum`."""
        producers = {o: n for n in kept for o in n.output}
        views = [producers.get(i) for i in add.input]
        back = next((n for n in rest if add.output[0] in n.input), None)
        if any(v is None or v.op_type != "Reshape" or v.domain != "" for v in views) or back is None \
                or back.op_type != "Reshape" or back.domain != "" or uses.get(add.output[0]) != 1 \
                or add.output[0] in outputs:
            return False
        blocks = [_ints(constants, v.input[1]) for v in views]
        whole = _ints(constants, back.input[1])
        if blocks[0] is None or blocks[0] != blocks[1] or len(blocks[0]) != 5 or blocks[0][0] != 0 \
                or blocks[0][2:4] != [0, 0] or whole != [0, blocks[0][1] * blocks[0][4], 0, 0]:
            return False
        for mine, other in ((0, 1), (1, 0)):
            conv = producers.get(views[mine].input[0])
            if conv is None or not _is(conv, "Conv") or len(conv.input) > 3 or attr(conv, "activation") \
                    or uses.get(conv.output[0]) != 1 or uses.get(views[mine].output[0]) != 1:
                continue
            relu = next((n for n in rest if back.output[0] in n.input), None)
            with_relu = (relu is not None and relu.op_type == "Relu" and relu.domain == ""
                         and uses.get(back.output[0]) == 1 and back.output[0] not in outputs)
            while len(conv.input) < 3:
                conv.input.append("")
            conv.input.append(views[other].input[0])
            if with_relu:
                conv.attribute.append(helper.make_attribute("activation", "Relu"))
                dropped.add(id(relu))
            dropped.add(id(back))
            conv.output[0] = relu.output[0] if with_relu else back.output[0]
            kept.remove(conv)
            kept.remove(views[mine])
            kept.append(conv)  # at the Add's place: its sum is defined by then
            self.changes += 1
            return True
        return False

    def _may_sum(self, a: str, b: str) -> bool:
        """Whether the Conv may take `b` as its sum: not where shapes are known to differ (a broadcast).

        Where a dim is unknown (dynamic), onnxruntime's NCHWc Conv checks that its output and sum match at run
        time, and the region falls back to the portable graph if ever they do not (OnnxRuntimeBackend.load).
        """
        sa, sb = self.shapes.get(a), self.shapes.get(b)
        if sa is None or sb is None:
            return True
        return len(sa) == len(sb) and all(x == y or not isinstance(x, int) or not isinstance(y, int)
                                          for x, y in zip(sa, sb))

    def _blocked_outputs(self, node, blocked, rest: list, outputs: set) -> list:
        """Make each If output blocked where its branches can return it so; plain after a ReorderOutput.

        Where only some branches have it blocked, the others reorder it themselves, if nothing after the If
        reads it but reorders: they pay the reorder the reader paid, and the blocked branches save theirs.
        """
        branches = list(subgraphs(node))
        after = []
        for k in range(len(node.output)):
            forms = [_blocked_form(g, g.output[k].name, blocked) for g in branches]
            channels = {c for form in forms if form for _, c in [form]}
            if len(channels) != 1:
                continue
            if not all(forms) and not _only_read_by(node.output[k], rest, outputs, _reorders_in):
                continue
            for g, form in zip(branches, forms):
                out = g.output[k]
                if form is None:
                    source = self.names.fresh(out.name + "_nchwc")
                    g.node.append(helper.make_node("ReorderInput", [out.name], [source], domain=NCHWC,
                                                   channels_last=0))
                else:
                    source = form[0]
                taken = {o.name for o in g.output} | {i.name for i in g.input}
                if source not in set(defined(g)) or source in taken:  # a branch returns a copy of these
                    copy = self.names.fresh(out.name + "_nchwc")
                    g.node.append(helper.make_node("Identity", [source], [copy]))
                    source = copy
                out.name = source
                out.type.CopyFrom(helper.make_tensor_type_proto(out.type.tensor_type.elem_type, None))
            plain, (channels,) = node.output[k], channels
            node.output[k] = self.names.fresh(plain + "_nchwc")
            after.append(helper.make_node("ReorderOutput", [node.output[k]], [plain], domain=NCHWC,
                                          channels=channels, channels_last=0))
            blocked[plain] = (node.output[k], channels)
            self.changes += 1
        return after


def _only_read_by(name: str, rest: list, outputs: set, accept) -> bool:
    """Whether every read of `name` in `rest` (subgraphs included) is by a node `accept` takes."""
    if name in outputs:
        return False

    def fine(nodes) -> bool:
        for n in nodes:
            if name in n.input and not accept(n):
                return False
            for sub in subgraphs(n):
                if name in {o.name for o in sub.output} or not fine(sub.node):
                    return False
        return True

    return fine(rest)


def _reorders_in(node) -> bool:
    return _is(node, "ReorderInput") and attr(node, "channels_last", 0) == 0


def _nan_test(node) -> bool:
    return node.op_type == "IsNaN" and node.domain == ""


def _ints(constants: dict, name: str) -> list | None:
    """An integer initializer's values, or None."""
    tensor = constants.get(name)
    if tensor is None or tensor.data_type != onnx.TensorProto.INT64:
        return None
    return numpy_helper.to_array(tensor).tolist()


def _blocked_form(branch, name: str, blocked: dict) -> tuple[str, int] | None:
    """The blocked value and channels `branch` can return for its output `name`, or None."""
    producer = next((n for n in branch.node if name in n.output), None)
    if producer is None:  # an outer value, returned as it is
        return blocked.get(name)
    if _is(producer, "ReorderOutput") and attr(producer, "channels_last", 0) == 0:
        channels = attr(producer, "channels", 0)
        return (producer.input[0], channels) if channels and channels % _BLOCK_MULTIPLE == 0 else None
    if producer.op_type == "Identity" and producer.domain == "":
        return blocked.get(producer.input[0])
    return None


def _sink(graph) -> None:
    """Move each ReorderOutput that only one If branch reads into that branch, innermost last.

    A NaN guard's rare arm reads the plain map; the common path should not pay its reorder.
    """
    outputs = {o.name for o in graph.output}
    for node in list(graph.node):
        name = node.output[0] if _is(node, "ReorderOutput") else None
        if name is None or name in outputs or any(name in n.input for n in graph.node):
            continue
        holders = [(n, sub) for n in graph.node for sub in subgraphs(n) if name in all_reads(sub)]
        if len(holders) == 1 and holders[0][0].op_type == "If":
            graph.node.remove(node)
            holders[0][1].node.insert(0, node)
    for node in graph.node:
        for sub in subgraphs(node):
            _sink(sub)


def cross_borders(optimised, portable) -> int:
    """Rewrite `optimised` (onnxruntime's level-ALL model of `portable`) in place; the number of rewrites."""
    names = Names(optimised)
    uniquify(optimised.graph, set(defined(optimised.graph)), names)
    rewrite = _Rewrite(names, value_shapes(portable))
    rewrite.graph(optimised.graph, {})
    prune(optimised.graph)
    _sink(optimised.graph)
    name_nodes(optimised.graph, itertools.count())
    return rewrite.changes


