"""Antialiased resizes (dycl/onnx_ops.py) exported to ONNX and run by onnxruntime match torch,
downsampling and upsampling, to sizes computed at run time; align_corners=True is refused."""
import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

from dycl import onnx_ops


class Resize(torch.nn.Module):
    def __init__(self, mode, align_corners):
        super().__init__()
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x, like):
        return F.interpolate(x, size=like.shape[-2:], mode=self.mode, antialias=True,
                             align_corners=self.align_corners)


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_antialiased_resize_matches_torch(tmp_path, mode):
    onnx_ops.register()
    model = Resize(mode, False)
    x = torch.randn(1, 3, 6, 5)
    path = str(tmp_path / "resize.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (x, torch.zeros(4, 3)), path, dynamo=False, input_names=["x", "like"],
                          dynamic_axes={"like": {0: "h", 1: "w"}})
    session = ort.InferenceSession(path)
    for h, w in [(4, 3), (2, 8), (9, 7), (6, 5), (1, 1)]:
        like = torch.zeros(h, w)
        got = session.run(None, {"x": x.numpy(), "like": like.numpy()})[0]
        expected = model(x, like).numpy()
        assert got.shape == expected.shape
        assert np.abs(got - expected).max() <= 1e-5, (h, w)


def test_antialiased_resize_with_align_corners_is_refused(tmp_path):
    onnx_ops.register()  # onnxruntime's align_corners differs from torch's for antialiased kernels
    with pytest.raises(Exception, match="antialiased cubic resize.*align_corners=True"), torch.no_grad():
        torch.onnx.export(Resize("bicubic", True), (torch.randn(1, 3, 6, 5), torch.zeros(4, 3)),
                          str(tmp_path / "resize.onnx"), dynamo=False)
