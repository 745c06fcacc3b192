"""Export each region to ONNX with its symbolic dims, and check what came out.

Uses the TorchScript exporter (`dynamo=False`): about 0.01 s a region after the
first, against about 0.6 s for the torch.export-based one, which matters for
models with 100+ regions. Tracing freezes any Python value computed from a
tensor, so tracer warnings are errors here; and because exporters can
silently specialise a dim, each graph's input dims are checked and the graph
is run on every input signature exploration saw. Ops that would skip a NaN
where torch returns it are rewritten to torch's semantics (see torch_nan). A
`topk(sorted=False)` is exported, and verified, sorted (see topk_order).
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import onnx
import torch

from ._torch_regions import FlatRegion
from .dims import name_dims
from .region_record import RegionRecord
from .onnx_ops import register as register_onnx_ops
from .runtime.spec import count_leaves
from .topk_order import SortedTopk, sort_topk
from .torch_nan import COMMON, repair as repair_nan
from .trace_warnings import frozen_values

__all__ = ["ExportError", "export_region", "torch_region_info", "verify_region"]


class ExportError(Exception):
    """A region could not be exported faithfully."""


def _dim_names(record: RegionRecord) -> dict[str, dict[int, str]]:
    axes = {}
    for k, dims in enumerate(name_dims(record)):
        varying = {a: d for a, d in enumerate(dims) if isinstance(d, str)}
        if varying:
            axes[f"i{k}"] = varying
    return axes


def torch_region_info(record: RegionRecord) -> dict:
    """Feeds and graph outputs for a region the torch backend runs as written."""
    n_out = sum(count_leaves(s) for s in record.out_specs)
    n_in = len(next(iter(record.examples.values())))
    return {"graph_inputs": list(range(n_in)),
            "graph_leaves": [i for i in range(n_out) if i not in record.passthrough]}


def export_region(model, fn, record: RegionRecord, path: str, origin: str) -> dict:
    """Write `path`; return the graph's feeds (flat input indices) and graph outputs."""
    n_out = sum(count_leaves(s) for s in record.out_specs)
    graph_leaves = [i for i in range(n_out) if i not in record.passthrough]
    if not graph_leaves:
        return {"graph_inputs": [], "graph_leaves": []}
    example = record.trace_example()
    wrapper = FlatRegion(model, fn, record.in_specs, graph_leaves).eval()
    input_names = [f"i{k}" for k in range(len(example))]
    output_names = [f"o{k}" for k in range(len(graph_leaves))]
    register_onnx_ops()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("always", torch.jit.TracerWarning)
        # torch's own nn.GRU/LSTM/RNN input checks compare sizes in Python while tracing; they are
        # shape checks on fixed dims, not decisions the trace would freeze.
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning, module=r"torch\.nn\.modules\.rnn")
        with torch.no_grad(), _without_fast_path():
            torch.onnx.export(wrapper, _fresh(example), path, dynamo=False, input_names=input_names,
                              output_names=output_names, dynamic_axes=_dim_names(record),
                              do_constant_folding=True)
    frozen = frozen_values([w for w in caught if not _attention_shape_check(w)], fn)
    if frozen:
        raise ExportError(f"region {record.name} ({origin}) turns a tensor into a Python value, which "
                          f"tracing would freeze into the graph: {frozen[0].message}")
    model = onnx.load(path)
    repaired = repair_nan(model, COMMON)
    unsorted = sort_topk(model.graph)
    if _reshape_allows_zero(model.graph) or repaired or unsorted:
        onnx.save(model, path)
    graph = model.graph
    feeds = [int(i.name[1:]) for i in graph.input]
    _check_dims(record, graph, origin)
    return {"graph_inputs": feeds, "graph_leaves": graph_leaves, "unsorted_topk": unsorted > 0}


@contextlib.contextmanager
def _without_fast_path():
    """nn.MultiheadAttention and nn.TransformerEncoder(Layer) in eval mode under no_grad take a fused
    inference kernel (`aten::_native_multi_head_attention`, `aten::_transformer_encoder_layer_fwd`)
    that ONNX has no form for; with the fast path off they trace as the ordinary ops they compute."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def _attention_shape_check(warning) -> bool:
    """A tracer warning from torch's own `F.multi_head_attention_forward`: its shape assertions
    (`if key.shape != value.shape: raise`) and its scale `1 / sqrt(float(head_dim))` read only dims
    the weights fix, not values the trace would freeze."""
    import inspect

    from torch.nn import functional

    if not str(warning.message).startswith(("Converting a tensor to a Python boolean",
                                            "Converting a tensor to a Python float")):
        return False
    lines, first = inspect.getsourcelines(functional.multi_head_attention_forward)
    return warning.filename == inspect.getsourcefile(functional) and first <= warning.lineno < first + len(lines)


def _reshape_allows_zero(graph) -> bool:
    """A Reshape to a shape computed at run time keeps a 0 as a size of 0, as torch does.

    ONNX reads a 0 in the shape as "copy this dim from the input" unless allowzero
    is set; torch never means that, and `h.reshape(batch, seq, d)` with seq = 0 then
    asked for the wrong shape. Constant shapes the exporter writes keep its meaning.
    """
    constants = {i.name for i in graph.initializer}
    constants |= {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    changed = False
    for node in graph.node:
        if node.op_type != "Reshape" or len(node.input) < 2 or node.input[1] in constants:
            continue
        flags = [a for a in node.attribute if a.name == "allowzero"]
        if flags and flags[0].i == 1:
            continue
        for flag in flags:
            node.attribute.remove(flag)
        node.attribute.append(onnx.helper.make_attribute("allowzero", 1))
        changed = True
    return changed


def _fresh(example: list) -> tuple:
    """Copies of a region's example inputs: a region may write its inputs in place (`acc.add_(y)`)."""
    return tuple(t.clone() for t in example)


