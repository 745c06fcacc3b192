"""Work a fused loop repeats with the same inputs, done once: its first iteration peeled off.

ACT's loop resets a carried flag to a constant (`flag = torch.zeros(batch, 1)`), so from the second
iteration on `cat([x, flag])` and the input projection after it give the same result every time. A
trace of the path (the oracle) computes that once; onnxruntime hoists nothing out of a Loop body.
Here a loop whose body holds such work becomes

    If(cond and M > 0):
        the first iteration, on the initial values
        If(its cond and M - 1 > 0):
            the repeated work, once, on the first iteration's values
            Loop(M - 1, its cond, its values), reading that work
        else: the first iteration's values
    else: the initial values

The repeated work is what the body computes from values that no longer change after the first
iteration: values from outside the loop, constants, carried values passed through unchanged, and
carried values the body sets from those alone (they hold the first iteration's result from then
on). It runs exactly where the second iteration would have, on the inputs that iteration would
have read: the same values, and the same failures. Only loops whose repeated work holds a matrix
product or a convolution are rewritten (the two Ifs cost more than a few small nodes save), and
none that read the iteration number, have scan outputs, or hold graphs in their body.

Where the repeated work cannot fail (ops that give a result for any values, every input of a static
shape: ACT's concat and projection), it runs right after the first iteration whether or not a second
follows, and the loop, whose zero trips return the first iteration's values, stands for the inner If
and its copies: about 2 µs less per call, one more projection where the loop stops after one iteration.
"""
from __future__ import annotations

import onnx
from onnx import helper

from ..onnx_graph import Names, loop_shapes, subgraphs

__all__ = ["peel"]

_HEAVY = {"Gemm", "MatMul", "Conv", "ConvTranspose", "Einsum"}
# ops whose result exists for any values of consistent shapes (no division, no indexing by data)
_TOTAL = _HEAVY | {"Add", "Sub", "Mul", "Neg", "Abs", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Exp", "Erf",
                   "Softmax", "Concat", "Split", "Transpose", "Unsqueeze", "Squeeze", "Identity", "Cast", "Where",
                   "Less", "Greater", "Equal", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Max", "Min"}
_RANDOM = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
           "Dropout"}


def peel(model: onnx.ModelProto, declared: dict[str, list | None] | None = None) -> int:
    """Peel the qualifying loops of `model`'s top graph, in place; how many were. `declared`: the dims
    the regions declare for values (a loop body's inputs have no others)."""
    graph = model.graph
    if not any(n.op_type == "Loop" for n in graph.node):
        return 0
    names, shapes = Names(model), None
    nodes, peeled = [], 0
    for node in graph.node:
        repeated = _repeated(node) if node.op_type == "Loop" and node.domain in ("", "ai.onnx") else None
        if repeated:
            shapes = shapes if shapes is not None else loop_shapes(model, declared or {})
            body = next(a.g for a in node.attribute if a.name == "body")
            known = {t.name for t in (*graph.initializer, *body.initializer)}
            nodes += _peeled(node, repeated, names, graph, _total(repeated, shapes, known))
            peeled += 1
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return peeled


def _repeated(loop) -> list | None:
    """The body nodes computing the same thing from the second iteration on (None: not worth a peel)."""
    body = next((a.g for a in loop.attribute if a.name == "body"), None)
    carried = len(loop.input) - 2
    if body is None or len(body.output) != 1 + carried or any(subgraphs(n) for n in body.node) \
            or not loop.input[0] and not loop.input[1]:
        return None
    read = {i for n in body.node for i in n.input} | {o.name for o in body.output}
    if body.input[0].name in read or body.input[1].name in read:
        return None
    inputs = [body.input[2 + k].name for k in range(carried)]
    outputs = [body.output[1 + k].name for k in range(carried)]
    defined = {i.name for i in body.input} | {t.name for t in body.initializer} \
        | {o for n in body.node for o in n.output}
    # values that never change: from outside, constants, carried values passed through
    fixed = {t.name for t in body.initializer} | {c for c, o in zip(inputs, outputs) if c == o}
    for node in body.node:
        if node.op_type not in _RANDOM and all(not i or i in fixed or i not in defined for i in node.input):
            fixed.update(node.output)
    # from the second iteration on, a carried value the body sets from those alone holds still too
    settled = fixed | {c for c, o in zip(inputs, outputs) if o in fixed or o not in defined}
    repeated, body_outputs = [], set(outputs) | {body.output[0].name}
    for node in body.node:
        if node.op_type not in _RANDOM and not body_outputs & set(node.output) \
                and all(not i or i in settled or i not in defined for i in node.input):
            repeated.append(node)
            settled.update(node.output)
    return repeated if any(n.op_type in _HEAVY for n in repeated) else None


def _total(repeated: list, shapes: dict, constants: set) -> bool:
    """Whether the repeated work gives a result, and raises nothing, on any values of the shapes it
    reads: ops that cannot fail on data, every input a constant or of a static shape inference proved."""
    def static(name):
        if name in constants:
            return True
        shape = shapes.get(name)
        return shape is not None and all(isinstance(d, int) for d in shape)

    return all(n.op_type in _TOTAL and n.domain in ("", "ai.onnx") and all(not i or static(i) for i in n.input)
               for n in repeated)


