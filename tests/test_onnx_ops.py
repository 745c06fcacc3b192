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


class IndexAdd(torch.nn.Module):
    def forward(self, acc, index, rows, cols):
        return (acc.index_add(0, index, rows), acc.clone().index_add_(1, index, cols),
                acc[0].index_add(0, index, rows[:, 0]))


def test_index_add_adds_every_row_of_a_repeated_index(tmp_path):
    # the exporter's own index_add scatters without a reduction: a repeated index kept one row (JetMoE adds
    # each token's top-2 expert outputs at its row)
    onnx_ops.register()
    gen = torch.Generator().manual_seed(0)
    acc, index = torch.randn(4, 6, generator=gen), torch.tensor([0, 1, 1, 3, 0, 0])
    rows, cols = torch.randn(6, 6, generator=gen), torch.randn(4, 6, generator=gen)
    path = str(tmp_path / "index_add.onnx")
    with torch.no_grad():
        torch.onnx.export(IndexAdd(), (acc, index, rows, cols), path, dynamo=False,
                          input_names=["acc", "index", "rows", "cols"],
                          dynamic_axes={"index": {0: "n"}, "rows": {0: "n"}, "cols": {1: "n"}})
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for n in (6, 3, 9):
        idx = torch.randint(0, 4, (n,), generator=gen)
        r, c = torch.randn(n, 6, generator=gen), torch.randn(4, n, generator=gen)
        got = session.run(None, {"acc": acc.numpy(), "index": idx.numpy(), "rows": r.numpy(), "cols": c.numpy()})
        for g, e in zip(got, IndexAdd()(acc, idx, r, c)):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5)
