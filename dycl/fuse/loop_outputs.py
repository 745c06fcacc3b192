"""A Loop body's outputs as onnxruntime takes them, without the nodes a translated loop adds for their sake.

onnxruntime runs every node of a Loop body on every iteration (about 0.3 µs each at a decoder step's sizes),
and two kinds of node exist only to shape the body's outputs:

- `Reshape(c, [])` of a one-element condition (`tok.item() == eos` on a [1] token): onnxruntime's Loop takes
  a condition of rank 0 or 1 holding one element (it checks the initial `cond` for one element, makes the
  first iteration's `cond` input of the rank the body declares, and reads the first element of the body's
  `cond`). The body returns `c` as it is, or `Not(c)` where the Not read the Reshape and nothing else reads
  the Not. Its `cond` input (read by nothing: the next iteration's is the previous `c`) and the Loop's initial
  condition (reshaped once, before the loop) become [1] as well: shape inference wants them to agree, and
  peeling the first iteration makes its `c` the Loop's initial condition.
- `Identity(v)` where the body returns v in two places (the carried token and the list it is appended to;
  fuse.block.graph_outputs adds it): a graph's outputs are uses of names, not definitions (onnx's checker and
  onnxruntime take a name returned twice), so both places name v.

Neither changes a value: the condition holds the same boolean, the outputs the same tensors.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from ..onnx_graph import Names, use_counts

__all__ = ["loop_outputs"]

_ONE_DIM = onnx.TensorShapeProto(dim=[onnx.TensorShapeProto.Dimension(dim_value=1)])


def loop_outputs(loop, consts: dict[str, np.ndarray], shape: Callable[[str], tuple | None],
                 names: Names) -> tuple[list, list]:
    """Rewrite the outputs of `loop`'s body in place (the nodes that nothing reads then go with the other dead
    ones); the nodes and initializers to add before the loop.

    `consts` holds the small constants visible in the body, `shape` gives a value's static shape (None if unknown).
    """
    body = next(a.g for a in loop.attribute if a.name == "body")
    made = {out: node for node in body.node for out in node.output}
    before = _condition(loop, body, made, consts, shape, names)
    for out in body.output[1:]:
        copy = made.get(out.name)
        if _op(copy, "Identity") and copy.input[0] in made:  # computed in the body: not an outer value's copy
            out.name = copy.input[0]
    return before


def _condition(loop, body, made: dict, consts: dict, shape: Callable, names: Names) -> tuple[list, list]:
    counts = use_counts(body)
    if len(loop.input) < 2 or counts.get(body.input[1].name) \
            or loop.input[1] and shape(loop.input[1]) not in ((), (1,)):
        return [], []
    out = body.output[0]
    negation = made.get(out.name)
    if _op(negation, "Not") and counts.get(out.name) == 1:
        squeeze = made.get(negation.input[0])
    else:
        squeeze, negation = negation, None
    if not _op(squeeze, "Reshape"):
        return [], []
    source, target = squeeze.input[0], consts.get(squeeze.input[1])
    dims = shape(source)
    if source not in made or target is None or target.shape != (0,) or dims is None or int(np.prod(dims)) != 1:
        return [], []
    nodes, inits = [], []
    if loop.input[1] and shape(loop.input[1]) == ():  # none: onnxruntime makes True of the rank the body declares
        flat, one = names.fresh(f"{loop.input[1]}_1d"), names.fresh("shape_1d")
        inits.append(numpy_helper.from_array(np.array([1], np.int64), one))
        nodes.append(onnx.helper.make_node("Reshape", [loop.input[1], one], [flat], name=flat))
        loop.input[1] = flat
    body.input[1].type.tensor_type.shape.CopyFrom(_ONE_DIM)
    if negation is None:
        out.name = source
    else:
        negation.input[0] = source
        stale = [v for v in body.value_info if v.name == out.name]
        for v in stale:
            body.value_info.remove(v)
    out.type.tensor_type.ClearField("shape")
    return nodes, inits


def _op(node, op: str) -> bool:
    return node is not None and node.op_type == op and node.domain in ("", "ai.onnx")
