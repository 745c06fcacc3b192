"""ONNX forms for aten ops the TorchScript exporter has none for.

`F.interpolate(..., antialias=True)` (timm resamples position embeddings with it) becomes
`aten::_upsample_bicubic2d_aa` / `_upsample_bilinear2d_aa`, which opset 20 cannot export. ONNX's
`Resize` has an `antialias` attribute since opset 18; with torch's cubic coefficient (-0.5 for the
antialiased kernel) and weights renormalised inside the image (`exclude_outside`), onnxruntime
computes what torch does (tests/test_onnx_ops.py compares them); with `align_corners=True` it does
not, and the export is refused.

`index_add` is exported as a `ScatterElements` without a reduction, which keeps one row where an
index repeats instead of adding them all (JetMoE adds each token's outputs from its top-2 experts,
torch only warns); it becomes `ScatterElements` with `reduction="add"` (opset 16 on).

Registered once, before the first export.
"""
from __future__ import annotations

import torch
from torch.onnx import register_custom_op_symbolic
from torch.onnx import symbolic_helper as sh

__all__ = ["register"]

_OPSET = 18
_registered = False


def _sizes(g, input, output_size):
    """The Resize `sizes` input: the batch and channel dims of `input`, then `output_size`."""
    shape = g.op("Shape", input)
    batch_channels = g.op("Slice", shape, g.op("Constant", value_t=torch.tensor([0])),
                          g.op("Constant", value_t=torch.tensor([2])))
    size = sh._maybe_get_const(output_size, "is")
    if not sh._is_value(size):
        spatial = g.op("Constant", value_t=torch.tensor(list(size), dtype=torch.int64))
    elif sh._is_packed_list(output_size):  # sizes computed at run time, one scalar each
        one = g.op("Constant", value_t=torch.tensor([1]))
        spatial = g.op("Concat", *[g.op("Reshape", g.op("Cast", s, to_i=7), one)
                                   for s in sh._unpack_list(output_size)], axis_i=0)
    else:
        spatial = g.op("Cast", output_size, to_i=7)
    return g.op("Concat", batch_channels, spatial, axis_i=0)


def _antialiased(mode: str, cubic_coeff: float):
    def symbolic(g, input, output_size, align_corners, scales_h=None, scales_w=None):
        for scale in (scales_h, scales_w):
            if scale is not None and not sh._is_none(scale):
                return sh._unimplemented(f"antialiased {mode} resize", "a scale factor instead of a size", input)
        corners = sh._maybe_get_const(align_corners, "b")
        if sh._is_value(corners) or corners:  # onnxruntime's antialiased align_corners differs from torch's
            return sh._unimplemented(f"antialiased {mode} resize", "align_corners=True", input)
        empty = g.op("Constant", value_t=torch.tensor([], dtype=torch.float32))
        return g.op("Resize", input, empty, empty, _sizes(g, input, output_size), antialias_i=1, mode_s=mode,
                    cubic_coeff_a_f=cubic_coeff, exclude_outside_i=1, coordinate_transformation_mode_s="half_pixel")

    return symbolic


def _index_add(g, self, dim, index, other, alpha=None):
    """`self.index_add(dim, index, other)`: `other`'s rows scattered and added at `index` along `dim`."""
    if alpha is not None and not sh._is_none(alpha) and sh._scalar(sh._maybe_get_scalar(alpha)) != 1:
        return sh._unimplemented("index_add", "alpha != 1", self)
    dim = sh._maybe_get_const(dim, "i")
    rank = sh._get_tensor_rank(self)
    if sh._is_value(dim) or not rank or sh._get_tensor_rank(other) != rank:
        return sh._unimplemented("index_add", "a dim known only at run time, or ranks unknown or unequal", self)
    dim %= rank
    along = [1] * rank
    along[dim] = -1  # the index along `dim`, broadcast over `other`'s other dims
    index = g.op("Reshape", index, g.op("Constant", value_t=torch.tensor(along)))
    index = g.op("Expand", index, g.op("Shape", other))
    return g.op("ScatterElements", self, index, other, axis_i=dim, reduction_s="add")


def register() -> None:
    global _registered
    if _registered:
        return
    register_custom_op_symbolic("aten::_upsample_bicubic2d_aa", _antialiased("cubic", -0.5), _OPSET)
    register_custom_op_symbolic("aten::_upsample_bilinear2d_aa", _antialiased("linear", -0.75), _OPSET)
    register_custom_op_symbolic("aten::index_add", _index_add, _OPSET)
    _registered = True
