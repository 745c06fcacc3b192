"""One order for `topk(..., sorted=False)`: sorted, in the exported graph and in its torch reference.

`sorted=False` leaves the order of the k results unspecified, and torch and onnxruntime fill
that freedom differently. The exporter keeps the flag (TopK `sorted=0`), and onnxruntime's CPU
TopK then returns the k in the order its selection left them, never sorted on random rows (2 of
8: always smallest first), while torch's CPU kernel returns 2 of 8 sorted, 3 of 8 sorted in about
40% of rows, 4 of 8 never. A compiled region then returns the right values in another order, and
checking it against torch element by element refuses it (DeepSeek-V3's grouped router: its
`topk_indices` and `topk_weights` come out reversed), though the experts it picks are the same.

So the exported graph's TopK nodes are made to sort (`sort_topk`), which gives one order on
every backend (TVM's frontend refuses `sorted=0` outright), and the torch run a region is
verified against sorts too (`SortedTopk`). That mode runs around verification only: around
tracing, its frame would become the place tracer warnings point at, which dycl reads.

`sort`/`argsort` leave the order of equal keys unspecified unless asked `stable=True`; the exporter
spells them as TopK over the whole axis, which puts equal keys in index order (the ONNX spec), while
torch's CPU kernel mixes them from 16 elements on (JetMoE sorts expert ids, most of them equal). The
torch reference sorts stably too, the order every compiled graph gives.

The package then hands later regions the k results sorted where the original model had torch's
own order; a model whose answer depends on that order (one that returns unsorted indices
itself) no longer matches the original, and the package check refuses it, naming the regions
(`UNSORTED_HINT`).
"""
from __future__ import annotations

import onnx
import torch
from torch.overrides import TorchFunctionMode

__all__ = ["SortedTopk", "sort_topk", "UNSORTED_HINT"]

_TOPK = {torch.topk, torch.Tensor.topk}
_SORTED_AT = 4  # topk(input, k, dim, largest, sorted): the same place for the method, self first
_SORTS = {torch.sort, torch.Tensor.sort}
_ARGSORTS = {torch.argsort, torch.Tensor.argsort}
_SORT_PARAMS = ("dim", "descending")  # after the input, for sort and argsort alike


class SortedTopk(TorchFunctionMode):
    """Within it, `torch.topk` and `Tensor.topk` sort their results whatever `sorted` asks, and
    `sort`/`argsort` are stable."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _SORTS or func in _ARGSORTS:
            kwargs.update(zip(_SORT_PARAMS, args[1:3]))  # argsort's positional `stable` is overridden
            args = args[:1]
            kwargs["stable"] = True
        elif func in _TOPK:
            if len(args) > _SORTED_AT:
                args = (*args[:_SORTED_AT], True, *args[_SORTED_AT + 1:])
            else:
                kwargs["sorted"] = True
        return func(*args, **kwargs)


def sort_topk(graph: onnx.GraphProto) -> int:
    """Make every TopK of a traced (flat) graph sort its results; how many did not."""
    unsorted = [a for n in graph.node if n.op_type == "TopK" for a in n.attribute if a.name == "sorted" and not a.i]
    for attr in unsorted:
        attr.i = 1
    return len(unsorted)


UNSORTED_HINT = ("note: the package computes sorted each top-k asked for with sorted=False, in {regions}: torch's "
                 "CPU kernel leaves the k results in an order no compiled graph reproduces. If the answer depends "
                 "on that order, ask for sorted=True (or sort the results) in the model.")
