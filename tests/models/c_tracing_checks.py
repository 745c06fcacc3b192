"""Library code's tests for tracing and export (`torch.jit.is_tracing()`,
`torch.onnx.is_in_onnx_export()`): False when the model runs eagerly, so folded to the eager branch;
inside a region's export they would say True. A tuple input is unpacked in the host."""
import torch
from torch import nn


class Traced(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)

    def forward(self, x, pair):
        u, v = pair
        h = self.a(x) + u
        if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
            h = h * 100
        h = h + v
        if h.sum().item() > 0:
            return h * 2
        return h


def get_model():
    torch.manual_seed(0)
    return Traced().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 2, generator=gen), (torch.ones(1, 2), 4 * torch.randn(1, 2, generator=gen)))
            for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
