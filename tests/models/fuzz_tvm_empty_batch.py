"""Found by scripts/fuzz.py (reduced): reductions over an empty batch on TVM.

With 0 rows, `(g < 0.0).all()` is True and `torch.any(y >= -0.5)` False in
torch. TVM's ReduceSum (which both become) left its output uninitialised
over no elements, so the package took another arm; and a fresh empty numpy
array has strides (0, 0), which TVM refused as an argument.
"""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}}


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)

    def forward(self, x):
        g = torch.tanh(x)
        if torch.any(x >= -0.5):
            return self.layer(g).sum(0), 1
        elif not ((g < 0.0).all()):
            return g.sum(0), 2
        return self.layer(x).abs().sum(0), 3


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(2, 4, generator=torch.Generator().manual_seed(0)),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.rand(2, 4, generator=gen) * 2 - (3.0 if k % 2 else 0.0),) for k in range(n)]