def _check_dims(record: RegionRecord, graph, origin: str) -> None:
    dims = record.dims()
    for inp in graph.input:
        k = int(inp.name[1:])
        shape = inp.type.tensor_type.shape.dim
        for axis, (want, got) in enumerate(zip(dims[k], shape)):
            if want is None and not got.dim_param:
                raise ExportError(f"region {record.name} ({origin}): input {k} dim {axis} varies but the "
                                  f"exporter made it static ({got.dim_value})")
            if want is not None and got.dim_param:
                raise ExportError(f"region {record.name} ({origin}): input {k} dim {axis} is fixed at {want} "
                                  "but the exported graph made it symbolic")


_NONFINITE = ("NaN in the first element", "+inf in the first element", "-inf in the first element",
              "+inf in the first element and -inf in the last", "every element NaN", "every element +inf",
              "every element -inf")


def _poisoned(example: list) -> list[tuple[list, str]]:
    """The example with NaN and infinities written into its float inputs, each way of `_NONFINITE`
    (example, what was written, torch may refuse it)."""
    floats = [k for k, t in enumerate(example) if t.is_floating_point() and t.numel()]
    if not floats:
        return []
    out = []
    for how in _NONFINITE:
        poisoned = _fresh(example)
        for k in floats:
            t = poisoned[k]  # written through indices, not a flat view: an example may be strided (transposed)
            if how.startswith("every"):
                t.fill_(float(how.split()[2].replace("NaN", "nan")))
            else:
                t[(0,) * t.dim()] = float(how.split()[0].replace("NaN", "nan"))
                if how.endswith("last"):
                    t[tuple(n - 1 for n in t.shape)] = float("-inf")
        out.append((list(poisoned), f" on inputs with {how}: the compiler does not keep torch's (IEEE) results "
                                     "for NaN and infinities here", True))
    return out


def verify_region(model, fn, record: RegionRecord, run, export_info: dict, origin: str,
                  rtol: float = 1e-3, atol: float = 1e-4, nonfinite: bool = False) -> float:
    """Run the compiled region on every signature exploration saw, each with two sets of values where
    exploration saw two (a value frozen into the graph shows there); max abs error vs torch.

    With `nonfinite`, also on the traced example holding NaN and infinities (`_NONFINITE`), for a
    compiler that may simplify float math as if they did not exist (TVM folds `v - v` to 0)."""
    wrapper = FlatRegion(model, fn, record.in_specs, export_info["graph_leaves"]).eval()
    worst = 0.0
    runs = [(e, "", False) for e in record.examples.values()] + [
        (e, " on other input values of the same shapes: the graph froze a value computed from a tensor "
            "(an `int()` or `.item()` passed to an op that takes it as a constant, such as torch.roll's shifts)", False)
        for e in record.variants.values()]
    if nonfinite:
        runs += _poisoned(record.trace_example())
    for example, frozen, torch_may_refuse in runs:
        with torch.no_grad(), SortedTopk():
            try:
                expected = [t.detach().numpy() for t in wrapper(*_fresh(example))]
            except Exception:
                if not torch_may_refuse:
                    raise
                continue  # torch itself refuses these values (a NaN probability, an index from a NaN)
        got = run([example[i].numpy() for i in export_info["graph_inputs"]])
        for k, (e, g) in enumerate(zip(expected, got)):
            g = np.asarray(g)
            if e.shape != g.shape or e.dtype != g.dtype:
                raise ExportError(f"region {record.name} ({origin}): output {k} is {g.dtype}{list(g.shape)}, "
                                  f"torch gives {e.dtype}{list(e.shape)}{frozen}")
            if e.dtype.kind in "fc" and e.size:
                same = (e == g) | (np.isnan(e) & np.isnan(g))
                err = float(np.max(np.abs(np.where(same, 0, e).astype(np.float64) - np.where(same, 0, g))))
                if not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
                    raise ExportError(f"region {record.name} ({origin}): compiled output {k} differs from torch "
                                      f"by {err:.3g}{frozen}")
                worst = worst if torch_may_refuse else max(worst, err)  # δ: of values that can be compared
            elif e.size and not np.array_equal(e, g):
                raise ExportError(f"region {record.name} ({origin}): compiled output {k} differs from torch{frozen}")
    return worst
