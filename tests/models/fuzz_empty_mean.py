"""Found by scripts/fuzz.py (shrunk): a decision on the mean of a batch that may be empty.

torch's mean of a zero-size tensor is NaN, so `h.mean().item() > 0.0` is
False for an empty batch; onnxruntime's ReduceMean gave 0. The conversion
failed (exploration runs dynamic dims at 0) with "compiled output differs
from torch by nan".
"""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}}


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = self.layers[0](x)
        if h.mean().item() > 0.0:
            h = self.layers[0](h)
        return (self.head(h), h.mean(dim=0))


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(1, 4, generator=torch.Generator().manual_seed(0)),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1, 1, 3)
    return [(torch.randn(rows[k % 3], 4, generator=gen) * scales[k % 4] + shifts[k % 5],) for k in range(n)]