def _peeled(loop, repeated: list, names: Names, graph, total: bool) -> list:
    body = next(a.g for a in loop.attribute if a.name == "body")
    carried = len(loop.input) - 2
    inits = {t.name: t for t in body.initializer}
    copied: dict[str, str] = {}
    then_inits: list = []

    def outside(name: str, renames: dict) -> str:
        """`name` read outside the body: renamed, or a body constant copied out once."""
        if name in renames:
            return renames[name]
        if name in inits:
            if name not in copied:
                copy = onnx.TensorProto()
                copy.CopyFrom(inits[name])
                copy.name = copied[name] = names.fresh(name + "_peeled")
                then_inits.append(copy)
            return copied[name]
        return name

    def clone(node, renames: dict):
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [outside(i, renames) if i else i for i in node.input]
        copy.output[:] = [renames[o] if o else o for o in node.output]
        copy.name = names.fresh((node.name or node.op_type) + "_peeled")
        return copy

    # the first iteration, on the initial values
    first = {body.input[2 + k].name: loop.input[2 + k] for k in range(carried)}
    first.update({o: names.fresh(o + "_first") for n in body.node for o in n.output if o})
    then_nodes = [clone(n, first) for n in body.node]
    cond = outside(body.output[0].name, first)
    values = [outside(body.output[1 + k].name, first) for k in range(carried)]
    # the repeated work, once, on the first iteration's values; the loop after it reads it
    once = {body.input[2 + k].name: values[k] for k in range(carried)}
    once.update({o: names.fresh(o + "_once") for n in repeated for o in n.output if o})
    inner_nodes = [clone(n, once) for n in repeated]
    rest = [n for n in body.node if n not in repeated]
    hoisted = {o: once[o] for n in repeated for o in n.output if o}
    for node in rest:
        node.input[:] = [hoisted.get(i, i) for i in node.input]
    del body.node[:]
    body.node.extend(rest)
    read = {i for n in rest for i in n.input} | {o.name for o in body.output}
    kept = [t for t in body.initializer if t.name in read]
    del body.initializer[:]
    body.initializer.extend(kept)
    trips, go_on = "", cond
    if loop.input[0]:
        trips = names.fresh(loop.input[0] + "_left")
        one = helper.make_tensor(names.fresh("one"), onnx.TensorProto.INT64, [], [1])
        then_inits.append(one)
        then_nodes.append(helper.make_node("Sub", [loop.input[0], one.name], [trips]))
        if not total:
            then_nodes += _and_positive(cond, trips, names, then_inits)
            go_on = then_nodes[-1].output[0]
    types = [o.type.tensor_type.elem_type for o in body.output[1:]]
    second = [names.fresh(o + "_after_first") for o in loop.output]
    if total:  # the work runs even where the loop stops now: cheaper than an If and its copies
        then_nodes += inner_nodes
        then_nodes.append(helper.make_node("Loop", [trips, cond, *values], second, body=body,
                                           name=names.fresh(loop.name or "loop")))
    else:
        results = [names.fresh(o + "_peeled") for o in loop.output]
        inner_nodes.append(helper.make_node("Loop", [trips, cond, *values], results, body=body,
                                            name=names.fresh(loop.name or "loop")))
        again = _branch(inner_nodes, results, types, names, "second_iteration", [])
        held = _copies(values, types, names, "first_iteration_only")
        then_nodes.append(helper.make_node("If", [go_on], second, then_branch=again, else_branch=held,
                                           name=names.fresh("second_iteration")))
    ran = _branch(then_nodes, second, types, names, "first_iteration", then_inits)
    unrun = _copies(list(loop.input[2:]), types, names, "no_iteration")
    guard, go = [], loop.input[1]
    if loop.input[0]:
        outer_inits: list = []
        guard = _and_positive(go, loop.input[0], names, outer_inits)
        graph.initializer.extend(outer_inits)
        go = guard[-1].output[0]
    return guard + [helper.make_node("If", [go], list(loop.output), then_branch=ran, else_branch=unrun,
                                     name=names.fresh("first_iteration"))]


def _and_positive(cond: str, count: str, names: Names, inits: list) -> list:
    """Nodes computing `cond and count > 0` (`count > 0` where there is no cond); the last gives it."""
    zero = helper.make_tensor(names.fresh("zero"), onnx.TensorProto.INT64, [], [0])
    inits.append(zero)
    positive = names.fresh(count + "_positive")
    nodes = [helper.make_node("Greater", [count, zero.name], [positive])]
    if cond:
        nodes.append(helper.make_node("And", [cond, positive], [names.fresh("runs")]))
    return nodes


def _branch(nodes: list, outputs: list, types: list, names: Names, hint: str, inits: list):
    return helper.make_graph(nodes, names.fresh(hint), [],
                             [helper.make_tensor_value_info(o, t, None) for o, t in zip(outputs, types)], inits)


def _copies(values: list, types: list, names: Names, hint: str):
    """A branch returning `values` as they are (an If branch cannot return an outer value itself)."""
    copies = [names.fresh(v + "_kept") for v in values]
    return _branch([helper.make_node("Identity", [v], [c]) for v, c in zip(values, copies)], copies, types, names,
                   hint, [])
