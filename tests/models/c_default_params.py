"""forward's trailing parameters with constant defaults, left out of get_inputs(): folded at their
defaults (`if deep:` is decided at conversion), and the package takes `x` alone."""
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)

    def forward(self, x, scale=2.0, deep=False, mask=None):
        h = self.a(x) * scale
        if deep:
            h = self.a(h)
        if mask is not None:
            h = h * mask
        if h.sum().item() > 0:
            return h * 2
        return h


def get_model():
    torch.manual_seed(0)
    return Scaled().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 2, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
